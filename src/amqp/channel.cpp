#include "amqp/channel.hpp"

#include <amqp.h>

#include <stdexcept>
#include <utility>

#include "amqp/field_table.hpp"
#include "amqp/rabbitmq_c.hpp"

namespace hourglass::amqp {

using detail::check;
using detail::check_reply;
using detail::to_timeval;

Channel::Channel(Connection& connection, std::uint16_t number)
    : connection_(&connection), number_(number) {
    if (number == 0) throw std::logic_error("AMQP channel 0 is the connection's own");
    if (connection.is_open(number)) {
        throw std::logic_error("AMQP channel " + std::to_string(number) +
                               " is already open on this connection");
    }
    amqp_channel_open(state(), number_);
    check_rpc("opening channel " + std::to_string(number_));
    connection.mark_open(number_);
}

Channel::~Channel() noexcept {
    close();
}

Channel::Channel(Channel&& other) noexcept
    : connection_(std::exchange(other.connection_, nullptr)),
      number_(std::exchange(other.number_, 0)),
      confirms_(other.confirms_),
      publish_sequence_(other.publish_sequence_) {}

Channel& Channel::operator=(Channel&& other) noexcept {
    if (this != &other) {
        close();
        connection_ = std::exchange(other.connection_, nullptr);
        number_ = std::exchange(other.number_, 0);
        confirms_ = other.confirms_;
        publish_sequence_ = other.publish_sequence_;
    }
    return *this;
}

bool Channel::is_open() const noexcept {
    return connection_ != nullptr && connection_->is_open(number_);
}

amqp_connection_state_t_* Channel::state() const noexcept {
    return connection_->state_.get();
}

void Channel::close() noexcept {
    if (connection_ == nullptr) return;
    if (is_open() && !connection_->lost_) {
        // An RPC: the number may be opened again only once the broker confirmed the close.
        // Bounded, so that a paused broker cannot hold a stop; past it the connection is lost.
        auto* state = this->state();
        const timeval close_wait = to_timeval(kCloseWait);
        const timeval rpc_timeout = to_timeval(detail::kRpcTimeout);
        amqp_set_rpc_timeout(state, &close_wait);
        const auto reply = amqp_channel_close(state, number_, AMQP_REPLY_SUCCESS);
        amqp_set_rpc_timeout(state, &rpc_timeout);
        if (reply.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
            reply.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
            // The broker closed it at the same moment: acknowledge its close too.
            amqp_channel_close_ok_t close_ok{};
            amqp_send_method(state, number_, AMQP_CHANNEL_CLOSE_OK_METHOD, &close_ok);
        } else if (reply.reply_type != AMQP_RESPONSE_NORMAL) {
            connection_->lost_ = true;
        }
    }
    connection_->mark_closed(number_);
    connection_ = nullptr;
    number_ = 0;
}

void Channel::reopen() {
    if (connection_ == nullptr)
        throw std::logic_error("reopening an AMQP channel that was never opened");
    auto& connection = *connection_;
    const auto number = number_;
    close();
    *this = Channel(connection, number);
}

void Channel::check_rpc(const std::string& what) {
    connection_->noting_closes(
        [&] { check_reply(state(), amqp_get_rpc_reply(state()), what.c_str(), number_); });
}

void Channel::check_sent(int status, const std::string& what) {
    connection_->noting_closes([&] { check(status, what.c_str()); });
}

void Channel::declare_exchange(const std::string& name, const std::string& type,
                               const Arguments& arguments, Reply reply) {
    OutgoingTables tables;
    const auto what = "declaring exchange " + name;
    if (reply == Reply::none) {
        amqp_exchange_declare_t method{};
        method.exchange = to_bytes(name);
        method.type = to_bytes(type);
        method.durable = 1;
        method.nowait = 1;
        method.arguments = tables.table(arguments);
        check_sent(amqp_send_method(state(), number_, AMQP_EXCHANGE_DECLARE_METHOD, &method), what);
        return;
    }
    amqp_exchange_declare(state(), number_, to_bytes(name), to_bytes(type), /*passive=*/0,
                          /*durable=*/1, /*auto_delete=*/0, /*internal=*/0,
                          tables.table(arguments));
    check_rpc(what);
}

std::string Channel::declare_queue(const std::string& name, const Arguments& arguments,
                                   bool exclusive) {
    OutgoingTables tables;
    const auto* ok = amqp_queue_declare(state(), number_, to_bytes(name), /*passive=*/0,
                                        /*durable=*/exclusive ? 0 : 1, exclusive ? 1 : 0,
                                        /*auto_delete=*/exclusive ? 1 : 0, tables.table(arguments));
    check_rpc("declaring queue " + name);
    return to_string(ok->queue);
}

void Channel::declare_queue_no_wait(const std::string& name, const Arguments& arguments) {
    OutgoingTables tables;
    amqp_queue_declare_t method{};
    method.queue = to_bytes(name);
    method.durable = 1;
    method.nowait = 1;
    method.arguments = tables.table(arguments);
    check_sent(amqp_send_method(state(), number_, AMQP_QUEUE_DECLARE_METHOD, &method),
               "declaring queue " + name);
}

void Channel::bind_queue(const std::string& queue, const std::string& exchange,
                         const std::string& binding_key, const Arguments& arguments, Reply reply) {
    OutgoingTables tables;
    const auto what = "binding queue " + queue + " to " + exchange;
    if (reply == Reply::none) {
        amqp_queue_bind_t method{};
        method.queue = to_bytes(queue);
        method.exchange = to_bytes(exchange);
        method.routing_key = to_bytes(binding_key);
        method.nowait = 1;
        method.arguments = tables.table(arguments);
        check_sent(amqp_send_method(state(), number_, AMQP_QUEUE_BIND_METHOD, &method), what);
        return;
    }
    amqp_queue_bind(state(), number_, to_bytes(queue), to_bytes(exchange), to_bytes(binding_key),
                    tables.table(arguments));
    check_rpc(what);
}

void Channel::bind_exchange(const std::string& destination, const std::string& source,
                            const std::string& binding_key) {
    amqp_exchange_bind(state(), number_, to_bytes(destination), to_bytes(source),
                       to_bytes(binding_key), amqp_empty_table);
    check_rpc("binding exchange " + destination + " to " + source);
}

void Channel::delete_queue(const std::string& name, Reply reply) {
    const auto what = "deleting queue " + name;
    if (reply == Reply::none) {
        amqp_queue_delete_t method{};
        method.queue = to_bytes(name);
        method.nowait = 1;
        check_sent(amqp_send_method(state(), number_, AMQP_QUEUE_DELETE_METHOD, &method), what);
        return;
    }
    amqp_queue_delete(state(), number_, to_bytes(name), 0, 0);
    check_rpc(what);
}

void Channel::delete_exchange(const std::string& name, Reply reply) {
    const auto what = "deleting exchange " + name;
    if (reply == Reply::none) {
        amqp_exchange_delete_t method{};
        method.exchange = to_bytes(name);
        method.nowait = 1;
        check_sent(amqp_send_method(state(), number_, AMQP_EXCHANGE_DELETE_METHOD, &method), what);
        return;
    }
    amqp_exchange_delete(state(), number_, to_bytes(name), 0);
    check_rpc(what);
}

std::optional<std::uint32_t> Channel::queue_message_count(const std::string& queue) {
    const auto* ok = amqp_queue_declare(state(), number_, to_bytes(queue), /*passive=*/1, 0, 0, 0,
                                        amqp_empty_table);
    try {
        check_rpc("inspecting queue " + queue);
    } catch (const ChannelError& error) {
        if (error.reply_code() == AMQP_NOT_FOUND) {
            reopen();
            return std::nullopt;
        }
        throw;
    }
    return ok->message_count;
}

std::optional<std::uint32_t> Channel::purge_queue(const std::string& queue) {
    const auto* ok = amqp_queue_purge(state(), number_, to_bytes(queue));
    check_rpc("purging queue " + queue);
    return ok->message_count;
}

void Channel::set_prefetch(std::uint16_t count) {
    amqp_basic_qos(state(), number_, 0, count, /*global=*/0);
    check_rpc("setting prefetch");
}

void Channel::enable_confirms() {
    amqp_confirm_select(state(), number_);
    check_rpc("enabling publisher confirms");
    confirms_ = true;
    publish_sequence_ = 0;
}

std::string Channel::consume(const std::string& queue, bool no_ack,
                             const std::string& consumer_tag) {
    const auto* ok =
        amqp_basic_consume(state(), number_, to_bytes(queue), to_bytes(consumer_tag),
                           /*no_local=*/0, no_ack ? 1 : 0, /*exclusive=*/0, amqp_empty_table);
    check_rpc("consuming from " + queue);
    return to_string(ok->consumer_tag);
}

void Channel::cancel_consumer(const std::string& consumer_tag) {
    amqp_basic_cancel(state(), number_, to_bytes(consumer_tag));
    check_rpc("cancelling consumer");
}

std::uint64_t Channel::publish(const Message& message, bool mandatory) {
    OutgoingTables tables;
    const auto properties = tables.properties(message.properties);
    check_sent(amqp_basic_publish(state(), number_, to_bytes(message.exchange),
                                  to_bytes(message.routing_key), mandatory ? 1 : 0,
                                  /*immediate=*/0, &properties, to_bytes(message.body)),
               "publishing");
    return confirms_ ? ++publish_sequence_ : 0;
}

void Channel::ack(std::uint64_t delivery_tag, bool multiple) {
    check_sent(amqp_basic_ack(state(), number_, delivery_tag, multiple ? 1 : 0), "acking");
}

void Channel::reject(std::uint64_t delivery_tag, bool requeue) {
    check_sent(amqp_basic_reject(state(), number_, delivery_tag, requeue ? 1 : 0), "rejecting");
}

void await_channels(std::span<Channel> channels, const std::string& what) {
    if (channels.empty()) return;
    Connection& connection = channels.front().connection();
    auto* state = connection.state_.get();
    connection.noting_closes([&] {
        // basic.qos changes nothing on a channel without consumers, and the broker answers it
        // after the methods before it on its channel.
        for (const auto& channel : channels) {
            amqp_basic_qos_t qos{};
            check(amqp_send_method(state, channel.number(), AMQP_BASIC_QOS_METHOD, &qos),
                  what.c_str());
        }
        // One read loop for all of them: rabbitmq-c's RPC on one channel sets aside the frames
        // of the others and would not look at them again, so a close the broker sent on a
        // channel while we waited for another would be missed, and its answer awaited for ever.
        std::vector<std::uint16_t> waiting;
        for (const auto& channel : channels) waiting.push_back(channel.number());
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
    });
}

}  // namespace hourglass::amqp
