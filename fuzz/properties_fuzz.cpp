// libFuzzer target: AMQP field tables and properties as they are stored in
// hourglass.jobs.properties and released again. Three properties:
//  - bytes decoded as an AMQP table by rabbitmq-c, converted to hourglass's types, stored as
//    JSON and read back give the same table, which rabbitmq-c encodes and decodes unchanged;
//  - arbitrary properties round-trip through JSON exactly;
//  - arbitrary JSON text never crashes the reader.
#include <amqp.h>

#include <cstdlib>

#include "amqp/field_table.hpp"
#include "field_values.hpp"
#include "hourglass/properties_json.hpp"

namespace {

bool same(const hourglass::FieldValue& a, const hourglass::FieldValue& b);

// Equality that treats NaN as equal to NaN (JSON keeps them as text).
bool same_table(const hourglass::FieldTable& a, const hourglass::FieldTable& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (a[i].first != b[i].first || !same(a[i].second, b[i].second)) return false;
    }
    return true;
}

bool same(const hourglass::FieldValue& a, const hourglass::FieldValue& b) {
    if (a.value.index() != b.value.index()) return false;
    if (const auto* x = std::get_if<double>(&a.value)) {
        const auto y = std::get<double>(b.value);
        return (*x != *x && y != y) || *x == y;
    }
    if (const auto* x = std::get_if<float>(&a.value)) {
        const auto y = std::get<float>(b.value);
        return (*x != *x && y != y) || *x == y;
    }
    if (const auto* x = std::get_if<hourglass::FieldTable>(&a.value)) {
        return same_table(*x, std::get<hourglass::FieldTable>(b.value));
    }
    if (const auto* x = std::get_if<hourglass::FieldArray>(&a.value)) {
        const auto& y = std::get<hourglass::FieldArray>(b.value);
        if (x->size() != y.size()) return false;
        for (std::size_t i = 0; i < x->size(); ++i) {
            if (!same((*x)[i], y[i])) return false;
        }
        return true;
    }
    return a == b;
}

bool same_properties(const hourglass::BasicProperties& a, const hourglass::BasicProperties& b) {
    auto a_without = a;
    auto b_without = b;
    a_without.headers.reset();
    b_without.headers.reset();
    if (!(a_without == b_without) || a.headers.has_value() != b.headers.has_value()) return false;
    return !a.headers || same_table(*a.headers, *b.headers);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace hourglass;
    // 1. Wire bytes -> rabbitmq-c table -> hourglass -> JSON -> hourglass -> wire -> same.
    {
        amqp_pool_t pool;
        init_amqp_pool(&pool, 4096);
        amqp_table_t decoded{};
        std::size_t offset = 0;
        amqp_bytes_t encoded{size, const_cast<std::uint8_t*>(data)};
        if (amqp_decode_table(encoded, &pool, &decoded, &offset) == AMQP_STATUS_OK) {
            bool truncated = false;
            const auto table = amqp::decode_table(decoded, truncated, 0);
            BasicProperties properties;
            properties.headers = table;
            const auto stored = properties_from_json(
                nlohmann::json::parse(properties_to_json(properties).dump()));
            if (!stored || !same_properties(*stored, properties)) std::abort();

            amqp::OutgoingTables tables;
            auto outgoing = tables.table(*stored->headers);
            std::vector<std::uint8_t> buffer(size * 2 + 1024);
            std::size_t written = 0;
            if (amqp_encode_table(amqp_bytes_t{buffer.size(), buffer.data()}, &outgoing, &written) ==
                AMQP_STATUS_OK) {
                amqp_table_t again{};
                std::size_t again_offset = 0;
                if (amqp_decode_table(amqp_bytes_t{written, buffer.data()}, &pool, &again,
                                      &again_offset) != AMQP_STATUS_OK) {
                    std::abort();
                }
                bool again_truncated = false;
                if (!truncated &&
                    !same_table(amqp::decode_table(again, again_truncated, 0), table)) {
                    std::abort();
                }
            }
        }
        empty_amqp_pool(&pool);
    }
    // 2. Arbitrary properties round-trip through JSON.
    {
        FuzzedDataProvider in(data, size);
        const auto properties = fuzzing::make_properties(in);
        const auto text = properties_to_json(properties).dump();
        const auto back = properties_from_json(nlohmann::json::parse(text));
        if (!back || !same_properties(*back, properties)) std::abort();
    }
    // 3. Arbitrary JSON text never crashes the reader.
    {
        const auto json = nlohmann::json::parse(data, data + size, nullptr, false);
        if (!json.is_discarded()) (void)properties_from_json(json);
    }
    return 0;
}
