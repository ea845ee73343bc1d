// Conversion between rabbitmq-c field tables / basic properties and hourglass's own types.
//
// Incoming values are copied out of rabbitmq-c's buffers, so the result outlives the frame.
// Outgoing values point into the hourglass objects, which must outlive the publish call;
// the arrays rabbitmq-c needs are allocated from a pool owned by OutgoingProperties.
#pragma once

#include <amqp.h>

#include <string>

#include "hourglass/message.hpp"

namespace hourglass::amqp {

// Nesting deeper than this in a received table is cut off (replaced by Void) so that a hostile
// message cannot exhaust the stack; such a message is reported by `was_truncated`.
inline constexpr int kMaxFieldDepth = 64;

struct DecodeResult {
    BasicProperties properties;
    bool was_truncated = false;
};

DecodeResult decode_properties(const amqp_basic_properties_t& in);
FieldTable decode_table(const amqp_table_t& in, bool& was_truncated, int depth = 0);

inline std::string to_string(amqp_bytes_t bytes) {
    return bytes.len == 0 ? std::string{}
                          : std::string(static_cast<const char*>(bytes.bytes), bytes.len);
}
inline amqp_bytes_t to_bytes(const std::string& text) {
    return amqp_bytes_t{text.size(), const_cast<char*>(text.data())};
}

// Owns the memory rabbitmq-c reads while a message or a declare is sent.
class OutgoingTables {
public:
    OutgoingTables();
    ~OutgoingTables() noexcept;
    OutgoingTables(const OutgoingTables&) = delete;
    OutgoingTables& operator=(const OutgoingTables&) = delete;

    amqp_table_t table(const FieldTable& table);
    amqp_basic_properties_t properties(const BasicProperties& properties);

private:
    amqp_field_value_t value(const FieldValue& value);
    amqp_pool_t pool_;
};

}  // namespace hourglass::amqp
