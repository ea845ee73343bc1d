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

bool token_matches(std::string_view given, std::string_view expected) {
    const auto a = sha256(given);
    const auto b = sha256(expected);
    return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string dump(const json& view) { return view.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace hourglass::console
