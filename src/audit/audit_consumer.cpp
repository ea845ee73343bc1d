#include "audit/audit_consumer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "audit/audit_metrics.hpp"
#include "common/log_budget.hpp"
#include "common/retry.hpp"
#include "hourglass/command.hpp"

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

// How often each audit looks for parked releases while it knows of none: those another
// instance parked before it stopped (the check costs one read of an empty table).
constexpr std::chrono::seconds kParkedCheck{5};

// How often the audit sends a release probe (delay/topology.hpp).
constexpr std::chrono::seconds kProbeEvery{1};

bool is_probe(const Message& message) {
    return find_header(message.properties, header::kProbe) != nullptr &&
           find_header(message.properties, header::kId) == nullptr;
}

AuditSeams with_defaults(AuditSeams seams, const AuditOptions& audit_options) {
    if (!seams.open_store) {
        seams.open_store = store::open_release_store;
    }
    if (!seams.open_feed) {
        seams.open_feed = [](const AuditOptions& options) {
            return open_release_feed(options.amqp, options.names, options.prefetch);
        };
    }
    // The latest PostgreSQL's clock may read (DatabaseClock::latest_us): a release is never
    // recorded as before the instant it was observed.
    if (!seams.now) seams.now = [clock = audit_options.clock] { return clock->latest_us(); };
    return seams;
}

// One connection's session of the audit: copies of releases read from the audit queue, recorded
// in batches (held longer in a burst), acked once recorded; releases parked because another
// transaction holds their rows recorded later.
class AuditSession {
public:
    AuditSession(const AuditOptions& options, const AuditSeams& seams, AuditMetrics& metrics,
                 std::deque<BrokerOutage>& outages)
        : options_(options),
          seams_(seams),
          metrics_(metrics),
          outages_(outages),
          store_(seams.open_store(options.store)),
          feed_(seams.open_feed(options)) {
        if (!outages_.empty() && !outages_.back().back_at) outages_.back().back_at = now();
    }

    void run(std::stop_token stop) {
        while (!stop.stop_requested()) {
            probe_if_due();
            auto wake_at = std::min({flush_at_, retry_.waiting() ? retry_.at() : parked_check_at_,
                                     probe_at_});
            auto wait = std::chrono::microseconds{100000};
            if (wake_at != kNoBatch) {
                wait = std::max(std::chrono::microseconds{0},
                                std::chrono::duration_cast<std::chrono::microseconds>(wake_at - Clock::now()));
            }
            if (auto event = feed_->next_event(wait)) {
                if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) take(*delivery);
            } else if (Clock::now() >= flush_at_) {
                flush();
            }
            if (parked_due()) record_parked();
        }
        flush();
    }

private:
    using Clock = std::chrono::steady_clock;
    static constexpr auto kNoBatch = Clock::time_point::max();  // flush_at_ while the batch is empty

    TimePoint now() const { return std::chrono::time_point_cast<Milliseconds>(seams_.now()); }

    // Of a batch, the least time from a run's due time to its copy's arrival: how far behind
    // the releases the audit queue is (its freshest copy; a copy of a run re-sent long after
    // its due time says nothing of the queue).
    static Milliseconds least_behind(const std::vector<ObservedRelease>& batch) {
        auto least = Milliseconds::max();
        for (const auto& release : batch) {
            least = std::min(least, std::chrono::duration_cast<Milliseconds>(
                                        release.released_at - release.due));
        }
        return std::max(least, Milliseconds{0});
    }

    void probe_if_due() {
        if (Clock::now() < probe_at_) return;
        feed_->send_probe(now());
        probe_at_ = Clock::now() + kProbeEvery;
    }

    // A copy from the audit queue: into the batch, or settled without a record (a release
    // doubted around an outage, a foreign message); flushes when the batch is due.
    void take(const amqp::Delivery& delivery) {
        const auto received_at = seams_.now();
        bool recording = false;
        if (auto release = observed_release(delivery.message, received_at)) {
            if (options_.doubt_releases_around_outages && !outages_.empty() &&
                released_while_the_broker_went_down(dead_lettered_at(delivery.message), outages_)) {
                if (doubted_++ == 0) {
                    spdlog::info("audit: releases dead-lettered while the broker went down are not "
                                 "recorded: it may have dropped your queues' copy, so they are "
                                 "published again after --resend-after");
                }
            } else {
                batch_.push_back(std::move(*release));
                batch_tags_.push_back(delivery.delivery_tag);
                recording = true;
            }
        } else if (is_probe(delivery.message)) {
            options_.health->set_probe_returned(
                std::chrono::time_point_cast<Milliseconds>(received_at));
        } else if (const auto grant = foreign_lines_.take(Clock::now()); grant.log) {
            spdlog::warn("audit: a message without hourglass headers on {}; ignored{}",
                         options_.names.audit, left_out_note(grant.left_out, "such messages"));
        }
        if (!recording) unrecorded_tags_.push_back(delivery.delivery_tag);
        const auto arrived = Clock::now();
        if (flush_at_ == kNoBatch) first_at_ = arrived;
        if (burst_) {
            flush_at_ = std::min(arrived + options_.burst_quiet, first_at_ + options_.burst_hold);
            // The broker sends no more until these are acked.
            if (batch_tags_.size() + unrecorded_tags_.size() >= options_.prefetch) flush();
        } else {
            if (flush_at_ == kNoBatch) flush_at_ = arrived + options_.batch_wait;
            if (batch_.size() >= options_.batch_size) flush();
        }
    }

    void settle_parked(std::size_t parked, bool tried) {
        if (parked > 0 && !retry_.waiting()) {
            spdlog::warn(
                "audit: {} releases wait to be recorded: another PostgreSQL transaction holds "
                "their rows; they are kept in parked_releases and the other releases are "
                "recorded meanwhile",
                parked);
        } else if (parked == 0 && retry_.waiting()) {
            spdlog::info("audit: the releases that waited for locked rows are recorded");
        }
        retry_.settled(Clock::now(), parked > 0, tried);
        parked_known_ = parked;
        metrics_.set_releases_waiting(parked);
    }

    void record_parked() {
        const auto recorded = store_->record_parked_releases();
        metrics_.count_releases(0, recorded.lateness_ms);
        // A record that took some is not a failed try: the retry's time stays come, so the
        // next batch follows at once (a lock on many rows ends in seconds, not minutes).
        settle_parked(recorded.still_parked, /*tried=*/recorded.unparked == 0);
        parked_check_at_ = Clock::now() + kParkedCheck;
    }

    bool parked_due() const {
        const auto at = Clock::now();
        return retry_.waiting() ? retry_.due(at) : at >= parked_check_at_;
    }

    void flush() {
        if (batch_tags_.empty() && unrecorded_tags_.empty()) return;
        // The pace at which the batch's runs were due, not at which its copies came: copies that
        // waited in the socket while the last record ran come all at once, and taking that for
        // a burst held a steady load's copies for seconds and recorded them in one statement
        // that took the CPU the broker needed to release on time (bench/journal/2026-11-22-to-12-04.md).
        const auto [earliest, latest] = std::minmax_element(
            batch_.begin(), batch_.end(), [](const auto& a, const auto& b) { return a.due < b.due; });
        const auto span = std::max<Clock::duration>(
            batch_.empty() ? Clock::duration::zero() : latest->due - earliest->due,
            options_.batch_wait);
        const auto recorded = store_->record_releases(batch_);
        if (!batch_.empty()) options_.health->set_audit_behind(least_behind(batch_));
        burst_ = options_.burst_runs_per_second > 0 &&
                 static_cast<double>(recorded.lateness_ms.size()) >=
                     static_cast<double>(options_.burst_runs_per_second) *
                         std::chrono::duration<double>(span).count();
        metrics_.count_releases(batch_.size(), recorded.lateness_ms);
        // Every copy delivered is recorded, parked or not to be recorded: all are settled.
        // Tags grow with each delivery, so the last of either list acks them all.
        const auto last_of = [](const auto& tags) { return tags.empty() ? 0 : tags.back(); };
        feed_->ack(std::max(last_of(batch_tags_), last_of(unrecorded_tags_)), /*multiple=*/true);
        spdlog::debug("audit: recorded {} releases ({} runs), parked {}",
                      batch_.size() - recorded.parked.size(), recorded.lateness_ms.size(),
                      recorded.parked.size());
        if (!recorded.parked.empty()) {
            settle_parked(parked_known_ + recorded.parked.size(), /*tried=*/false);
        }
        batch_.clear();
        batch_tags_.clear();
        unrecorded_tags_.clear();
        flush_at_ = kNoBatch;
    }

    const AuditOptions& options_;
    const AuditSeams& seams_;
    AuditMetrics& metrics_;
    std::deque<BrokerOutage>& outages_;
    const std::unique_ptr<store::ReleaseStore> store_;
    const std::unique_ptr<ReleaseFeed> feed_;
    std::size_t doubted_ = 0;  // releases left to the re-send in this session
    std::vector<ObservedRelease> batch_;
    std::vector<std::uint64_t> batch_tags_;       // the delivery of each release in the batch
    std::vector<std::uint64_t> unrecorded_tags_;  // deliveries since the last flush not to record
    Clock::time_point flush_at_ = kNoBatch;
    Clock::time_point first_at_{};  // when the batch's first copy came
    bool burst_ = false;            // the last batch's runs were due at a burst's pace
    LogBudget foreign_lines_;  // whoever may publish to the audit queue decides how many
    // Releases parked because another transaction holds their rows (any instance's): tried
    // again when `retry_` says, and looked for every kParkedCheck while none is known.
    LockedRowsRetry retry_;
    Clock::time_point parked_check_at_ = Clock::now();
    Clock::time_point probe_at_ = Clock::now();  // when to send the next release probe
    std::size_t parked_known_ = 0;
};

void audit_session(const AuditOptions& options, const AuditSeams& seams, AuditMetrics& metrics,
                   std::stop_token stop, std::deque<BrokerOutage>& outages, bool& consuming) {
    AuditSession session(options, seams, metrics, outages);
    consuming = true;
    session.run(stop);
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
    seams = with_defaults(std::move(seams), options);
    AuditMetrics metrics(options.metrics->registry());
    std::deque<BrokerOutage> outages;
    bool consuming = false;  // the last session reached the point of consuming
    run_with_reconnect("audit", stop, [&] {
        try {
            audit_session(options, seams, metrics, stop, outages, consuming);
        } catch (const amqp::Error& error) {
            // A connection the broker closed while it keeps running (from the management API)
            // is no outage: its queues dead-lettered as ever meanwhile, copies and all.
            const auto* closed = dynamic_cast<const amqp::ConnectionError*>(&error);
            const bool broker_went_on = closed && closed->closed_by_running_broker();
            if (consuming && !broker_went_on) {  // lost the broker (not a failed reconnect attempt)
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
