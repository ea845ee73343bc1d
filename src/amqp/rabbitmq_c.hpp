// rabbitmq-c's statuses and replies turned into exceptions, shared by connection.cpp and
// channel.cpp. Internal to src/amqp: it includes rabbitmq-c's headers.
#pragma once

#include <amqp.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "amqp/connection.hpp"
#include "amqp/field_table.hpp"

namespace hourglass::amqp::detail {

// How long an RPC waits for the broker's reply before the connection is given up.
inline constexpr std::chrono::seconds kRpcTimeout{30};

// The one place a rabbitmq-c status code becomes an exception.
inline void check(int status, const char* what) {
    if (status == AMQP_STATUS_OK) return;
    throw ConnectionError(std::string(what) + ": " + amqp_error_string2(status));
}

inline std::string reply_text(amqp_bytes_t text) { return to_string(text); }

// The one place an RPC reply becomes an exception. A server-side close is acknowledged first
// so the connection (for a channel close) stays usable.
inline void check_reply(amqp_connection_state_t state, const amqp_rpc_reply_t& reply,
                        const char* what, std::uint16_t channel = 0) {
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

inline timeval to_timeval(std::chrono::microseconds timeout) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout);
    return timeval{static_cast<time_t>(seconds.count()),
                   static_cast<suseconds_t>((timeout - seconds).count())};
}

}  // namespace hourglass::amqp::detail
