#include "amqp/field_table.hpp"

#include <cstring>
#include <new>

namespace hourglass::amqp {

namespace {

FieldValue decode_value(const amqp_field_value_t& in, bool& was_truncated, int depth);

FieldArray decode_array(const amqp_array_t& in, bool& was_truncated, int depth) {
    FieldArray out;
    out.reserve(static_cast<std::size_t>(in.num_entries));
    for (int i = 0; i < in.num_entries; ++i) {
        out.push_back(decode_value(in.entries[i], was_truncated, depth + 1));
    }
    return out;
}

FieldValue decode_value(const amqp_field_value_t& in, bool& was_truncated, int depth) {
    if (depth > kMaxFieldDepth &&
        (in.kind == AMQP_FIELD_KIND_TABLE || in.kind == AMQP_FIELD_KIND_ARRAY)) {
        was_truncated = true;
        return Void{};
    }
    switch (in.kind) {
        case AMQP_FIELD_KIND_BOOLEAN: return in.value.boolean != 0;
        case AMQP_FIELD_KIND_I8: return in.value.i8;
        case AMQP_FIELD_KIND_U8: return in.value.u8;
        case AMQP_FIELD_KIND_I16: return in.value.i16;
        case AMQP_FIELD_KIND_U16: return in.value.u16;
        case AMQP_FIELD_KIND_I32: return in.value.i32;
        case AMQP_FIELD_KIND_U32: return in.value.u32;
        case AMQP_FIELD_KIND_I64: return in.value.i64;
        case AMQP_FIELD_KIND_U64: return in.value.u64;
        case AMQP_FIELD_KIND_F32: return in.value.f32;
        case AMQP_FIELD_KIND_F64: return in.value.f64;
        case AMQP_FIELD_KIND_DECIMAL:
            return Decimal{in.value.decimal.decimals, in.value.decimal.value};
        case AMQP_FIELD_KIND_UTF8: return to_string(in.value.bytes);
        case AMQP_FIELD_KIND_BYTES: return ByteArray{to_string(in.value.bytes)};
        case AMQP_FIELD_KIND_TIMESTAMP: return Timestamp{in.value.u64};
        case AMQP_FIELD_KIND_ARRAY: return decode_array(in.value.array, was_truncated, depth);
        case AMQP_FIELD_KIND_TABLE: return decode_table(in.value.table, was_truncated, depth + 1);
        case AMQP_FIELD_KIND_VOID:
        default: return Void{};
    }
}

std::optional<std::string> optional_bytes(const amqp_basic_properties_t& in, amqp_flags_t flag,
                                          amqp_bytes_t bytes) {
    if ((in._flags & flag) == 0) return std::nullopt;
    return to_string(bytes);
}

}  // namespace

FieldTable decode_table(const amqp_table_t& in, bool& was_truncated, int depth) {
    FieldTable out;
    out.reserve(static_cast<std::size_t>(in.num_entries));
    for (int i = 0; i < in.num_entries; ++i) {
        out.emplace_back(to_string(in.entries[i].key),
                         decode_value(in.entries[i].value, was_truncated, depth));
    }
    return out;
}

DecodeResult decode_properties(const amqp_basic_properties_t& in) {
    DecodeResult result;
    auto& out = result.properties;
    out.content_type = optional_bytes(in, AMQP_BASIC_CONTENT_TYPE_FLAG, in.content_type);
    out.content_encoding =
        optional_bytes(in, AMQP_BASIC_CONTENT_ENCODING_FLAG, in.content_encoding);
    if (in._flags & AMQP_BASIC_HEADERS_FLAG) {
        out.headers = decode_table(in.headers, result.was_truncated, 0);
    }
    if (in._flags & AMQP_BASIC_DELIVERY_MODE_FLAG) out.delivery_mode = in.delivery_mode;
    if (in._flags & AMQP_BASIC_PRIORITY_FLAG) out.priority = in.priority;
    out.correlation_id = optional_bytes(in, AMQP_BASIC_CORRELATION_ID_FLAG, in.correlation_id);
    out.reply_to = optional_bytes(in, AMQP_BASIC_REPLY_TO_FLAG, in.reply_to);
    out.expiration = optional_bytes(in, AMQP_BASIC_EXPIRATION_FLAG, in.expiration);
    out.message_id = optional_bytes(in, AMQP_BASIC_MESSAGE_ID_FLAG, in.message_id);
    if (in._flags & AMQP_BASIC_TIMESTAMP_FLAG) out.timestamp = in.timestamp;
    out.type = optional_bytes(in, AMQP_BASIC_TYPE_FLAG, in.type);
    out.user_id = optional_bytes(in, AMQP_BASIC_USER_ID_FLAG, in.user_id);
    out.app_id = optional_bytes(in, AMQP_BASIC_APP_ID_FLAG, in.app_id);
    out.cluster_id = optional_bytes(in, AMQP_BASIC_CLUSTER_ID_FLAG, in.cluster_id);
    return result;
}

OutgoingTables::OutgoingTables() { init_amqp_pool(&pool_, 4096); }
OutgoingTables::~OutgoingTables() noexcept { empty_amqp_pool(&pool_); }

amqp_table_t OutgoingTables::table(const FieldTable& in) {
    amqp_table_t out{0, nullptr};
    if (in.empty()) return out;
    auto* entries = static_cast<amqp_table_entry_t*>(
        amqp_pool_alloc(&pool_, sizeof(amqp_table_entry_t) * in.size()));
    if (entries == nullptr) throw std::bad_alloc{};
    for (std::size_t i = 0; i < in.size(); ++i) {
        entries[i].key = to_bytes(in[i].first);
        entries[i].value = value(in[i].second);
    }
    out.num_entries = static_cast<int>(in.size());
    out.entries = entries;
    return out;
}

amqp_field_value_t OutgoingTables::value(const FieldValue& in) {
    amqp_field_value_t out{};
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, Void>) {
                out.kind = AMQP_FIELD_KIND_VOID;
            } else if constexpr (std::is_same_v<T, bool>) {
                out.kind = AMQP_FIELD_KIND_BOOLEAN;
                out.value.boolean = v ? 1 : 0;
            } else if constexpr (std::is_same_v<T, std::int8_t>) {
                out.kind = AMQP_FIELD_KIND_I8;
                out.value.i8 = v;
            } else if constexpr (std::is_same_v<T, std::uint8_t>) {
                out.kind = AMQP_FIELD_KIND_U8;
                out.value.u8 = v;
            } else if constexpr (std::is_same_v<T, std::int16_t>) {
                out.kind = AMQP_FIELD_KIND_I16;
                out.value.i16 = v;
            } else if constexpr (std::is_same_v<T, std::uint16_t>) {
                out.kind = AMQP_FIELD_KIND_U16;
                out.value.u16 = v;
            } else if constexpr (std::is_same_v<T, std::int32_t>) {
                out.kind = AMQP_FIELD_KIND_I32;
                out.value.i32 = v;
            } else if constexpr (std::is_same_v<T, std::uint32_t>) {
                out.kind = AMQP_FIELD_KIND_U32;
                out.value.u32 = v;
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                out.kind = AMQP_FIELD_KIND_I64;
                out.value.i64 = v;
            } else if constexpr (std::is_same_v<T, std::uint64_t>) {
                out.kind = AMQP_FIELD_KIND_U64;
                out.value.u64 = v;
            } else if constexpr (std::is_same_v<T, float>) {
                out.kind = AMQP_FIELD_KIND_F32;
                out.value.f32 = v;
            } else if constexpr (std::is_same_v<T, double>) {
                out.kind = AMQP_FIELD_KIND_F64;
                out.value.f64 = v;
            } else if constexpr (std::is_same_v<T, Decimal>) {
                out.kind = AMQP_FIELD_KIND_DECIMAL;
                out.value.decimal = amqp_decimal_t{v.decimals, v.value};
            } else if constexpr (std::is_same_v<T, std::string>) {
                out.kind = AMQP_FIELD_KIND_UTF8;
                out.value.bytes = to_bytes(v);
            } else if constexpr (std::is_same_v<T, ByteArray>) {
                out.kind = AMQP_FIELD_KIND_BYTES;
                out.value.bytes = to_bytes(v.bytes);
            } else if constexpr (std::is_same_v<T, Timestamp>) {
                out.kind = AMQP_FIELD_KIND_TIMESTAMP;
                out.value.u64 = v.seconds;
            } else if constexpr (std::is_same_v<T, FieldArray>) {
                out.kind = AMQP_FIELD_KIND_ARRAY;
                out.value.array = amqp_array_t{0, nullptr};
                if (!v.empty()) {
                    auto* entries = static_cast<amqp_field_value_t*>(
                        amqp_pool_alloc(&pool_, sizeof(amqp_field_value_t) * v.size()));
                    if (entries == nullptr) throw std::bad_alloc{};
                    for (std::size_t i = 0; i < v.size(); ++i) entries[i] = value(v[i]);
                    out.value.array = amqp_array_t{static_cast<int>(v.size()), entries};
                }
            } else if constexpr (std::is_same_v<T, FieldTable>) {
                out.kind = AMQP_FIELD_KIND_TABLE;
                out.value.table = table(v);
            }
        },
        in.value);
    return out;
}

amqp_basic_properties_t OutgoingTables::properties(const BasicProperties& in) {
    amqp_basic_properties_t out{};
    auto set_bytes = [&](const std::optional<std::string>& field, amqp_flags_t flag,
                         amqp_bytes_t& target) {
        if (!field) return;
        out._flags |= flag;
        target = to_bytes(*field);
    };
    set_bytes(in.content_type, AMQP_BASIC_CONTENT_TYPE_FLAG, out.content_type);
    set_bytes(in.content_encoding, AMQP_BASIC_CONTENT_ENCODING_FLAG, out.content_encoding);
    if (in.headers) {
        out._flags |= AMQP_BASIC_HEADERS_FLAG;
        out.headers = table(*in.headers);
    }
    if (in.delivery_mode) {
        out._flags |= AMQP_BASIC_DELIVERY_MODE_FLAG;
        out.delivery_mode = *in.delivery_mode;
    }
    if (in.priority) {
        out._flags |= AMQP_BASIC_PRIORITY_FLAG;
        out.priority = *in.priority;
    }
    set_bytes(in.correlation_id, AMQP_BASIC_CORRELATION_ID_FLAG, out.correlation_id);
    set_bytes(in.reply_to, AMQP_BASIC_REPLY_TO_FLAG, out.reply_to);
    set_bytes(in.expiration, AMQP_BASIC_EXPIRATION_FLAG, out.expiration);
    set_bytes(in.message_id, AMQP_BASIC_MESSAGE_ID_FLAG, out.message_id);
    if (in.timestamp) {
        out._flags |= AMQP_BASIC_TIMESTAMP_FLAG;
        out.timestamp = *in.timestamp;
    }
    set_bytes(in.type, AMQP_BASIC_TYPE_FLAG, out.type);
    set_bytes(in.user_id, AMQP_BASIC_USER_ID_FLAG, out.user_id);
    set_bytes(in.app_id, AMQP_BASIC_APP_ID_FLAG, out.app_id);
    set_bytes(in.cluster_id, AMQP_BASIC_CLUSTER_ID_FLAG, out.cluster_id);
    return out;
}

}  // namespace hourglass::amqp
