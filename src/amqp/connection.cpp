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
#include "common/mask.hpp"

namespace hourglass::amqp {

namespace {

// The one place a rabbitmq-c status code becomes an exception.
void check(int status, const char* what) {
    if (status == AMQP_STATUS_OK) return;
    throw ConnectionError(std::string(what) + ": " + amqp_error_string2(status));
}

std::string reply_text(amqp_bytes_t text) { return to_string(text); }

// The one place an RPC reply becomes an exception. A server-side close is acknowledged first
// so the connection (for a channel close) stays usable.
void check_reply(amqp_connection_state_t state, const amqp_rpc_reply_t& reply, const char* what,
                 std::uint16_t channel = 0) {
    switch (reply.reply_type) {
        case AMQP_RESPONSE_NORMAL: return;
        case AMQP_RESPONSE_NONE: throw ConnectionError(std::string(what) + ": missing RPC reply");
        case AMQP_RESPONSE_LIBRARY_EXCEPTION:
            throw ConnectionError(std::string(what) + ": " +
                                  amqp_error_string2(reply.library_error));
        case AMQP_RESPONSE_SERVER_EXCEPTION: break;
    }
    if (reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
        const auto* close = static_cast<const amqp_channel_close_t*>(reply.reply.decoded);
        const std::uint16_t code = close->reply_code;
        const std::string text = reply_text(close->reply_text);
        amqp_channel_close_ok_t close_ok{};
        amqp_send_method(state, channel, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok);
        throw ChannelError(std::string(what) + ": channel closed by broker: " +
                               std::to_string(code) + " " + text +
                               (code == AMQP_ACCESS_REFUSED
                                    ? " (the RabbitMQ user lacks a permission: see docs/operating.md "
                                      "\"Permissions\")"
                                    : ""),
                           code, channel);
    }
    if (reply.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
        const auto* close = static_cast<const amqp_connection_close_t*>(reply.reply.decoded);
        amqp_connection_close_ok_t close_ok{};
        amqp_send_method(state, 0, AMQP_CONNECTION_CLOSE_OK_METHOD, &close_ok);
        throw ConnectionError(std::string(what) + ": connection closed by broker: " +
                                  std::to_string(close->reply_code) + " " +
                                  reply_text(close->reply_text),
                              reply_text(close->reply_text));
    }
    throw ConnectionError(std::string(what) + ": unexpected server reply");
}

timeval to_timeval(std::chrono::microseconds timeout) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    return timeval{static_cast<time_t>(seconds.count()),
                   static_cast<suseconds_t>((timeout - seconds).count())};
}

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
    amqp_connection_close(state, AMQP_REPLY_SUCCESS);
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
    timeval rpc_timeout = to_timeval(std::chrono::seconds{30});
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
}

Connection::~Connection() noexcept = default;
Connection::Connection(Connection&&) noexcept = default;
Connection& Connection::operator=(Connection&&) noexcept = default;

void Connection::open_channel(std::uint16_t channel) {
    amqp_channel_open(state_.get(), channel);
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), "opening channel", channel);
    if (publish_sequence_.size() <= channel) {
        publish_sequence_.resize(channel + 1u, 0);
        confirm_channels_.resize(channel + 1u, false);
    }
    publish_sequence_[channel] = 0;
    confirm_channels_[channel] = false;
}

void Connection::close_channel(std::uint16_t channel) noexcept {
    amqp_channel_close(state_.get(), channel, AMQP_REPLY_SUCCESS);
}

void Connection::declare_exchange(std::uint16_t channel, const std::string& name,
                                  const std::string& type, const Arguments& arguments,
                                  Reply reply) {
    OutgoingTables tables;
    const auto what = "declaring exchange " + name;
    if (reply == Reply::none) {
        amqp_exchange_declare_t method{};
        method.exchange = to_bytes(name);
        method.type = to_bytes(type);
        method.durable = 1;
        method.nowait = 1;
        method.arguments = tables.table(arguments);
        check(amqp_send_method(state_.get(), channel, AMQP_EXCHANGE_DECLARE_METHOD, &method),
              what.c_str());
        return;
    }
    amqp_exchange_declare(state_.get(), channel, to_bytes(name), to_bytes(type), /*passive=*/0,
                          /*durable=*/1, /*auto_delete=*/0, /*internal=*/0,
                          tables.table(arguments));
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), what.c_str(), channel);
}

std::string Connection::declare_queue(std::uint16_t channel, const std::string& name,
                                      const Arguments& arguments, bool exclusive) {
    OutgoingTables tables;
    const auto* ok = amqp_queue_declare(state_.get(), channel, to_bytes(name), /*passive=*/0,
                                        /*durable=*/exclusive ? 0 : 1, exclusive ? 1 : 0,
                                        /*auto_delete=*/exclusive ? 1 : 0, tables.table(arguments));
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), ("declaring queue " + name).c_str(), channel);
    return to_string(ok->queue);
}

void Connection::declare_queue_no_wait(std::uint16_t channel, const std::string& name,
                                       const Arguments& arguments) {
    OutgoingTables tables;
    amqp_queue_declare_t method{};
    method.queue = to_bytes(name);
    method.durable = 1;
    method.nowait = 1;
    method.arguments = tables.table(arguments);
    check(amqp_send_method(state_.get(), channel, AMQP_QUEUE_DECLARE_METHOD, &method),
          ("declaring queue " + name).c_str());
}

void Connection::bind_queue(std::uint16_t channel, const std::string& queue,
                            const std::string& exchange, const std::string& binding_key,
                            const Arguments& arguments, Reply reply) {
    OutgoingTables tables;
    const auto what = "binding queue " + queue + " to " + exchange;
    if (reply == Reply::none) {
        amqp_queue_bind_t method{};
        method.queue = to_bytes(queue);
        method.exchange = to_bytes(exchange);
        method.routing_key = to_bytes(binding_key);
        method.nowait = 1;
        method.arguments = tables.table(arguments);
        check(amqp_send_method(state_.get(), channel, AMQP_QUEUE_BIND_METHOD, &method),
              what.c_str());
        return;
    }
    amqp_queue_bind(state_.get(), channel, to_bytes(queue), to_bytes(exchange),
                    to_bytes(binding_key), tables.table(arguments));
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), what.c_str(), channel);
}

void Connection::bind_exchange(std::uint16_t channel, const std::string& destination,
                               const std::string& source, const std::string& binding_key) {
    amqp_exchange_bind(state_.get(), channel, to_bytes(destination), to_bytes(source),
                       to_bytes(binding_key), amqp_empty_table);
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), ("binding exchange " + destination + " to " + source).c_str(), channel);
}

void Connection::delete_queue(std::uint16_t channel, const std::string& name, Reply reply) {
    const auto what = "deleting queue " + name;
    if (reply == Reply::none) {
        amqp_queue_delete_t method{};
        method.queue = to_bytes(name);
        method.nowait = 1;
        check(amqp_send_method(state_.get(), channel, AMQP_QUEUE_DELETE_METHOD, &method),
              what.c_str());
        return;
    }
    amqp_queue_delete(state_.get(), channel, to_bytes(name), 0, 0);
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), what.c_str(), channel);
}

void Connection::delete_exchange(std::uint16_t channel, const std::string& name, Reply reply) {
    const auto what = "deleting exchange " + name;
    if (reply == Reply::none) {
        amqp_exchange_delete_t method{};
        method.exchange = to_bytes(name);
        method.nowait = 1;
        check(amqp_send_method(state_.get(), channel, AMQP_EXCHANGE_DELETE_METHOD, &method),
              what.c_str());
        return;
    }
    amqp_exchange_delete(state_.get(), channel, to_bytes(name), 0);
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), what.c_str(), channel);
}

void Connection::await_channels(const std::vector<std::uint16_t>& channels,
                                const std::string& what) {
    auto* state = state_.get();
    // basic.qos changes nothing on a channel without consumers, and the broker answers it after
    // the methods before it on its channel.
    for (const auto channel : channels) {
        amqp_basic_qos_t qos{};
        check(amqp_send_method(state, channel, AMQP_BASIC_QOS_METHOD, &qos), what.c_str());
    }
    // One read loop for all of them: rabbitmq-c's RPC on one channel sets aside the frames of
    // the others and would not look at them again, so a close the broker sent on a channel
    // while we waited for another would be missed, and its answer awaited for ever.
    std::vector<std::uint16_t> waiting = channels;
    while (!waiting.empty()) {
        amqp_frame_t frame{};
        check(amqp_simple_wait_frame(state, &frame), what.c_str());
        if (frame.frame_type != AMQP_FRAME_METHOD) continue;
        const auto id = frame.payload.method.id;
        if (id == AMQP_CHANNEL_CLOSE_METHOD || id == AMQP_CONNECTION_CLOSE_METHOD) {
            amqp_rpc_reply_t reply{};
            reply.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
            reply.reply = frame.payload.method;
            check_reply(state, reply, what.c_str(), frame.channel);
        }
        if (id == AMQP_BASIC_QOS_OK_METHOD) std::erase(waiting, frame.channel);
    }
    amqp_maybe_release_buffers(state);
}

std::optional<std::uint32_t> Connection::queue_message_count(std::uint16_t channel,
                                                             const std::string& queue) {
    const auto* ok = amqp_queue_declare(state_.get(), channel, to_bytes(queue), /*passive=*/1, 0,
                                        0, 0, amqp_empty_table);
    try {
        check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), ("inspecting queue " + queue).c_str(), channel);
    } catch (const ChannelError& error) {
        if (error.reply_code() == AMQP_NOT_FOUND) {
            open_channel(channel);
            return std::nullopt;
        }
        throw;
    }
    return ok->message_count;
}

std::optional<std::uint32_t> Connection::purge_queue(std::uint16_t channel,
                                                     const std::string& queue) {
    const auto* ok = amqp_queue_purge(state_.get(), channel, to_bytes(queue));
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), ("purging queue " + queue).c_str(), channel);
    return ok->message_count;
}

void Connection::set_prefetch(std::uint16_t channel, std::uint16_t count) {
    amqp_basic_qos(state_.get(), channel, 0, count, /*global=*/0);
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), "setting prefetch", channel);
}

void Connection::enable_confirms(std::uint16_t channel) {
    amqp_confirm_select(state_.get(), channel);
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), "enabling publisher confirms", channel);
    confirm_channels_[channel] = true;
    publish_sequence_[channel] = 0;
}

std::string Connection::consume(std::uint16_t channel, const std::string& queue, bool no_ack,
                                const std::string& consumer_tag) {
    const auto* ok =
        amqp_basic_consume(state_.get(), channel, to_bytes(queue), to_bytes(consumer_tag),
                           /*no_local=*/0, no_ack ? 1 : 0, /*exclusive=*/0, amqp_empty_table);
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), ("consuming from " + queue).c_str(), channel);
    return to_string(ok->consumer_tag);
}

void Connection::cancel_consumer(std::uint16_t channel, const std::string& consumer_tag) {
    amqp_basic_cancel(state_.get(), channel, to_bytes(consumer_tag));
    check_reply(state_.get(), amqp_get_rpc_reply(state_.get()), "cancelling consumer", channel);
}

std::uint64_t Connection::publish(std::uint16_t channel, const Message& message, bool mandatory) {
    OutgoingTables tables;
    const auto properties = tables.properties(message.properties);
    check(amqp_basic_publish(state_.get(), channel, to_bytes(message.exchange),
                             to_bytes(message.routing_key), mandatory ? 1 : 0, /*immediate=*/0,
                             &properties, to_bytes(message.body)),
          "publishing");
    return confirm_channels_[channel] ? ++publish_sequence_[channel] : 0;
}

void Connection::ack(std::uint16_t channel, std::uint64_t delivery_tag, bool multiple) {
    check(amqp_basic_ack(state_.get(), channel, delivery_tag, multiple ? 1 : 0), "acking");
}

void Connection::reject(std::uint16_t channel, std::uint64_t delivery_tag, bool requeue) {
    check(amqp_basic_reject(state_.get(), channel, delivery_tag, requeue ? 1 : 0), "rejecting");
}

std::optional<Event> Connection::next_event(std::chrono::microseconds timeout) {
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
