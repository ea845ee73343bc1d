// Builds arbitrary AMQP messages from fuzzer bytes, for the fuzz targets that parse what a
// client can send: every field type, nested tables and arrays, any bytes in strings.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include "hourglass/message.hpp"

namespace hourglass::fuzzing {

inline FieldValue make_value(FuzzedDataProvider& in, int depth);

inline FieldTable make_table(FuzzedDataProvider& in, int depth) {
    FieldTable table;
    const auto entries = in.ConsumeIntegralInRange<int>(0, depth > 3 ? 0 : 6);
    for (int i = 0; i < entries; ++i) {
        // Often one of the control headers, so the parser's checks are exercised.
        static const char* kNames[] = {"x-delay", "x-schedule-at", "x-cron", "x-cron-tz",
                                       "x-cron-until", "x-cron-limit", "x-replace", "x-cancel",
                                       "x-reply-to", "x-hourglass-exchange"};
        std::string name = in.ConsumeBool() ? kNames[in.ConsumeIntegralInRange<int>(0, 9)]
                                            : in.ConsumeRandomLengthString(16);
        table.emplace_back(std::move(name), make_value(in, depth + 1));
    }
    return table;
}

inline FieldValue make_value(FuzzedDataProvider& in, int depth) {
    switch (in.ConsumeIntegralInRange<int>(0, 17)) {
        case 0: return Void{};
        case 1: return in.ConsumeBool();
        case 2: return in.ConsumeIntegral<std::int8_t>();
        case 3: return in.ConsumeIntegral<std::uint8_t>();
        case 4: return in.ConsumeIntegral<std::int16_t>();
        case 5: return in.ConsumeIntegral<std::uint16_t>();
        case 6: return in.ConsumeIntegral<std::int32_t>();
        case 7: return in.ConsumeIntegral<std::uint32_t>();
        case 8: return in.ConsumeIntegral<std::int64_t>();
        case 9: return in.ConsumeIntegral<std::uint64_t>();
        case 10: return in.ConsumeFloatingPoint<float>();
        case 11: return in.ConsumeFloatingPoint<double>();
        case 12: return Decimal{in.ConsumeIntegral<std::uint8_t>(), in.ConsumeIntegral<std::uint32_t>()};
        case 13: return in.ConsumeRandomLengthString(40);
        case 14: return Timestamp{in.ConsumeIntegral<std::uint64_t>()};
        case 15: return ByteArray{in.ConsumeRandomLengthString(16)};
        case 16: {
            FieldArray items;
            const auto count = in.ConsumeIntegralInRange<int>(0, depth > 3 ? 0 : 4);
            for (int i = 0; i < count; ++i) items.push_back(make_value(in, depth + 1));
            return items;
        }
        default: return make_table(in, depth);
    }
}

inline std::optional<std::string> maybe_string(FuzzedDataProvider& in, std::size_t max) {
    if (!in.ConsumeBool()) return std::nullopt;
    return in.ConsumeRandomLengthString(max);
}

inline BasicProperties make_properties(FuzzedDataProvider& in) {
    BasicProperties p;
    p.content_type = maybe_string(in, 20);
    p.content_encoding = maybe_string(in, 20);
    if (in.ConsumeBool()) p.headers = make_table(in, 0);
    if (in.ConsumeBool()) p.delivery_mode = in.ConsumeIntegral<std::uint8_t>();
    if (in.ConsumeBool()) p.priority = in.ConsumeIntegral<std::uint8_t>();
    p.correlation_id = maybe_string(in, 20);
    p.reply_to = maybe_string(in, 20);
    p.expiration = maybe_string(in, 20);
    p.message_id = maybe_string(in, 40);
    if (in.ConsumeBool()) p.timestamp = in.ConsumeIntegral<std::uint64_t>();
    p.type = maybe_string(in, 20);
    p.user_id = maybe_string(in, 20);
    p.app_id = maybe_string(in, 20);
    p.cluster_id = maybe_string(in, 20);
    return p;
}

}  // namespace hourglass::fuzzing
