#include "cron/recurrence.hpp"

#include <spdlog/spdlog.h>

#include <deque>

#include "common/text.hpp"
#include "hourglass/cron.hpp"

namespace hourglass::cron {

namespace {
// Counting the coalesced runs is for the log only; stop counting after this many.
constexpr std::size_t kMaxCoalescedCount = 100000;
}  // namespace

std::variant<TimePoint, std::string> first_run(const CronSpec& spec, TimePoint accepted_at) {
    auto parsed = parse(spec.expression);
    if (auto* error = std::get_if<ParseError>(&parsed)) return "x-cron: " + error->message;
    const auto& expression = std::get<CronExpression>(parsed);
    const auto* zone = find_zone(spec.zone);
    if (zone == nullptr) return "x-cron-tz: unknown time zone " + quote_value(spec.zone);
    if (!can_ever_fire(expression)) {
        return "x-cron: " + quote_value(spec.expression) + " can never fire (no such date)";
    }
    const auto first = next_occurrence(expression, *zone, accepted_at);
    if (!first) return "x-cron: " + quote_value(spec.expression) + " has no run in the years ahead";
    if (spec.until && *first > *spec.until) {
        return "x-cron-until: " + quote_value(spec.expression) + " has no run before " +
               format_rfc3339_ms(*spec.until);
    }
    return *first;
}

NextRun next_run(const CronSpec& spec, int run, TimePoint due, TimePoint now) {
    NextRun result;
    auto parsed = parse(spec.expression);
    const auto* expression = std::get_if<CronExpression>(&parsed);
    const auto* zone = find_zone(spec.zone);
    // Stored jobs were validated on the way in; a row edited by hand into nonsense just ends.
    if (expression == nullptr || zone == nullptr) return result;

    // The later runs already due, the latest kMaxCatchupRuns of them kept (for `all`).
    std::deque<TimePoint> later;
    std::size_t later_count = 0;
    auto next = next_occurrence(*expression, *zone, due);
    while (next && *next <= now && later_count < kMaxCoalescedCount) {
        ++later_count;
        later.push_back(*next);
        if (later.size() > kMaxCatchupRuns) later.pop_front();
        next = next_occurrence(*expression, *zone, *next);
    }
    result.missed = later_count > 0;
    if (spec.limit && run >= *spec.limit) return result;
    if (result.missed && spec.catchup == Catchup::all && later_count < kMaxCoalescedCount) {
        // This run and the later ones, kMaxCatchupRuns at most: the oldest fold into this one.
        const auto released = std::min(later_count, kMaxCatchupRuns - 1);
        result.coalesced = later_count - released;
        next = later[later.size() - released];
    } else {
        result.coalesced = later_count;
        if (next && *next <= now) next = next_occurrence(*expression, *zone, now);
    }
    if (next && spec.until && *next > *spec.until) next.reset();
    result.due = next;
    return result;
}

AfterHandover NextDueAfterHandover::operator()(const ClaimedRun& run, TimePoint now) {
    if (!run.cron) return {};
    const auto next = next_run(*run.cron, run.run, run.due_at, now);
    const bool skip = next.missed && run.cron->catchup == Catchup::skip;
    if (next.coalesced > 0 || skip) {
        if (const auto grant = coalesced_lines_.take(LogBudget::Clock::now()); grant.log) {
            if (skip) {
                spdlog::info("job {}: run {} (due {}) and {} later runs missed, skipped "
                             "(x-cron-catchup: skip){}",
                             quote_value(run.id, 64), run.run, format_rfc3339_ms(run.due_at),
                             next.coalesced, left_out_note(grant.left_out, "coalescings"));
            } else {
                spdlog::info("job {}: {} missed runs of {} coalesced into run {} (due {}){}",
                             quote_value(run.id, 64), next.coalesced,
                             quote_value(run.cron->expression), run.run,
                             format_rfc3339_ms(run.due_at),
                             left_out_note(grant.left_out, "coalescings"));
            }
        }
    }
    return {.next_due = next.due,
            .catchup = next.missed && !skip ? 1 + next.coalesced : 0,
            .skip = skip};
}

}  // namespace hourglass::cron
