# `make install` layout and the Debian package (CPack): scripts/package builds it.
#   /usr/bin/hourglass                           the binary
#   /usr/lib/systemd/system/hourglass.service    a hardened unit (DynamicUser, ProtectSystem=strict)
#   /etc/hourglass/hourglass.toml                settings (a conffile)
#   /etc/hourglass/hourglass.env                 secrets, mode 0600 (a conffile)
#   /usr/share/hourglass/migrations/             the SQL migrations (also embedded in the binary)
#   /usr/share/doc/hourglass/                    README, docs, LICENSE
install(TARGETS hourglass)
install(DIRECTORY migrations/ DESTINATION share/hourglass/migrations)
install(FILES packaging/hourglass.service DESTINATION lib/systemd/system)
install(FILES packaging/hourglass.toml DESTINATION /etc/hourglass)
install(FILES packaging/hourglass.env DESTINATION /etc/hourglass PERMISSIONS OWNER_READ OWNER_WRITE)
install(FILES README.md LICENSE CONTRIBUTING.md DESTINATION share/doc/hourglass)
install(DIRECTORY docs/ DESTINATION share/doc/hourglass/docs)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hourglass)
set(CPACK_PACKAGE_VENDOR "hourglass")
set(CPACK_PACKAGE_CONTACT "hourglass maintainers <hourglass@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "durable job scheduler for RabbitMQ (x-delay, x-schedule-at, x-cron)")
set(CPACK_PACKAGE_DESCRIPTION
    "hourglass stores scheduled AMQP messages in PostgreSQL and has RabbitMQ release them to the "
    "exchange hourglass.out at their due time, with body and properties untouched.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/hourglass-scheduler/hourglass")
# The shared libraries' packages, found by dpkg-shlibdeps (librabbitmq4, libpqxx-6.4, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "tzdata, ca-certificates")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA "${PROJECT_SOURCE_DIR}/packaging/conffiles")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
