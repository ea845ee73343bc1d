// The lease simulation's model of the store (tests/unit/loader/lease_simulation_test.cpp):
// hourglass.instances, instance_fences and jobs, statement by statement as src/store/sql has
// them, each atomic at the instant PostgreSQL runs it, and the timings the instances run with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "loader/lease_keeper.hpp"

namespace hourglass::loader::lease_simulation {

using Ms = std::int64_t;  // virtual milliseconds: PostgreSQL's clock and every monotonic clock

constexpr Ms kHorizon = 60000;
constexpr Ms kLease = 5000;              // shorter than a burst is held: leases expire in memory
constexpr Ms kClaimEvery = 500;
constexpr Ms kPublishTick = 20;
constexpr Ms kRecordAfter = 50;
constexpr Ms kLockTimeout = 2000;        // store::kSessionLockWait
constexpr Ms kRunFor = 120000;
constexpr Ms kMaxParked = 15000;
constexpr Ms kSessionEndsAfterCut = 3000;  // tcp_keepalives_idle 1 s + 2 probes 1 s apart
constexpr Ms kBriefRowLockWait = 250;      // store/row_locks.hpp

// Which runs a claim may take from another owner: the ownership rule, or the rule before it
// (an expired lease of an owner merely silent for the takeover time), kept to show that the
// simulation finds what the rule fixed.
enum class Rule { fenced_owners_only, silent_owners_too };
// Which instance may fence others: one that has beaten without a break (each beat within the
// publish grace of the one before) for the grace itself (heartbeat.sql), or, as before,
// one whose previous beat is within the grace, kept to show what the simulation finds with it:
// right after a stall, a taker beating twice in a row fenced an instance whose beat, and the
// record of a run it had published, still waited behind the stall.
enum class Taker { unbroken_for_the_grace, fresh_previous_beat };
// What a fence gives back: the claims of a fenced instance once none of its sessions is open
// (release_claims_of_fenced_owners.sql; the fenced instance gives back itself what it never
// published), or, as before, all of them at once, kept to show what the simulation finds with
// it: a record held up by locked rows lands after another instance claimed the run again.
enum class GiveBack { once_sessions_end, at_the_fence };
// Which faults on a run's first publisher explain its publish by another: a crash, or a cut
// from PostgreSQL long enough to end its sessions (SPEC's window: its record never comes), or,
// as the simulation accepted before the give-back once sessions end, any pause, cut or lock on
// its registration.
enum class Explained { crash_or_sessions_ended, any_fault_on_the_publisher };

struct Job {
    int id = 0;
    Ms due = 0;
    std::optional<int> owner;
    Ms lease_until = 0;
    bool handed_over = false;
};

// hourglass.instances, instance_fences and jobs, and the faults PostgreSQL itself suffers.
struct Store {
    std::map<int, Ms> heartbeat_at;  // registrations
    std::map<int, Ms> beating_since;  // the start of each one's unbroken run of beats
    std::set<int> fences;
    std::map<int, Ms> registration_locked_until;  // a transaction elsewhere holds the row
    std::vector<Job> jobs;
    Ms stalled_until = 0;
    Ms jobs_locked_until = 0;  // a transaction elsewhere holds every job row
    Rule rule = Rule::fenced_owners_only;
    Taker taker = Taker::unbroken_for_the_grace;
    GiveBack give_back = GiveBack::once_sessions_end;
    std::function<bool(int instance)> session_open;  // pg_stat_activity, now

    bool jobs_locked(Ms at) const { return at < jobs_locked_until; }
    // Whether a fence gives back `owner`'s claims now.
    bool claims_go(int owner) const {
        return give_back == GiveBack::at_the_fence || !session_open(owner);
    }

    bool row_locked(int instance, Ms at) const {
        const auto it = registration_locked_until.find(instance);
        return it != registration_locked_until.end() && at < it->second;
    }
    bool owner_may_be_taken_from(int owner, Ms now, int taker) const {
        if (owner == taker) return false;
        const auto registered = heartbeat_at.find(owner);
        if (rule == Rule::silent_owners_too) {
            return registered == heartbeat_at.end() ||
                   registered->second < now - kTakeoverAfter.count();
        }
        return (registered == heartbeat_at.end() || fences.contains(owner)) && claims_go(owner);
    }
    // heartbeat.sql, then (if the beater's previous beat is fresh) forget_dead_instances.sql,
    // release_claims_of_owners.sql and forget_fenced_instances.sql, in one transaction.
    struct Beat {
        bool registered = false;
        std::vector<int> fenced;
    };
    Beat heartbeat(int instance, Ms now) {
        Beat beat;
        const auto it = heartbeat_at.find(instance);
        if (it == heartbeat_at.end() || fences.contains(instance)) return beat;
        beat.registered = true;
        const auto previous = it->second;
        it->second = now;
        auto& since = beating_since[instance];
        if (now - previous >= kPublishGrace.count()) since = now;
        const bool may_fence = taker == Taker::fresh_previous_beat
                                   ? now - previous < kPublishGrace.count()
                                   : now - since >= kPublishGrace.count();
        if (!may_fence) return beat;
        for (const auto& [other, at] : heartbeat_at) {
            if (other != instance && at < now - kTakeoverAfter.count() && !fences.contains(other)) {
                fences.insert(other);
                beat.fenced.push_back(other);
            }
        }
        // Of every fenced instance, as its sessions end (rows locked elsewhere are passed by).
        for (auto& job : jobs) {
            if (job.owner && fences.contains(*job.owner) && claims_go(*job.owner) && !jobs_locked(now)) {
                job.owner.reset();
            }
        }
        // forget_fenced_instances.sql: the fences stay until their instance registers again.
        for (const auto fenced : fences) {
            if (!row_locked(fenced, now)) heartbeat_at.erase(fenced);
        }
        return beat;
    }
    void register_instance(int instance, Ms now) {
        fences.erase(instance);
        heartbeat_at[instance] = now;
        beating_since[instance] = now;
    }
    // claim_due.sql: fresh runs due within the horizon, and expired leases of owners it may
    // take from.
    std::vector<int> claim(int instance, Ms now) {
        std::vector<int> taken;
        if (fences.contains(instance)) return taken;
        for (auto& job : jobs) {
            if (job.handed_over || job.due > now + kHorizon || jobs_locked(now)) continue;
            const bool fresh = !job.owner;
            const bool expired = job.owner && job.lease_until < now &&
                                 owner_may_be_taken_from(*job.owner, now, instance);
            if (!fresh && !expired) continue;
            job.owner = instance;
            job.lease_until = now + kLease;
            taken.push_back(job.id);
        }
        return taken;
    }
    // False when the rows are held elsewhere: the recorder tries again later.
    bool record(int instance, const std::vector<int>& ids, Ms now) {
        if (jobs_locked(now)) return false;
        for (const auto id : ids) {
            auto& job = jobs[static_cast<std::size_t>(id)];
            if (job.owner == instance) {
                job.handed_over = true;
                job.owner.reset();
            }
        }
        return true;
    }
    // release_orphaned_claims.sql: runs leased to `instance` by a claim older than the orphan
    // age, that it did not hold when it looked.
    void release_orphans(int instance, const std::set<int>& held, Ms now) {
        for (auto& job : jobs) {
            if (job.owner == instance && !job.handed_over && !held.contains(job.id) && !jobs_locked(now) &&
                job.lease_until < now + kLease - kOrphanAge.count()) {
                job.owner.reset();
            }
        }
    }
    void release_all(int instance) {
        for (auto& job : jobs) {
            if (job.owner == instance) job.owner.reset();
        }
    }
    void release(int instance, const std::vector<int>& ids) {
        for (const auto id : ids) {
            auto& job = jobs[static_cast<std::size_t>(id)];
            if (job.owner == instance) job.owner.reset();
        }
    }
};

struct Publish {
    int job = 0;
    int instance = 0;
    Ms at = 0;
};

}  // namespace hourglass::loader::lease_simulation
