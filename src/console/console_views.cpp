#include "console/console_views.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "hourglass/properties_json.hpp"

namespace hourglass::console {

using nlohmann::json;

namespace {

json optional_number(std::optional<double> value) {
    return value ? json(*value) : json(nullptr);
}

// The code point of one well-formed UTF-8 sequence.
char32_t decode(std::string_view sequence) {
    const auto byte = [&](std::size_t i) { return static_cast<char32_t>(static_cast<unsigned char>(sequence[i])); };
    switch (sequence.size()) {
        case 1: return byte(0);
        case 2: return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
        case 3: return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
        default:
            return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
                   (byte(3) & 0x3F);
    }
}

std::string encode(char32_t code_point) {
    std::string out;
    const auto put = [&](char32_t bits) { out.push_back(static_cast<char>(bits)); };
    if (code_point < 0x80) {
        put(code_point);
    } else if (code_point < 0x800) {
        put(0xC0 | (code_point >> 6));
        put(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        put(0xE0 | (code_point >> 12));
        put(0x80 | ((code_point >> 6) & 0x3F));
        put(0x80 | (code_point & 0x3F));
    } else {
        put(0xF0 | (code_point >> 18));
        put(0x80 | ((code_point >> 12) & 0x3F));
        put(0x80 | ((code_point >> 6) & 0x3F));
        put(0x80 | (code_point & 0x3F));
    }
    return out;
}

std::array<unsigned char, 32> sha256(std::string_view text) {
    std::array<unsigned char, 32> digest{};
    unsigned int size = 0;
    if (EVP_Digest(text.data(), text.size(), digest.data(), &size, EVP_sha256(), nullptr) != 1) {
        throw std::runtime_error("console: SHA-256 failed");
    }
    return digest;
}

}  // namespace

std::optional<double> percentile(const std::vector<double>& sorted, double q) {
    if (sorted.empty()) return std::nullopt;
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

json lateness_view(std::vector<double> lateness_ms) {
    std::sort(lateness_ms.begin(), lateness_ms.end());
    json buckets = json::array();
    std::size_t counted = 0;
    for (const double upper : kLatenessBucketsMs) {
        const auto end = std::upper_bound(lateness_ms.begin(), lateness_ms.end(), upper);
        const auto in_bucket = static_cast<std::size_t>(end - lateness_ms.begin()) - counted;
        buckets.push_back({{"le_ms", upper}, {"releases", in_bucket}});
        counted += in_bucket;
    }
    buckets.push_back({{"le_ms", nullptr}, {"releases", lateness_ms.size() - counted}});
    return {{"releases", lateness_ms.size()},
            {"p50_ms", optional_number(percentile(lateness_ms, 0.5))},
            {"p99_ms", optional_number(percentile(lateness_ms, 0.99))},
            {"max_ms", optional_number(lateness_ms.empty() ? std::nullopt
                                                           : std::optional(lateness_ms.back()))},
            {"buckets", std::move(buckets)}};
}

json upcoming_view(TimePoint from, Milliseconds width, int slots,
                   const std::vector<SlotCount>& counts, std::int64_t counted, std::int64_t cap) {
    std::vector<std::int64_t> jobs(static_cast<std::size_t>(slots), 0);
    std::int64_t last_counted_slot = -1;
    for (const auto& count : counts) {
        if (count.slot < 0 || count.slot >= slots) continue;
        jobs[static_cast<std::size_t>(count.slot)] += count.jobs;
        if (count.jobs > 0) last_counted_slot = std::max(last_counted_slot, count.slot);
    }
    const bool capped = counted >= cap;
    const auto exact_slots = capped ? std::max<std::int64_t>(last_counted_slot, 0) : slots;
    json view_slots = json::array();
    for (int slot = 0; slot < slots; ++slot) {
        view_slots.push_back({{"start", format_rfc3339_ms(from + width * slot)},
                              {"jobs", jobs[static_cast<std::size_t>(slot)]}});
    }
    return {{"from", format_rfc3339_ms(from)},
            {"width_ms", width.count()},
            {"slots", std::move(view_slots)},
            {"capped", capped},
            {"exact_until", format_rfc3339_ms(from + width * exact_slots)}};
}

json body_view(std::string_view body, std::size_t max_bytes) {
    json view = {{"bytes", body.size()}, {"text", nullptr}, {"truncated", false}};
    if (!is_storable_text(body)) return view;
    auto shown = body.substr(0, std::min(body.size(), max_bytes));
    // Cut at a character boundary: drop continuation bytes of a sequence cut in two.
    while (shown.size() < body.size() && !shown.empty() &&
           (static_cast<unsigned char>(body[shown.size()]) & 0xC0) == 0x80) {
        shown.remove_suffix(1);
    }
    view["text"] = std::string(shown);
    view["truncated"] = shown.size() < body.size();
    return view;
}

std::optional<std::string> prefix_upper_bound(std::string_view prefix) {
    std::string bound(prefix);
    while (!bound.empty()) {
        auto start = bound.size() - 1;
        while (start > 0 && (static_cast<unsigned char>(bound[start]) & 0xC0) == 0x80) --start;
        const auto last = decode(std::string_view(bound).substr(start));
        bound.resize(start);
        if (last < 0x10FFFF) {
            // UTF-8 orders like code points, and no sequence is a prefix of another.
            const char32_t next = last + 1 == 0xD800 ? 0xE000 : last + 1;
            return bound + encode(next);
        }
    }
    return std::nullopt;
}

bool token_matches(std::string_view given, std::string_view expected) {
    const auto a = sha256(given);
    const auto b = sha256(expected);
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string dump(const json& view) { return view.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace hourglass::console
