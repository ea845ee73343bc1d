#include "support/amqp_client.hpp"

#include <stdexcept>

namespace hourglass::testing {

namespace {
amqp::ConnectionOptions client_options(const std::string& url) {
    amqp::ConnectionOptions options;
    options.url = url;
    options.connection_name = "hourglass test";
    return options;
}
}  // namespace

Client::Client(const std::string& url)
    : connection_(client_options(url)), publishes_(connection_, 1), channel_(connection_, 2) {
    publishes_.enable_confirms();
}

void Client::wait_for_confirms() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds{30};
    while (confirmed_ < published_) {
        if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no confirm");
        auto event = connection_.next_event(std::chrono::milliseconds{100});
        if (!event) continue;
        if (auto* confirm = std::get_if<amqp::Confirm>(&*event)) {
            if (!confirm->ack) throw std::runtime_error("publish nacked");
            confirmed_ = std::max(confirmed_, confirm->delivery_tag);
        } else if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) {
            const auto now = std::chrono::system_clock::now();
            early_.push_back({std::move(delivery->message),
                              std::chrono::time_point_cast<Milliseconds>(now),
                              std::chrono::time_point_cast<std::chrono::microseconds>(now)});
        }
    }
}

void Client::publish(const Message& message) {
    published_ = publishes_.publish(message);
    wait_for_confirms();
}

void Client::publish_all(const std::vector<Message>& messages) {
    for (const auto& message : messages) published_ = publishes_.publish(message);
    wait_for_confirms();
}

std::string Client::subscribe(const std::string& exchange, const std::string& binding_key,
                              const std::string& queue, const amqp::Arguments& arguments) {
    const auto name = queue.empty() ? channel_.declare_queue("", {}, /*exclusive=*/true)
                                    : channel_.declare_queue(queue, arguments);
    channel_.bind_queue(name, exchange, binding_key);
    channel_.consume(name, /*no_ack=*/true);
    return name;
}

std::string Client::receipt_queue() {
    const auto queue = channel_.declare_queue("", {}, /*exclusive=*/true);
    channel_.consume(queue, /*no_ack=*/true);
    return queue;
}

std::optional<Received> Client::receive(std::chrono::milliseconds timeout) {
    if (!early_.empty()) {
        auto first = std::move(early_.front());
        early_.erase(early_.begin());
        return first;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return std::nullopt;
        auto event = connection_.next_event(left);
        if (!event) continue;
        if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) {
            const auto now = std::chrono::system_clock::now();
            return Received{std::move(delivery->message),
                            std::chrono::time_point_cast<Milliseconds>(now),
                            std::chrono::time_point_cast<std::chrono::microseconds>(now)};
        }
    }
}

std::vector<Received> Client::drain(std::chrono::milliseconds quiet, std::chrono::milliseconds total) {
    std::vector<Received> all;
    const auto deadline = std::chrono::steady_clock::now() + total;
    while (std::chrono::steady_clock::now() < deadline) {
        auto received = receive(quiet);
        if (!received) break;
        all.push_back(std::move(*received));
    }
    return all;
}

std::optional<std::uint32_t> Client::queue_size(const std::string& queue) {
    return channel_.queue_message_count(queue);
}

const FieldValue* header_of(const Message& message, std::string_view name) {
    return find_header(message.properties, name);
}

std::string string_header(const Message& message, std::string_view name) {
    const auto* value = header_of(message, name);
    if (value == nullptr) return "<absent>";
    const auto* text = std::get_if<std::string>(&value->value);
    return text ? *text : "<not a string>";
}

}  // namespace hourglass::testing
