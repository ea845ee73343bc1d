#include "loader/claimer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "common/text.hpp"
#include "common/thread_name.hpp"
#include "delay/release_messages.hpp"
#include "hourglass/command.hpp"

namespace hourglass::loader {

Claimer::Claimer(Options options, Neighbours neighbours, Seams seams, StageClock clock)
    : options_(std::move(options)),
      with_(std::move(neighbours)),
      seams_(std::move(seams)),
      clock_(std::move(clock)),
      bursts_(options_.burst_min_runs, options_.bursts, options_.horizon, with_.ladder.step(),
              options_.max_shared_instants),
      forward_ladder_declared_(options_.forward_ladder_declared) {
    if (options_.resend_after) resend_rule_.emplace(*options_.resend_after, options_.health);
}

std::vector<std::string> Claimer::give_back_refused(store::ClaimStore& store) {
    auto& held_give_backs = held_give_backs_;
    auto& retry = retry_;
    auto [given_back, deferred] = with_.to_give_back.take();
    auto to_give_back = given_back;
    to_give_back.insert(to_give_back.end(), deferred.begin(), deferred.end());
    const bool tried_held = retry.due(clock_.steady());
    if (tried_held) {
        to_give_back.insert(to_give_back.end(), held_give_backs.begin(), held_give_backs.end());
        held_give_backs.clear();
    }
    std::vector<std::string> left;
    try {
        left = store.release_claims(options_.owner, to_give_back);
    } catch (...) {
        with_.to_give_back.refused(to_give_back);
        throw;
    }
    if (!given_back.empty() && to_give_back.size() > left.size()) {
        spdlog::info("loader: gave back {} claimed runs the broker did not confirm",
                     std::min(given_back.size(), to_give_back.size() - left.size()));
    }
    if (!left.empty() && !retry.waiting()) {
        spdlog::warn("loader: {} claimed runs the broker did not confirm wait to be given "
                     "back: another PostgreSQL transaction holds their rows",
                     left.size());
    }
    held_give_backs.insert(held_give_backs.end(), left.begin(), left.end());
    retry.settled(clock_.steady(), !held_give_backs.empty(), tried_held);
    return given_back;
}

bool Claimer::claim_round(store::ClaimStore& store, Pacing& pacing, bool refused_just_now) {
    const auto room = with_.board.room_for_claim();
    // A recorder far behind (PostgreSQL slow for it alone) holds claims back: the confirmed
    // runs waiting for it are bounded too.
    store::ClaimLimit limit{.runs = with_.confirmed.full() ? 0 : room.runs, .bytes = room.bytes};
    const bool woken = with_.doorbell.take_claim_asked();
    const auto steady_now = clock_.steady();
    // A burst whose runs wait in the store is a step away: claim them now, within the others'
    // bounds, so that they are in hand by the instant.
    const bool cut_reached = bursts_.cut_reached(clock_.now());
    const bool claim_now = pacing.backlog || woken || cut_reached || steady_now >= pacing.next_claim;
    if (claim_now) pacing.next_claim = steady_now + options_.poll_interval;
    // Runs just given back were refused by the broker: claiming them again at once would only
    // spin; the next poll (or a wake) tries again.
    const bool claimed = claim_now && limit.runs > 0 && !refused_just_now;
    // Asked every round, claim or not: a break it did not see would count as time observed.
    const auto lost_if_due_before =
        resend_rule_ ? resend_rule_->lost_if_due_before(clock_.now()) : std::nullopt;
    if (claimed) {
        // The lease covers the wait in memory before the publish, then `lease`.
        const auto now = clock_.now();
        auto horizon_end = now + options_.horizon;
        if (const auto cut = bursts_.cut()) horizon_end = std::min(horizon_end, *cut - Milliseconds{1});
        auto [runs, at_limit] = store.claim_due(options_.owner, horizon_end, limit,
                                                options_.claim_lease, lost_if_due_before);
        pacing.backlog = at_limit;
        if (!runs.empty()) spdlog::debug("loader: claimed {} runs", runs.size());
        const auto resent =
            std::count_if(runs.begin(), runs.end(), [](const auto& run) { return run.resent; });
        if (resent > 0) {
            spdlog::warn("loader: publishing {} runs again: handed over, but not released {} ms "
                         "after their due time",
                         resent, options_.resend_after->count());
            with_.metrics.count_runs_resent(static_cast<std::size_t>(resent));
        }
        set_aside_unpublishable(store, runs);
        // Runs given back wait for the next poll, as refused ones do.
        if (!prepare_forward_ladder(runs)) pacing.backlog = false;
        schedule_with_insert_claims(std::move(runs));
    } else if (claim_now) {
        schedule_with_insert_claims({});
    }
    // Ingest claims at insert only what no claim would take first: nothing is left in the
    // store for want of room, and no burst waits there.
    with_.insert_claims.set_open(!pacing.backlog && !bursts_.cut());
    return pacing.backlog && claimed;
}

void Claimer::wait_for_work(std::stop_token stop, const Pacing& pacing, bool others_done) {
    if (stop.stop_requested()) with_.insert_claims.set_open(false);
    auto wait = std::max(std::chrono::steady_clock::duration::zero(), pacing.next_claim - clock_.steady());
    if (const auto cut = bursts_.cut()) {
        wait = std::min<std::chrono::steady_clock::duration>(
            wait, std::max(Milliseconds{0}, *cut - with_.ladder.step() - clock_.now()));
    }
    with_.doorbell.wait_for(wait, [&] {
        // With a backlog, confirms that free room for a whole batch (or all of a smaller
        // limit) start the next claim at once.
        const auto room_for_a_batch = [&] {
            return with_.board.has_room_for(std::min(options_.claim_batch, options_.max_in_memory_runs)) &&
                   !with_.confirmed.full();
        };
        const bool done = with_.other_stages_done();
        return with_.to_give_back.any_refused() || (pacing.backlog && room_for_a_batch()) ||
               done != others_done || (stop.stop_requested() && done);
    });
}

void Claimer::run(std::stop_token stop, const store::StoreOptions& store_options) {
    // After `stop` the claimer keeps going until the publisher has finished, so that confirmed
    // runs are recorded. If the database fails after `stop`, leases simply expire.
    run_with_reconnect("loader (PostgreSQL)", stop, [&] {
        const auto connected = seams_.open_store(store_options);
        auto& store = *connected;
        spdlog::info("loader: connected to PostgreSQL");
        // No claims at insert while the claimer is away: it schedules them.
        const auto close_on_exit = std::unique_ptr<InsertClaimDesk, void (*)(InsertClaimDesk*)>(
            &with_.insert_claims, [](InsertClaimDesk* desk) { desk->set_open(false); });
        start_pacing();
        while (true) {
            const auto next = round(store, stop);
            if (next == Next::finished) return;
            if (next == Next::wait) wait_for_work(stop, pacing_, others_done_);
        }
    });
}

void Claimer::start_pacing() { pacing_ = Pacing{.next_claim = clock_.steady(), .backlog = true}; }

Claimer::Next Claimer::round(store::ClaimStore& store, std::stop_token stop) {
    if (with_.leases.claims_lost()) forget_lost_claims(store);
    if (stop.stop_requested()) take_insert_claims(true);  // gives them back
    others_done_ = with_.other_stages_done();  // after `stop`
    const auto given_back = give_back_refused(store);
    if (stop.stop_requested()) {
        if (!others_done_) return Next::wait;
        with_.insert_claims.close(kInsertClaimsCloseWait);
        finish_claims(store);
        return Next::finished;
    }
    return claim_round(store, pacing_, !given_back.empty()) ? Next::claim_again : Next::wait;
}

void Claimer::schedule(std::vector<ClaimedRun> runs) {
    if (runs.empty()) return;
    const auto now = clock_.now();
    // Prepared before taking the lock the publisher needs.
    std::vector<ScheduledRun> scheduled;
    scheduled.reserve(runs.size());
    for (auto& run : runs) {
        const auto after = seams_.next_run ? seams_.next_run(run, now) : AfterHandover{};
        if (after.catchup > 0) {
            set_header(run.properties, std::string(header::kCatchup),
                       static_cast<std::int64_t>(after.catchup));
        }
        // Headers count as well as bodies: a job may carry up to a frame of them.
        const auto bytes = run.body.size() + encoded_size(run.properties);
        const auto publish_at = with_.ladder.publish_at(run.due_at, now);
        scheduled.push_back(ScheduledRun{.publish_at = publish_at,
                                      .run = std::make_unique<ClaimedRun>(std::move(run)),
                                      .bytes = bytes,
                                      .observed_with = std::nullopt,
                                      .burst = false,
                                      .burst_held = false,
                                      .next_due = after.next_due,
                                      .skipped = after.skip});
    }
    std::vector<std::string> deferred;
    const auto held = with_.board.schedule(
        std::move(scheduled), [&](std::vector<ScheduledRun>& kept, MemoryLedger& ledger) {
            mark_bursts(kept, now, ledger, deferred);
            // Held before the publisher can see them, so that it never ends a run not yet held.
            std::vector<std::string> ids;
            ids.reserve(kept.size());
            for (const auto& entry : kept) ids.push_back(entry.run->id);
            with_.held.add(ids);
        });
    with_.metrics.set_runs_held(held);
    if (!deferred.empty()) with_.to_give_back.deferred(deferred);
}

void Claimer::mark_bursts(std::vector<ScheduledRun>& scheduled, TimePoint now, MemoryLedger& ledger,
                          std::vector<std::string>& deferred) {
    std::vector<PlannedRun> runs;
    runs.reserve(scheduled.size());
    for (const auto& entry : scheduled) runs.push_back({entry.run->due_at, entry.bytes});
    const auto plans = bursts_.plan(runs, now, ledger);
    std::vector<ScheduledRun> kept;
    kept.reserve(scheduled.size());
    for (std::size_t i = 0; i < scheduled.size(); ++i) {
        auto& entry = scheduled[i];
        if (plans[i] == BurstPlan::deferred) {
            deferred.push_back(entry.run->id);
            continue;
        }
        if (plans[i] != BurstPlan::delay_queues) {
            entry.burst = true;
            entry.publish_at = entry.run->due_at;
            entry.burst_held = plans[i] == BurstPlan::burst_held;
        }
        kept.push_back(std::move(entry));
    }
    scheduled = std::move(kept);
}

void Claimer::set_aside_unpublishable(store::ClaimStore& store, std::vector<ClaimedRun>& runs) {
    std::vector<store::ClaimStore::SetAsideRun> set_aside;
    std::erase_if(runs, [&](const ClaimedRun& run) {
        auto reason = delay::unpublishable_reason(run);
        if (reason) set_aside.push_back({run.id, run.routing_key, "cannot be published: " + *reason});
        return reason.has_value();
    });
    if (set_aside.empty()) return;
    store.set_aside(options_.owner, set_aside);
    with_.metrics.count_runs_set_aside(set_aside.size());
    spdlog::error("loader: set aside {} runs that AMQP cannot carry, cancelled with their reason "
                  "in hourglass.rejections; job {}: {}",
                  set_aside.size(), quote_value(set_aside.front().id, 64), set_aside.front().reason);
}

bool Claimer::prepare_forward_ladder(std::vector<ClaimedRun>& runs) {
    const auto targeted = [](const ClaimedRun& run) { return !run.exchange.empty(); };
    if (forward_ladder_declared_ || std::none_of(runs.begin(), runs.end(), targeted)) return true;
    // The claim that starts the declaration waits for it a while (0.2 s is usual); later claims
    // only look whether it has ended.
    const bool starting = !forward_ladder_declaration_.valid();
    if (starting) {
        // On a thread of its own, so that a broker that stalls it holds up no claim of the other
        // runs. Detached: the task owns a copy of the seam, and a declaration still blocked
        // when the loader ends must not hold up the process's exit.
        std::packaged_task<void()> declaration(seams_.declare_forward_ladder);
        forward_ladder_declaration_ = declaration.get_future();
        std::thread([task = std::move(declaration)]() mutable {
            name_this_thread("hg-loader-decl");
            task();
        }).detach();
    }
    const auto wait = starting ? options_.forward_ladder_wait : Milliseconds{0};
    if (forward_ladder_declaration_.wait_for(wait) == std::future_status::ready) {
        try {
            std::exchange(forward_ladder_declaration_, {}).get();
            forward_ladder_declared_ = true;
            spdlog::info("loader: declared the forward ladder for runs with a target exchange");
            return true;
        } catch (const std::exception& error) {
            const auto grant = forward_ladder_log_.take(clock_.steady());
            if (grant.log) {
                spdlog::warn(
                    "loader: could not declare the forward ladder, so runs with a target "
                    "exchange wait for the next claim: {}{}",
                    error.what(), left_out_note(grant.left_out, "failures"));
            }
        }
    }
    const auto first_targeted = std::stable_partition(
        runs.begin(), runs.end(), [&](const ClaimedRun& run) { return !targeted(run); });
    std::vector<std::string> ids;
    for (auto it = first_targeted; it != runs.end(); ++it) ids.push_back(it->id);
    with_.to_give_back.refused(ids);
    runs.erase(first_targeted, runs.end());
    return false;
}

// Another instance fenced this one: it publishes nothing more until it registers again. The
// fence gave back nothing while this instance's sessions were open (its records of runs it
// published may still commit), so it gives back itself what it never published: the runs
// waiting for their instant and those adopted from ingest. Runs published stay its own until
// the recorder records them (or the publisher gives back those never confirmed); runs it
// claimed and never held are orphans, given back by the heartbeat's reconciliation.
void Claimer::forget_lost_claims(store::ClaimStore& store) {
    auto unpublished = with_.board.forget_scheduled();
    const auto adopted = with_.insert_claims.take_all_ids();
    unpublished.insert(unpublished.end(), adopted.begin(), adopted.end());
    // Offers first: whatever ingest leases under an offer made before is an orphan.
    with_.insert_claims.forget_claims();
    with_.held.remove(unpublished);
    const auto kept = store.release_claims(options_.owner, unpublished);
    if (!kept.empty()) {
        // Rows another transaction holds: given back once its lock ends, as refused runs are.
        held_give_backs_.insert(held_give_backs_.end(), kept.begin(), kept.end());
        retry_.settled(clock_.steady(), true, false);
    }
    with_.leases.claims_forgotten();
    spdlog::warn("loader: fenced by another instance: gave back {} claimed runs it had not "
                 "published; the runs it published are recorded as its own",
                 unpublished.size() - kept.size());
}

void Claimer::finish_claims(store::ClaimStore& store) {
    auto unpublished = with_.board.take_unpublished();
    const auto adopted = with_.insert_claims.take_all_ids();
    unpublished.insert(unpublished.end(), adopted.begin(), adopted.end());
    // Rows another transaction holds stay claimed: taken over once the lease ends.
    const auto kept = store.release_claims(options_.owner, unpublished).size();
    if (unpublished.size() > kept) {
        spdlog::info("loader: gave back {} claimed runs not yet published",
                     unpublished.size() - kept);
    }
    // Runs published but not confirmed in time go back too (at least once), and the instance
    // leaves: nobody waits for its heartbeat to go stale.
    store.release_all_claims(options_.owner);
    store.leave(options_.owner);
}

InsertClaimDesk::Adopted Claimer::take_insert_claims(bool stopping) {
    std::vector<std::string> give_back;
    auto taken = with_.insert_claims.take(stopping, give_back);
    if (!give_back.empty()) {
        with_.to_give_back.refused(give_back);
        with_.held.remove(give_back);
    }
    return taken;
}

void Claimer::schedule_with_insert_claims(std::vector<ClaimedRun> claimed) {
    auto adopted = take_insert_claims(false);
    with_.metrics.count_claimed_at_insert(adopted.runs.size());
    const auto adopted_ids = ids_of(adopted.runs);
    claimed.insert(claimed.end(), std::make_move_iterator(adopted.runs.begin()),
                   std::make_move_iterator(adopted.runs.end()));
    schedule(std::move(claimed));
    with_.held.remove(adopted_ids);  // held since their adoption, and by schedule() now
    // Scheduled, they count as held: their offers' room is no longer reserved.
    with_.board.end_reservation(adopted.reserved);
}

}  // namespace hourglass::loader
