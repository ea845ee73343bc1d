#include "audit/audit_consumer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "amqp/ack_plan.hpp"
#include "audit/audit_metrics.hpp"
#include "common/log_budget.hpp"
#include "common/retry.hpp"

namespace hourglass::audit {

namespace {
std::optional<std::int64_t> integer_header(const Message& message, std::string_view name) {
    const auto* value = find_header(message.properties, name);
    if (value == nullptr) return std::nullopt;
    return std::visit(
        [](const auto& v) -> std::optional<std::int64_t> {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
                return static_cast<std::int64_t>(v);
            else return std::nullopt;
        },
        value->value);
}

const std::string* string_header(const Message& message, std::string_view name) {
    const auto* value = find_header(message.properties, name);
    return value ? std::get_if<std::string>(&value->value) : nullptr;
}

// The outages remembered, newest last: enough to cover redeliveries after a quick second one.
constexpr std::size_t kOutagesKept = 8;

AuditSeams with_defaults(AuditSeams seams) {
    if (!seams.open_store) {
        seams.open_store = [](const store::StoreOptions& store_options) {
            return std::make_unique<store::JobStore>(store_options);
        };
    }
    if (!seams.open_feed) {
        seams.open_feed = [](const AuditOptions& options) {
            return open_release_feed(options.amqp, options.names.audit, options.prefetch);
        };
    }
    if (!seams.now) seams.now = [] { return now_us(); };
    return seams;
}

void audit_session(const AuditOptions& options, const AuditSeams& seams, AuditMetrics& metrics,
                   std::stop_token stop, std::deque<BrokerOutage>& outages, bool& consuming) {
    const auto store = seams.open_store(options.store);
    const auto feed = seams.open_feed(options);
    const auto now = [&] { return std::chrono::time_point_cast<Milliseconds>(seams.now()); };
    if (!outages.empty() && !outages.back().back_at) outages.back().back_at = now();
    consuming = true;
    std::size_t doubted = 0;  // releases left to the re-send in this session

    using Clock = std::chrono::steady_clock;
    constexpr auto kNoBatch = Clock::time_point::max();  // flush_at while the batch is empty
    std::vector<ObservedRelease> batch;
    std::vector<std::uint64_t> batch_tags;       // the delivery of each release in the batch
    std::vector<std::uint64_t> unrecorded_tags;  // deliveries since the last flush not to record
    std::size_t held = 0;  // copies delivered and not yet acked, recorded, waiting or not
    auto flush_at = kNoBatch;
    Clock::time_point first_at{};  // when the batch's first copy came
    bool burst = false;            // the last batch was recorded at a burst's pace
    LogBudget foreign_lines;       // whoever may publish to the audit queue decides how many
    // Copies whose runs' rows another transaction holds: unacked, and tried again (with the
    // batch of the moment) when `retry` says. The prefetch window bounds them.
    std::vector<std::pair<ObservedRelease, std::uint64_t>> waiting;
    LockedRowsRetry retry;
    auto flush = [&] {
        const bool try_waiting = retry.due(Clock::now());
        if (batch_tags.empty() && unrecorded_tags.empty() && !try_waiting) return;
        // The pace at which the batch came, not counting the time its record takes.
        const auto span = std::max<Clock::duration>(Clock::now() - first_at, options.batch_wait);
        if (try_waiting) {
            for (auto& [release, tag] : waiting) {
                batch.push_back(std::move(release));
                batch_tags.push_back(tag);
            }
            waiting.clear();
        }
        const auto recorded = store->record_releases(batch);
        std::vector<bool> left(batch.size(), false);
        for (const auto i : recorded.left) left[i] = true;
        std::vector<std::uint64_t> settled = std::move(unrecorded_tags);
        for (std::size_t i = 0; i < batch.size(); ++i) {
            if (left[i]) {
                waiting.emplace_back(std::move(batch[i]), batch_tags[i]);
            } else {
                settled.push_back(batch_tags[i]);
            }
        }
        burst = options.burst_runs_per_second > 0 &&
                static_cast<double>(recorded.lateness_ms.size()) >=
                    static_cast<double>(options.burst_runs_per_second) *
                        std::chrono::duration<double>(span).count();
        metrics.count_releases(batch.size() - recorded.left.size(), recorded.lateness_ms);
        std::optional<std::uint64_t> first_waiting;
        for (const auto& entry : waiting) {
            if (!first_waiting || entry.second < *first_waiting) first_waiting = entry.second;
        }
        const auto acks = amqp::plan_acks(settled, first_waiting);
        for (const auto tag : acks.one_by_one) feed->ack(tag, /*multiple=*/false);
        if (acks.through) feed->ack(*acks.through, /*multiple=*/true);
        spdlog::debug("audit: recorded {} releases ({} runs)", batch.size() - recorded.left.size(),
                      recorded.lateness_ms.size());
        if (!waiting.empty() && !retry.waiting()) {
            spdlog::warn(
                "audit: {} releases wait to be recorded: another PostgreSQL transaction "
                "holds their rows; the other releases are recorded meanwhile",
                waiting.size());
        } else if (waiting.empty() && retry.waiting()) {
            spdlog::info("audit: the releases that waited for locked rows are recorded");
        }
        retry.settled(Clock::now(), !waiting.empty(), try_waiting);
        metrics.set_releases_waiting(waiting.size());
        batch.clear();
        batch_tags.clear();
        unrecorded_tags.clear();
        held = waiting.size();
        flush_at = kNoBatch;
    };

    while (!stop.stop_requested()) {
        auto wake_at = flush_at;
        if (retry.waiting()) wake_at = std::min(wake_at, retry.at());
        auto wait = std::chrono::microseconds{100000};
        if (wake_at != kNoBatch) {
            wait = std::max(
                std::chrono::microseconds{0},
                std::chrono::duration_cast<std::chrono::microseconds>(wake_at - Clock::now()));
        }
        if (auto event = feed->next_event(wait)) {
            auto* delivery = std::get_if<amqp::Delivery>(&*event);
            if (delivery == nullptr) continue;
            const auto received_at = seams.now();
            bool recording = false;
            if (auto release = observed_release(delivery->message, received_at)) {
                if (options.doubt_releases_around_outages && !outages.empty() &&
                    released_while_the_broker_went_down(dead_lettered_at(delivery->message),
                                                        outages)) {
                    if (doubted++ == 0) {
                        spdlog::info("audit: releases dead-lettered while the broker went down "
                                     "are not recorded: it may have dropped your queues' copy, "
                                     "so they are published again after --resend-after");
                    }
                } else {
                    batch.push_back(std::move(*release));
                    batch_tags.push_back(delivery->delivery_tag);
                    recording = true;
                }
            } else if (const auto grant = foreign_lines.take(Clock::now()); grant.log) {
                spdlog::warn("audit: a message without hourglass headers on {}; ignored{}",
                             options.names.audit, left_out_note(grant.left_out, "such messages"));
            }
            if (!recording) unrecorded_tags.push_back(delivery->delivery_tag);
            ++held;
            const auto arrived = Clock::now();
            if (flush_at == kNoBatch) first_at = arrived;
            if (burst) {
                flush_at = std::min(arrived + options.burst_quiet, first_at + options.burst_hold);
                // The broker sends no more until these are acked.
                if (held >= options.prefetch) flush();
            } else {
                if (flush_at == kNoBatch) flush_at = arrived + options.batch_wait;
                if (batch.size() >= options.batch_size) flush();
            }
        } else if (Clock::now() >= flush_at || retry.due(Clock::now())) {
            flush();
        }
    }
    flush();
}

}  // namespace

std::optional<ObservedRelease> observed_release(
    const Message& message, std::chrono::sys_time<std::chrono::microseconds> received_at) {
    const auto* id = string_header(message, header::kId);
    const auto* due = string_header(message, header::kDue);
    const auto run = integer_header(message, header::kRun);
    if (id == nullptr || due == nullptr || !run) return std::nullopt;
    const auto due_at = parse_rfc3339(*due);
    if (!due_at) return std::nullopt;
    return ObservedRelease{*id, static_cast<int>(*run), *due_at, received_at};
}

std::optional<TimePoint> dead_lettered_at(const Message& message) {
    const auto* deaths = find_header(message.properties, "x-death");
    const auto* entries = deaths ? std::get_if<FieldArray>(&deaths->value) : nullptr;
    if (entries == nullptr || entries->empty()) return std::nullopt;
    const auto* newest = std::get_if<FieldTable>(&entries->front().value);
    if (newest == nullptr) return std::nullopt;
    for (const auto& [key, value] : *newest) {
        if (key != "time") continue;
        const auto* time = std::get_if<Timestamp>(&value.value);
        if (time == nullptr || time->seconds > 253402300799u) return std::nullopt;  // past 9999
        return TimePoint{std::chrono::seconds{static_cast<std::int64_t>(time->seconds)}};
    }
    return std::nullopt;
}

bool released_while_the_broker_went_down(std::optional<TimePoint> dead_lettered,
                                         const std::deque<BrokerOutage>& outages) noexcept {
    if (!dead_lettered) return false;
    return std::any_of(outages.begin(), outages.end(), [&](const BrokerOutage& outage) {
        return *dead_lettered >= outage.lost_at - kOutageMargin - std::chrono::seconds{1} &&
               (!outage.back_at || *dead_lettered <= *outage.back_at);
    });
}

void run_audit(const AuditOptions& options, std::stop_token stop, AuditSeams seams) {
    seams = with_defaults(std::move(seams));
    AuditMetrics metrics(options.metrics->registry());
    std::deque<BrokerOutage> outages;
    bool consuming = false;  // the last session reached the point of consuming
    run_with_reconnect("audit", stop, [&] {
        try {
            audit_session(options, seams, metrics, stop, outages, consuming);
        } catch (const amqp::Error&) {
            if (consuming) {  // lost the broker (not a failed reconnect attempt)
                outages.push_back(
                    {std::chrono::time_point_cast<Milliseconds>(seams.now()), std::nullopt});
                if (outages.size() > kOutagesKept) outages.pop_front();
            }
            consuming = false;
            throw;
        } catch (...) {
            consuming = false;
            throw;
        }
    });
}

}  // namespace hourglass::audit
