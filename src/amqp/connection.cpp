#include "amqp/connection.hpp"

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "amqp/field_table.hpp"
#include "amqp/rabbitmq_c.hpp"
#include "common/mask.hpp"

namespace hourglass::amqp {

namespace {

using detail::check;
using detail::check_reply;
using detail::reply_text;
using detail::to_timeval;

// A TLS socket that verifies the broker's certificate chain and host name (always: there is
// no setting to turn verification off), trusting `ca_cert_file` or else the system CA bundle,
// with TLS 1.2 or later and an optional client certificate.
amqp_socket_t* open_tls_socket(amqp_connection_state_t state, const ConnectionOptions& options) {
    amqp_socket_t* socket = amqp_ssl_socket_new(state);
    if (socket == nullptr) throw ConnectionError("cannot create TLS socket (amqps://)");
    std::string ca_file = options.ca_cert_file;
    if (ca_file.empty()) {
        // rabbitmq-c loads no default trust store: use OpenSSL's (SSL_CERT_FILE overrides it).
        const char* from_env = std::getenv(X509_get_default_cert_file_env());
        ca_file = from_env != nullptr && *from_env != '\0' ? from_env : X509_get_default_cert_file();
    }
    const int ca_status = amqp_ssl_socket_set_cacert(socket, ca_file.c_str());
    if (ca_status != AMQP_STATUS_OK) {
        throw ConnectionError("cannot load the AMQP CA certificate file '" + ca_file +
                              "': " + amqp_error_string2(ca_status));
    }
    if (!options.client_cert_file.empty()) {
        const int key_status = amqp_ssl_socket_set_key(socket, options.client_cert_file.c_str(),
                                                       options.client_key_file.c_str());
        if (key_status != AMQP_STATUS_OK) {
            throw ConnectionError("cannot load the AMQP client certificate '" +
                                  options.client_cert_file + "' with key '" +
                                  options.client_key_file + "': " + amqp_error_string2(key_status));
        }
    }
    check(amqp_ssl_socket_set_ssl_versions(socket, AMQP_TLSv1_2, AMQP_TLSvLATEST),
          "setting the TLS versions (1.2 or later)");
    amqp_ssl_socket_set_verify_peer(socket, 1);      // returns nothing to check
    amqp_ssl_socket_set_verify_hostname(socket, 1);  // returns nothing to check
    return socket;
}

Message read_content(amqp_connection_state_t state, std::uint16_t channel, const char* what) {
    amqp_message_t content{};
    check_reply(state, amqp_read_message(state, channel, &content, 0), what, channel);
    Message message;
    auto decoded = decode_properties(content.properties);
    message.properties = std::move(decoded.properties);
    message.body = to_string(content.body);
    amqp_destroy_message(&content);
    return message;
}

}  // namespace

void Connection::StateDeleter::operator()(amqp_connection_state_t_* state) const noexcept {
    // Best effort: the broker may already be gone.
    if (close) amqp_connection_close(state, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(state);
}

std::vector<std::string> split_urls(const std::string& urls) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while ((at = urls.find_first_not_of(" \t\n", at)) != std::string::npos) {
        const auto end = urls.find_first_of(" \t\n", at);
        out.push_back(urls.substr(at, end == std::string::npos ? std::string::npos : end - at));
        at = end;
    }
    // A list only if every part is a URL: a password with a space in it (invalid, but typed by
    // people) keeps its URL whole, so it is still masked and reported as one.
    const bool list = out.size() > 1 && std::all_of(out.begin(), out.end(), [](const auto& part) {
        return part.starts_with("amqp://") || part.starts_with("amqps://");
    });
    if (!list) return {urls};
    return out;
}

Connection::Connection(const ConnectionOptions& options) {
    const auto urls = split_urls(options.url);
    std::string errors;
    for (const auto& url : urls) {
        try {
            open(url, options);
            counted_open_ = metrics::ScopedGaugeIncrement(options.open_connections);
            return;
        } catch (const ConnectionError& error) {
            state_.reset();
            if (urls.size() == 1) throw;
            errors += (errors.empty() ? "" : "; ") + std::string(error.what());
        }
    }
    throw ConnectionError("cannot connect to any of the " + std::to_string(urls.size()) +
                          " RabbitMQ URLs: " + errors);
}

void Connection::open(const std::string& one_url, const ConnectionOptions& options) {
    std::string url = one_url;  // amqp_parse_url writes into its buffer
    amqp_connection_info info{};
    amqp_default_connection_info(&info);
    if (amqp_parse_url(url.data(), &info) != AMQP_STATUS_OK) {
        throw ConnectionError("invalid AMQP URL '" + mask_url_password(one_url) +
                              "' (expected amqp://user:password@host:port/vhost)");
    }
    // Settings that cannot work are refused before anything is created.
    if (!info.ssl && (!options.client_cert_file.empty() || !options.client_key_file.empty() ||
                      !options.ca_cert_file.empty())) {
        // A CA or client certificate with a plain amqp:// URL is almost certainly a mistake
        // that would silently send the credentials in clear text.
        throw ConnectionError("a TLS setting (--amqp-ca-cert, --amqp-cert or --amqp-key) "
                              "is set but the AMQP URL is amqp://, not amqps://");
    }
    if (options.client_cert_file.empty() != options.client_key_file.empty()) {
        throw ConnectionError("an AMQP client certificate needs both --amqp-cert and --amqp-key");
    }
    state_.reset(amqp_new_connection());
    if (!state_) throw std::bad_alloc{};
    amqp_connection_state_t state = state_.get();

    amqp_socket_t* socket = nullptr;
    if (info.ssl) {
        socket = open_tls_socket(state, options);
    } else {
        socket = amqp_tcp_socket_new(state);
        if (socket == nullptr) throw ConnectionError("cannot create TCP socket");
    }
    const std::string where = std::string(info.host) + ":" + std::to_string(info.port);
    timeval connect_timeout = to_timeval(options.connect_timeout);
    const int status = amqp_socket_open_noblock(socket, info.host, info.port, &connect_timeout);
    if (status != AMQP_STATUS_OK) {
        std::string hint;
        if (info.ssl && (status == AMQP_STATUS_SSL_ERROR ||
                         status == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED ||
                         status == AMQP_STATUS_SSL_PEER_VERIFY_FAILED ||
                         status == AMQP_STATUS_SSL_CONNECTION_FAILED)) {
            hint = " (TLS: is the broker's certificate signed by the CA in " +
                   (options.ca_cert_file.empty() ? std::string("the system CA bundle")
                                                 : "'" + options.ca_cert_file + "'") +
                   ", and does it name the host '" + info.host + "'?)";
        }
        throw ConnectionError("cannot connect to RabbitMQ at " + where + (info.ssl ? " (amqps)" : "") +
                              ": " + amqp_error_string2(status) + hint);
    }
    check(amqp_set_handshake_timeout(state, &connect_timeout), "setting handshake timeout");
    timeval rpc_timeout = to_timeval(detail::kRpcTimeout);
    check(amqp_set_rpc_timeout(state, &rpc_timeout), "setting RPC timeout");

    amqp_table_entry_t client_property{};
    client_property.key = amqp_cstring_bytes("connection_name");
    client_property.value.kind = AMQP_FIELD_KIND_UTF8;
    client_property.value.value.bytes = to_bytes(options.connection_name);
    amqp_table_t client_properties{1, &client_property};
    const auto login = amqp_login_with_properties(
        state, info.vhost, 0, options.frame_max, static_cast<int>(options.heartbeat.count()),
        &client_properties, AMQP_SASL_METHOD_PLAIN, info.user, info.password);
    if (login.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
        login.library_error == AMQP_STATUS_SOCKET_CLOSED) {
        throw ConnectionError("RabbitMQ at " + where + " refused the login of user '" +
                              info.user + "' (wrong credentials or vhost '" + info.vhost + "')");
    }
    check_reply(state, login, "logging in to RabbitMQ");
    user_ = info.user;
}

Connection::~Connection() noexcept {
    // A lost connection (a paused or unreachable broker) is not closed politely: that would
    // wait up to the RPC timeout for a reply that does not come.
    state_.get_deleter().close = !lost_;
}

void Connection::mark_open(std::uint16_t channel) {
    if (open_channels_.size() <= channel) open_channels_.resize(channel + 1u, false);
    open_channels_[channel] = true;
}

void Connection::mark_closed(std::uint16_t channel) noexcept {
    if (channel < open_channels_.size()) open_channels_[channel] = false;
}

bool Connection::is_open(std::uint16_t channel) const noexcept {
    return channel < open_channels_.size() && open_channels_[channel];
}

std::optional<Event> Connection::next_event(std::chrono::microseconds timeout) {
    return noting_closes([&] { return read_event(timeout); });
}

std::optional<Event> Connection::read_event(std::chrono::microseconds timeout) {
    amqp_connection_state_t state = state_.get();
    amqp_maybe_release_buffers(state);
    // rabbitmq-c waits in whole milliseconds, rounded down: a wait shorter than 1 ms returns at
    // once, so a caller waiting in a loop spins (measured: the loader's publisher, which waits
    // at most 1 ms for confirms, made 20,000 poll+recv calls a second at 1,000 jobs/s). So wait
    // for the socket here, to the microsecond, and let rabbitmq-c read what arrived (or, when
    // nothing did, only do its heartbeat bookkeeping, without waiting).
    if (timeout > std::chrono::microseconds{0} && !has_buffered_data()) {
        timeout = wait_for_socket(timeout);
    }
    amqp_frame_t frame{};
    timeval wait = to_timeval(timeout);
    const int status = amqp_simple_wait_frame_noblock(state, &frame, &wait);
    if (status == AMQP_STATUS_TIMEOUT) return std::nullopt;
    check(status, "reading from RabbitMQ");
    if (frame.frame_type != AMQP_FRAME_METHOD) return std::nullopt;
    return event_of(frame);
}

std::chrono::microseconds Connection::wait_for_socket(std::chrono::microseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd socket{socket_fd(), POLLIN, 0};
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    const timespec wait_for{static_cast<time_t>(seconds.count()),
                            static_cast<long>((timeout - seconds).count() * 1000)};
    const int ready = ::ppoll(&socket, 1, &wait_for, nullptr);
    if (ready == 0) return std::chrono::microseconds{0};
    return std::max(std::chrono::microseconds{0},
                    std::chrono::duration_cast<std::chrono::microseconds>(
                        deadline - std::chrono::steady_clock::now()));
}

std::optional<Event> Connection::event_of(const amqp_frame_t_& frame) {
    amqp_connection_state_t state = state_.get();
    switch (frame.payload.method.id) {
        case AMQP_BASIC_DELIVER_METHOD: {
            const auto* deliver = static_cast<amqp_basic_deliver_t*>(frame.payload.method.decoded);
            Delivery delivery;
            delivery.channel = frame.channel;
            delivery.delivery_tag = deliver->delivery_tag;
            delivery.redelivered = deliver->redelivered != 0;
            std::string exchange = to_string(deliver->exchange);
            std::string routing_key = to_string(deliver->routing_key);
            delivery.message = read_content(state, frame.channel, "reading a delivery");
            delivery.message.exchange = std::move(exchange);
            delivery.message.routing_key = std::move(routing_key);
            return delivery;
        }
        case AMQP_BASIC_ACK_METHOD: {
            const auto* ack = static_cast<amqp_basic_ack_t*>(frame.payload.method.decoded);
            return Confirm{frame.channel, ack->delivery_tag, ack->multiple != 0, true};
        }
        case AMQP_BASIC_NACK_METHOD: {
            const auto* nack = static_cast<amqp_basic_nack_t*>(frame.payload.method.decoded);
            return Confirm{frame.channel, nack->delivery_tag, nack->multiple != 0, false};
        }
        case AMQP_BASIC_RETURN_METHOD: {
            const auto* ret = static_cast<amqp_basic_return_t*>(frame.payload.method.decoded);
            Returned returned;
            returned.channel = frame.channel;
            returned.reply_code = ret->reply_code;
            std::string exchange = to_string(ret->exchange);
            std::string routing_key = to_string(ret->routing_key);
            returned.message = read_content(state, frame.channel, "reading a returned message");
            returned.message.exchange = std::move(exchange);
            returned.message.routing_key = std::move(routing_key);
            return returned;
        }
        case AMQP_CHANNEL_CLOSE_METHOD: {
            const auto* close = static_cast<amqp_channel_close_t*>(frame.payload.method.decoded);
            const std::uint16_t code = close->reply_code;
            const std::string text = reply_text(close->reply_text);
            amqp_channel_close_ok_t close_ok{};
            check(amqp_send_method(state, frame.channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok),
                  "acknowledging channel close");
            throw ChannelError("channel " + std::to_string(frame.channel) +
                                   " closed by broker: " + std::to_string(code) + " " + text,
                               code, frame.channel);
        }
        case AMQP_CONNECTION_CLOSE_METHOD: {
            const auto* close = static_cast<amqp_connection_close_t*>(frame.payload.method.decoded);
            const std::string text =
                std::to_string(close->reply_code) + " " + reply_text(close->reply_text);
            amqp_connection_close_ok_t close_ok{};
            amqp_send_method(state, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &close_ok);
            throw ConnectionError("connection closed by broker: " + text,
                                  reply_text(close->reply_text));
        }
        case AMQP_BASIC_CANCEL_METHOD:
            // The broker cancelled a consumer (its queue was deleted): treat as a channel loss.
            throw ChannelError("consumer cancelled by broker", 0, frame.channel);
        default: return std::nullopt;
    }
}

std::size_t Connection::frame_max() const noexcept {
    return static_cast<std::size_t>(amqp_get_frame_max(state_.get()));
}

int Connection::socket_fd() const noexcept { return amqp_get_sockfd(state_.get()); }

void Connection::hold_sends(bool hold) noexcept {
    // Only an optimisation: where it fails, each publish leaves on its own as before.
    const int value = hold ? 1 : 0;
    (void)::setsockopt(socket_fd(), IPPROTO_TCP, TCP_CORK, &value, sizeof value);
}

bool Connection::has_buffered_data() const noexcept {
    return amqp_frames_enqueued(state_.get()) || amqp_data_in_buffer(state_.get());
}

std::string mask_url_password(const std::string& url) {
    const auto urls = split_urls(url);
    if (urls.size() == 1) return mask_secrets(url);
    std::string out;
    for (const auto& one : urls) out += (out.empty() ? "" : " ") + mask_secrets(one);
    return out;
}

}  // namespace hourglass::amqp
