// A broker client as a user's application would be: publishes with confirms, subscribes
// queues to exchanges and stamps every received message with its arrival time. Shared by the
// integration tests and the end-to-end benchmarks; never used by hourglass itself.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "amqp/channel.hpp"
#include "amqp/connection.hpp"
#include "hourglass/message.hpp"
#include "hourglass/time.hpp"

namespace hourglass::testing {

// A received message and when it arrived.
struct Received {
    Message message;
    TimePoint received_at;
    std::chrono::sys_time<std::chrono::microseconds> received_at_us;
};

// A client of the broker, as a user's application would be.
class Client {
public:
    explicit Client(const std::string& url);
    // Publishes with publisher confirms and waits for the broker's ack.
    void publish(const Message& message);
    // Publishes many, waiting for the confirms once at the end.
    void publish_all(const std::vector<Message>& messages);
    // Declares an exclusive server-named queue bound to `exchange` with `binding_key` and
    // consumes it; returns the queue name. With a `queue` name, a durable queue of that name
    // with `arguments` instead (a quorum queue, say, which cannot be exclusive).
    std::string subscribe(const std::string& exchange, const std::string& binding_key,
                          const std::string& queue = "", const amqp::Arguments& arguments = {});
    // Declares an exclusive queue for receipts; returns its name.
    std::string receipt_queue();
    std::optional<Received> receive(std::chrono::milliseconds timeout);
    // Everything that arrives within `quiet` of the last message (and at most `total`).
    std::vector<Received> drain(std::chrono::milliseconds quiet, std::chrono::milliseconds total);
    std::optional<std::uint32_t> queue_size(const std::string& queue);
    amqp::Connection& connection() { return connection_; }
    // Channel 1, with confirms: what publish() uses.
    amqp::Channel& publish_channel() { return publishes_; }
    // Channel 2: declarations, bindings and the consumers of subscribe() and receipt_queue().
    amqp::Channel& channel() { return channel_; }

private:
    void wait_for_confirms();
    amqp::Connection connection_;
    amqp::Channel publishes_;
    amqp::Channel channel_;
    std::uint64_t published_ = 0;
    std::uint64_t confirmed_ = 0;
    std::vector<Received> early_;  // deliveries that arrived while waiting for confirms
};

// A header of a received message; string_header gives "<absent>" or "<not a string>" when
// it is missing or of another type, which reads well in test failures.
const FieldValue* header_of(const Message& message, std::string_view name);
std::string string_header(const Message& message, std::string_view name);

}  // namespace hourglass::testing
