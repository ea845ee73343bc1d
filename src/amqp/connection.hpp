// A thin RAII wrapper over one rabbitmq-c connection.
//
// One Connection is used by one thread only (rabbitmq-c is not thread-safe).
// Every rabbitmq-c status is checked; failures become exceptions:
// ChannelError when the broker closed a channel (the connection stays usable
// after reopening the channel), ConnectionError when the connection is gone
// (the caller reconnects with backoff). No rabbitmq-c type leaves src/amqp/.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "hourglass/message.hpp"
#include "common/metrics.hpp"

struct amqp_connection_state_t_;
struct amqp_frame_t_;

namespace hourglass::amqp {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};
// The broker closed a channel (e.g. a declare with different arguments): reopen it.
class ChannelError : public Error {
public:
    ChannelError(const std::string& what, std::uint16_t reply_code, std::uint16_t channel = 0)
        : Error(what), reply_code_(reply_code), channel_(channel) {}
    std::uint16_t reply_code() const noexcept { return reply_code_; }
    // The channel the broker closed (0 if not known).
    std::uint16_t channel() const noexcept { return channel_; }

private:
    std::uint16_t reply_code_;
    std::uint16_t channel_;
};
// The connection is lost or was closed by the broker: reconnect.
class ConnectionError : public Error {
public:
    using Error::Error;
    // The broker closed it with connection.close: `reply_text` says why.
    ConnectionError(const std::string& what, std::string reply_text)
        : Error(what), broker_reply_(std::move(reply_text)) {}
    // Whether the broker closed it while it keeps running (an operator's close from the
    // management API, a policy), not because it shuts down: its queues went on meanwhile.
    // False when the connection was lost (a network cut, a crash): nothing is known.
    bool closed_by_running_broker() const noexcept {
        return broker_reply_ && broker_reply_->find("shutdown") == std::string::npos;
    }

private:
    std::optional<std::string> broker_reply_;
};

struct ConnectionOptions {
    // amqp://user:pass@host:port/vhost or amqps://; several URLs separated by white space (e.g.
    // the nodes of a cluster) are tried in turn, first to last, at every connection attempt.
    std::string url;
    std::string connection_name = "hourglass";
    std::chrono::seconds heartbeat{30};
    std::chrono::milliseconds connect_timeout{5000};
    std::string ca_cert_file;  // amqps: CA bundle to verify the broker (empty: system default)
    std::string client_cert_file;  // amqps: optional client certificate (PEM), with its key
    std::string client_key_file;
    int frame_max = 131072;
    // Counts this connection while it is open (health::ServiceHealth::open_connections: /readyz,
    // hourglass_connected); may be null.
    metrics::Gauge* open_connections = nullptr;
};

class Channel;

// A message delivered to a consumer.
struct Delivery {
    std::uint16_t channel = 0;
    std::uint64_t delivery_tag = 0;
    bool redelivered = false;
    Message message;  // message.exchange is the exchange it was published to
};
// The broker's answer to published messages on a confirm channel.
struct Confirm {
    std::uint16_t channel = 0;
    std::uint64_t delivery_tag = 0;  // publish sequence number
    bool multiple = false;           // covers every tag up to delivery_tag
    bool ack = true;                 // false: basic.nack, the broker did not take it
};
// A mandatory message the broker could not route.
struct Returned {
    std::uint16_t channel = 0;
    std::uint16_t reply_code = 0;
    Message message;
};
using Event = std::variant<Delivery, Confirm, Returned>;

class Connection {
public:
    // Opens the socket, logs in and opens nothing else; with several URLs, the first that
    // works. Throws ConnectionError.
    explicit Connection(const ConnectionOptions& options);
    ~Connection() noexcept;
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    // Not movable: its Channels point to it.
    Connection(Connection&&) = delete;
    Connection& operator=(Connection&&) = delete;

    // While held, the frames of consecutive publishes wait in the kernel and leave together in
    // full-sized TCP segments (TCP_CORK), instead of one segment per publish: fewer packets for
    // the broker to read. Releasing sends what waits at once. A no-op where the socket refuses.
    void hold_sends(bool hold) noexcept;

    // Waits up to `timeout` for the next delivery, confirm or return.
    // Returns nothing on timeout. A zero timeout only looks at what has already arrived.
    std::optional<Event> next_event(std::chrono::microseconds timeout);

    // The socket, for poll() together with other descriptors; and whether rabbitmq-c already
    // buffered data, in which case poll() would not report it.
    int socket_fd() const noexcept;
    // The frame_max negotiated with the broker: a message's properties must fit one frame.
    std::size_t frame_max() const noexcept;
    bool has_buffered_data() const noexcept;
    // The user it logged in as: the only user_id RabbitMQ accepts on its publishes.
    const std::string& user() const noexcept { return user_; }

private:
    friend class Channel;
    friend void await_channels(std::span<Channel> channels, const std::string& what);

    void open(const std::string& url, const ConnectionOptions& options);
    // Channel numbers: which are open, so that no two Channels share one.
    void mark_open(std::uint16_t channel);
    void mark_closed(std::uint16_t channel) noexcept;
    bool is_open(std::uint16_t channel) const noexcept;
    // Runs `read`, marking the connection lost if it throws ConnectionError and the channel
    // closed if it throws ChannelError.
    template <typename Read>
    auto noting_closes(Read&& read) -> decltype(read());
    std::optional<Event> read_event(std::chrono::microseconds timeout);
    // Waits for the socket to be readable, to the microsecond; returns what is left of
    // `timeout` (0 if nothing arrived).
    std::chrono::microseconds wait_for_socket(std::chrono::microseconds timeout);
    // The event a method frame carries (nothing for the methods no caller waits for); throws
    // for a channel or connection the broker closed, or a consumer it cancelled.
    std::optional<Event> event_of(const amqp_frame_t_& frame);
    struct StateDeleter {
        StateDeleter() noexcept : close(true) {}
        // False once the connection is lost: nothing would answer a close.
        bool close;
        void operator()(amqp_connection_state_t_* state) const noexcept;
    };
    std::unique_ptr<amqp_connection_state_t_, StateDeleter> state_;
    std::vector<bool> open_channels_;  // by channel number
    // A ConnectionError came out of it: nothing waits for the broker any more (Channel's close).
    bool lost_ = false;
    std::string user_;
    metrics::ScopedGaugeIncrement counted_open_;  // set once logged in
};

template <typename Read>
auto Connection::noting_closes(Read&& read) -> decltype(read()) {
    try {
        return read();
    } catch (const ChannelError& error) {
        // A cancelled consumer (reply code 0) leaves its channel open.
        if (error.reply_code() != 0) mark_closed(error.channel());
        throw;
    } catch (const ConnectionError&) {
        lost_ = true;
        throw;
    }
}

// The URL (or each URL of a list) with its password replaced by "***", for logs (reference §9:
// secrets are never logged).
std::string mask_url_password(const std::string& url);
// The URLs of a white-space separated list of amqp:// or amqps:// URLs; anything else is one
// URL (the text as it is).
std::vector<std::string> split_urls(const std::string& urls);

}  // namespace hourglass::amqp
