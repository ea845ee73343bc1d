// The audit (reference §6.4, §7): audit::observed_release reads x-hourglass-id, -due and -run from
// a released message, and gives nothing for a message that does not carry all three correctly.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <string>

#include "audit/audit_consumer.hpp"

namespace hourglass::audit {
namespace {

using Microseconds = std::chrono::microseconds;
const std::chrono::sys_time<Microseconds> kReceived{Microseconds{1795339800250123}};

Message released(FieldTable headers) {
    Message message;
    message.exchange = "hourglass.delay.released";
    message.routing_key = "orders.created";
    message.body = "payload";
    message.properties.headers = std::move(headers);
    return message;
}

FieldTable good_headers() {
    return {{"x-hourglass-id", std::string("job-1")},
            {"x-hourglass-due", std::string("2026-11-22T09:30:00.250Z")},
            {"x-hourglass-run", std::int64_t{3}}};
}

TEST(ObservedRelease, reads_id_due_and_run_and_keeps_the_receive_time) {
    const auto release = observed_release(released(good_headers()), kReceived);
    ASSERT_TRUE(release.has_value());
    EXPECT_EQ(release->id, "job-1");
    EXPECT_EQ(release->run, 3);
    EXPECT_EQ(to_epoch_ms(release->due), 1795339800250);
    EXPECT_EQ(release->released_at, kReceived);
}

TEST(ObservedRelease, other_headers_and_x_death_do_not_matter) {
    auto headers = good_headers();
    headers.insert(headers.begin(), {"x-death", FieldArray{FieldTable{{"count", std::int64_t{1}}}}});
    headers.emplace_back("custom", std::string("value"));
    const auto release = observed_release(released(headers), kReceived);
    ASSERT_TRUE(release.has_value());
    EXPECT_EQ(release->id, "job-1");
    EXPECT_EQ(release->run, 3);
}

TEST(ObservedRelease, run_of_any_integer_type_is_read) {
    for (const FieldValue& run : {FieldValue{std::int8_t{2}}, FieldValue{std::uint8_t{2}},
                                  FieldValue{std::int16_t{2}}, FieldValue{std::uint16_t{2}},
                                  FieldValue{std::int32_t{2}}, FieldValue{std::uint32_t{2}},
                                  FieldValue{std::int64_t{2}}, FieldValue{std::uint64_t{2}}}) {
        auto headers = good_headers();
        headers[2].second = run;
        const auto release = observed_release(released(headers), kReceived);
        ASSERT_TRUE(release.has_value()) << run.value.index();
        EXPECT_EQ(release->run, 2);
    }
}

TEST(ObservedRelease, due_with_an_offset_is_read_as_utc) {
    auto headers = good_headers();
    headers[1].second = std::string("2026-11-22T10:30:00.250+01:00");
    const auto release = observed_release(released(headers), kReceived);
    ASSERT_TRUE(release.has_value());
    EXPECT_EQ(to_epoch_ms(release->due), 1795339800250);
}

TEST(ObservedRelease, first_occurrence_of_a_repeated_header_wins) {
    auto headers = good_headers();
    headers.emplace_back("x-hourglass-id", std::string("job-2"));
    headers.emplace_back("x-hourglass-run", std::int64_t{9});
    const auto release = observed_release(released(headers), kReceived);
    ASSERT_TRUE(release.has_value());
    EXPECT_EQ(release->id, "job-1");
    EXPECT_EQ(release->run, 3);
}

TEST(ObservedRelease, message_without_headers_gives_nothing) {
    Message message;
    EXPECT_EQ(observed_release(message, kReceived), std::nullopt);
    EXPECT_EQ(observed_release(released({}), kReceived), std::nullopt);
}

TEST(ObservedRelease, any_missing_header_gives_nothing) {
    for (std::size_t missing = 0; missing < 3; ++missing) {
        auto headers = good_headers();
        SCOPED_TRACE(headers[missing].first);
        headers.erase(headers.begin() + static_cast<std::ptrdiff_t>(missing));
        EXPECT_EQ(observed_release(released(headers), kReceived), std::nullopt);
    }
}

TEST(ObservedRelease, id_that_is_not_a_string_gives_nothing) {
    for (const FieldValue& id : {FieldValue{std::int32_t{1}}, FieldValue{ByteArray{"job-1"}},
                                 FieldValue{Void{}}}) {
        auto headers = good_headers();
        headers[0].second = id;
        EXPECT_EQ(observed_release(released(headers), kReceived), std::nullopt) << id.value.index();
    }
}

TEST(ObservedRelease, due_that_is_not_an_rfc3339_string_gives_nothing) {
    for (const FieldValue& due :
         {FieldValue{std::string("2026-11-22T09:30:00.250")}, FieldValue{std::string("soon")},
          FieldValue{std::string("")}, FieldValue{Timestamp{1795339800}},
          FieldValue{std::int64_t{1795339800250}}, FieldValue{ByteArray{"2026-11-22T09:30:00Z"}}}) {
        auto headers = good_headers();
        headers[1].second = due;
        EXPECT_EQ(observed_release(released(headers), kReceived), std::nullopt) << due.value.index();
    }
}

TEST(ObservedRelease, run_that_is_not_an_integer_gives_nothing) {
    for (const FieldValue& run : {FieldValue{std::string("3")}, FieldValue{true}, FieldValue{3.0},
                                  FieldValue{3.0f}, FieldValue{Void{}}, FieldValue{Timestamp{3}},
                                  FieldValue{Decimal{0, 3}}}) {
        auto headers = good_headers();
        headers[2].second = run;
        EXPECT_EQ(observed_release(released(headers), kReceived), std::nullopt) << run.value.index();
    }
}

}  // namespace
}  // namespace hourglass::audit
