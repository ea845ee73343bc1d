// One AMQP channel of a Connection, open while the Channel lives.
//
// Every method the broker serves on a channel (declarations, consumes, publishes, acks) is a
// method of Channel, so no caller passes a channel number and no two owners share one: the
// Connection refuses to open a number that is already open. The destructor closes the channel
// with the broker if its connection is still usable, waiting at most kCloseWait for the reply
// (a paused broker must not hold a stop); a channel the broker closed (ChannelError) or whose
// connection was lost is not closed again. A Channel must not outlive its Connection: declare
// it after the Connection it belongs to.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "amqp/connection.hpp"

namespace hourglass::amqp {

// An exchange or queue argument table (x-message-ttl, alternate-exchange, ...).
using Arguments = FieldTable;

// Whether a method waits for the broker's reply (see Channel::declare_exchange).
enum class Reply { wait, none };

class Channel {
public:
    // The longest the destructor (or a move over an open channel) waits for the broker's
    // close-ok before it gives the connection up as lost.
    static constexpr std::chrono::seconds kCloseWait{2};

    Channel() noexcept = default;  // no channel: is_open() is false
    // Opens channel `number` (1..65535) on `connection`. Throws ChannelError or
    // ConnectionError; std::logic_error if that number is already open on it.
    Channel(Connection& connection, std::uint16_t number);
    ~Channel() noexcept;
    Channel(const Channel&) = delete;
    Channel& operator=(const Channel&) = delete;
    Channel(Channel&& other) noexcept;
    Channel& operator=(Channel&& other) noexcept;

    // The number events carry (Delivery::channel, Confirm::channel, Returned::channel).
    std::uint16_t number() const noexcept { return number_; }
    bool is_open() const noexcept;
    Connection& connection() const noexcept { return *connection_; }

    // Opens the channel again, on the same number, after the broker closed it (ChannelError):
    // confirms, prefetch and consumers are gone with the old one and set again by the caller.
    void reopen();

    // Reply::none sends a declaration, binding or deletion without waiting for the broker's
    // answer (AMQP no-wait): the broker handles each channel's methods in order, so many leave
    // at once, and the one that fails closes its channel, which await_channels() reports.
    void declare_exchange(const std::string& name, const std::string& type,
                          const Arguments& arguments = {}, Reply reply = Reply::wait);
    // Durable queue unless exclusive; returns the queue name (the broker's for an empty name).
    std::string declare_queue(const std::string& name, const Arguments& arguments,
                              bool exclusive = false);
    // A durable queue with a name, declared with no wait for the reply.
    void declare_queue_no_wait(const std::string& name, const Arguments& arguments);
    void bind_queue(const std::string& queue, const std::string& exchange,
                    const std::string& binding_key, const Arguments& arguments = {},
                    Reply reply = Reply::wait);
    void bind_exchange(const std::string& destination, const std::string& source,
                       const std::string& binding_key);
    void delete_queue(const std::string& name, Reply reply = Reply::wait);
    void delete_exchange(const std::string& name, Reply reply = Reply::wait);
    // Number of ready messages in a queue (passive declare); nullopt when it does not exist
    // (the broker closes the channel for that: it is opened again).
    std::optional<std::uint32_t> queue_message_count(const std::string& queue);
    std::optional<std::uint32_t> purge_queue(const std::string& queue);

    // Per-consumer prefetch (never `global`, reference §10).
    void set_prefetch(std::uint16_t count);
    void enable_confirms();
    std::string consume(const std::string& queue, bool no_ack = false,
                        const std::string& consumer_tag = {});
    void cancel_consumer(const std::string& consumer_tag);

    // Publishes message.exchange / message.routing_key. With confirms enabled the returned
    // number is this publish's sequence number on the channel (1, 2, ...).
    std::uint64_t publish(const Message& message, bool mandatory = false);
    void ack(std::uint64_t delivery_tag, bool multiple = false);
    void reject(std::uint64_t delivery_tag, bool requeue);

private:
    amqp_connection_state_t_* state() const noexcept;
    void close() noexcept;
    // Checks the reply of the RPC just made on this channel: throws ChannelError (and marks
    // the channel closed) or ConnectionError.
    void check_rpc(const std::string& what);
    void check_sent(int status, const std::string& what);

    Connection* connection_ = nullptr;
    std::uint16_t number_ = 0;
    bool confirms_ = false;
    std::uint64_t publish_sequence_ = 0;  // with confirms: the last publish's number
};

// Returns once the broker has handled every method sent before on each of `channels` (all of
// one Connection); throws ChannelError, with the broker's reason, if one of them (sent with
// Reply::none) failed. `what` says what those methods were, for the error. Other frames that
// arrive meanwhile are dropped: for connections that only declare or delete.
void await_channels(std::span<Channel> channels, const std::string& what);

}  // namespace hourglass::amqp
