#include "delay/release_messages.hpp"

#include <spdlog/spdlog.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "common/text.hpp"

namespace hourglass::delay {

ReleaseMessages::ReleaseMessages(TopologyOptions topology, DelayLadder ladder,
                                 bool releases_observed)
    : topology_(std::move(topology)), ladder_(std::move(ladder)), releases_observed_(releases_observed) {}

std::optional<std::string> unpublishable_reason(const ClaimedRun& run) {
    for (const auto& [what, name] : {std::pair<const char*, const std::string*>{"routing key", &run.routing_key},
                                     {"x-hourglass-exchange", &run.exchange}}) {
        if (name->size() > kMaxShortStringBytes) {
            return std::string(what) + ": " + std::to_string(name->size()) +
                   " bytes; AMQP holds at most " + std::to_string(kMaxShortStringBytes);
        }
    }
    return hourglass::unpublishable_reason(run.properties);
}

Message ReleaseMessages::release(ClaimedRun& run, TimePoint now, std::size_t frame_max,
                                 unsigned lane, const std::optional<RunRef>& observed_with,
                                 bool burst) const {
    const auto ttl = ladder_.ttl_for(run.due_at, now);
    Message message;
    message.routing_key = run.routing_key;
    message.body = std::move(run.body);
    message.properties = std::move(run.properties);
    message.properties.delivery_mode = 2;
    set_header(message.properties, std::string(header::kId), run.id);
    set_header(message.properties, std::string(header::kDue), format_rfc3339_ms(run.due_at));
    set_header(message.properties, std::string(header::kRun), static_cast<std::int64_t>(run.run));
    // A burst run is published at its due time into the exchange its delay queue dead-letters
    // into, which routes it at once, as the queue would when its TTL expires.
    const auto& names = topology_.names;
    if (run.exchange.empty()) {
        message.exchange = burst ? names.release : names.delay(ttl, lane);
    } else {
        // The forwarder reads the target from this header and removes it before the release.
        message.exchange = burst ? names.forward : names.forward_delay(ttl);
        set_header(message.properties, std::string(header::kExchange), run.exchange);
        // The forwarder copies every targeted release to the audit but those it is told the
        // audit observes with another run (and removes this header too). Ingest strips
        // x-hourglass-* headers from commands; a row edited by hand gets no say either.
        if (releases_observed_ && observed_with) {
            set_header(message.properties, std::string(header::kObservedWith), observed_with->id);
        } else {
            remove_header(message.properties, header::kObservedWith);
        }
    }
    if (releases_observed_ && !observed_with && run.exchange.empty()) {
        // RabbitMQ routes with BCC keys (also when it dead-letters) and strips the header.
        set_header(message.properties, "BCC", FieldArray{FieldValue{names.audit_key}});
    }
    // Ingest refuses jobs whose release would not fit a frame; a row stored before that check,
    // or edited by hand, is still released rather than failing every publish (reference §4).
    const auto dropped = drop_largest_headers(message.properties,
                                              frame_max - kContentHeaderOverhead, "x-hourglass-");
    if (!dropped.empty()) {
        spdlog::error("loader: job {} run {} did not fit a frame: released without {} headers",
                      quote_value(run.id, 64), run.run, dropped.size());
        set_header(message.properties, std::string(header::kError),
                   describe_dropped_headers(dropped));
    }
    return message;
}

Message ReleaseMessages::expired(ClaimedRun& run, TimePoint now, std::size_t frame_max,
                                 bool skipped) const {
    const auto late = std::chrono::duration_cast<Milliseconds>(now - run.due_at);
    const auto reason =
        skipped ? "skipped: missed (a later run was due when it was handed over, " +
                      std::to_string(late.count()) + " ms after its due time) and "
                      "x-cron-catchup is skip"
                : "expired: handed over " + std::to_string(late.count()) +
                      " ms after its due time, more than x-hourglass-expires-after (" +
                      std::to_string(run.expires_after->count()) + " ms)";
    auto message = release(run, now, frame_max, 0, std::nullopt, true);
    message.exchange = topology_.names.expired;
    remove_header(message.properties, "BCC");  // nothing observes it
    remove_header(message.properties, header::kObservedWith);
    set_header(message.properties, std::string(header::kError), reason);
    return message;
}

std::vector<std::optional<RunRef>> ReleaseMessages::group(std::span<const BatchRun> batch,
                                                           TimePoint now, unsigned first_lane) const {
    std::vector<std::optional<RunRef>> observed_with(batch.size());
    if (!releases_observed_) return observed_with;
    const auto lanes = topology_.delay_lanes;
    // Walked from the last publish back: the first run met for a (queue, due time) is its last.
    // A queue: (targeted, burst, TTL, lane); burst runs all go to the release exchange, or the
    // forward queue if targeted, in the order of this one channel.
    std::map<std::tuple<bool, bool, Milliseconds, unsigned, TimePoint>, RunRef> last_of_group;
    for (auto i = batch.size(); i-- > 0;) {
        const auto& run = *batch[i].run;
        // A run routed with the audit key itself is copied to the audit whatever it carries.
        // Recurring runs take part (migration 013 finds them once their row moved on).
        if (run.routing_key == topology_.names.audit_key) continue;
        if (batch[i].expired) continue;  // to <prefix>.expired, not a delay queue
        // The forward ladder has one queue per TTL, apart from the delay ladder's lanes.
        const bool targeted = !run.exchange.empty();
        const bool burst = batch[i].burst;
        const auto lane =
            targeted || burst ? 0u : static_cast<unsigned>((first_lane + i) % lanes);
        const auto ttl = burst ? Milliseconds{0} : ladder_.ttl_for(run.due_at, now);
        const auto key = std::make_tuple(targeted, burst, ttl, lane, run.due_at);
        const auto [last, inserted] = last_of_group.try_emplace(key, RunRef{run.id, run.run});
        // Runs of an earlier group are observed with this one: it takes its own copy.
        if (!inserted && !run.observe_itself) observed_with[i] = last->second;
    }
    return observed_with;
}

}  // namespace hourglass::delay
