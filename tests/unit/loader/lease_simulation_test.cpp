// A deterministic simulation of the ownership rule (docs/architecture.md "Fencing"): instances
// that beat, claim, publish and record against a model of the store's statements, on one
// virtual clock, with one seeded scheduler that injects the faults of a bad day: PostgreSQL
// stalled, a transaction holding an instance's registration, a process paused, one instance cut
// from PostgreSQL, lost commit replies. Each instance's decision to publish is the real
// LeaseKeeper's, with the real timings; the store model follows the SQL of src/store/sql
// (heartbeat.sql, forget_dead_instances.sql, forget_fenced_instances.sql, claim_due.sql,
// record_handed_over.sql) statement by statement, each atomic at the instant PostgreSQL runs it.
//
// Also job rows held by another transaction (a record that meets them waits and tries again
// on LockedRowsRetry's schedule; claims and give-backs pass them by), and an instance killed.
// Sessions: an instance's sessions stay open unless it is killed or has been cut from
// PostgreSQL for the server's keepalive bound (store::connect).
//
// Invariants, checked at every publish and at the end of each run:
//  - a run is published only by the instance the store leases it to at that instant (two
//    owners never both believe a run is theirs);
//  - a run published again has a cause: its first publisher was cut from PostgreSQL between
//    that publish and its record (SPEC's window: its sessions end, its record never comes);
//    each such duplicate is counted, and one without that cause is a violation;
//  - nothing is lost: every job is published by the end;
//  - nothing is early, and nothing is parked: each job is published within kMaxParked of the
//    later of its due time and the end of the last fault.
//
// Replay one seed, with its trace: HOURGLASS_LEASE_SEED=1234 build/tests/hourglass_unit_tests
// --gtest_filter='LeaseSimulation.*'. HOURGLASS_LEASE_SEEDS sets how many seeds the search runs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "unit/loader/lease_simulation.hpp"

namespace hourglass::loader {
namespace {

using namespace lease_simulation;

std::optional<std::uint64_t> replay_seed() {
    const char* seed = std::getenv("HOURGLASS_LEASE_SEED");
    if (!seed) return std::nullopt;
    return std::strtoull(seed, nullptr, 10);
}

std::uint64_t seed_count() {
    const char* seeds = std::getenv("HOURGLASS_LEASE_SEEDS");
    return seeds ? std::strtoull(seeds, nullptr, 10) : 2000;
}

// The stall of the issue: a burst held in memory past its lease by instance 0, every heartbeat
// held up 5 s by PostgreSQL twenty seconds before the burst's instant.
void the_five_second_stall(Simulation& simulation) { simulation.stall_postgresql(30000, 5000); }

TEST(LeaseSimulation, the_five_second_stall_releases_every_job_once) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        Simulation simulation(seed, Rule::fenced_owners_only, false);
        const auto violation = simulation.run(the_five_second_stall);
        EXPECT_FALSE(violation) << "seed " << seed << ": " << *violation;
    }
}

// The simulation finds what the ownership rule fixed: with the claim's old expired-lease rule,
// the same stall makes two instances publish the runs of one lease.
TEST(LeaseSimulation, finds_the_five_second_stall_under_the_rule_before_fencing) {
    int found = 0;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        Simulation simulation(seed, Rule::silent_owners_too, false);
        if (simulation.run(the_five_second_stall)) ++found;
    }
    EXPECT_GT(found, 0) << "the old rule survived the stall in every seed";
}

// The simulation finds what the taker's rule fixed: with a taker whose previous beat alone is
// fresh, a stall longer than the takeover interval ends with some instance beating twice in a
// row and fencing one whose beat, and its record of a run it had published, waited behind the
// stall: that run is published again, with no fault on its publisher to explain it.
TEST(LeaseSimulation, finds_a_duplicate_after_a_stall_when_a_fresh_previous_beat_may_fence) {
    int found = 0;
    for (std::uint64_t seed = 1; seed <= 2000 && found == 0; ++seed) {
        Simulation simulation(seed, Rule::fenced_owners_only, false, Taker::fresh_previous_beat,
                              GiveBack::at_the_fence, Explained::any_fault_on_the_publisher);
        if (simulation.run([](Simulation& s) { s.random_faults(); })) ++found;
    }
    EXPECT_GT(found, 0) << "the fresh-previous-beat rule survived every seed";
}

// The simulation finds what the give-back once sessions end fixed (the fault campaign's 976
// duplicates): with a fence that gave back every claim of the fenced instance at once, a
// record held up (job rows another transaction holds, a pause, its registration held) lands
// after another instance claimed and published the run again, its first publisher neither
// crashed nor cut from PostgreSQL.
TEST(LeaseSimulation, finds_a_duplicate_when_a_fence_gives_back_what_a_connected_instance_published) {
    std::optional<std::string> found;
    for (std::uint64_t seed = 1; seed <= 2000 && !found; ++seed) {
        Simulation simulation(seed, Rule::fenced_owners_only, false, Taker::unbroken_for_the_grace,
                              GiveBack::at_the_fence);
        found = simulation.run([](Simulation& s) { s.random_faults(); });
    }
    ASSERT_TRUE(found) << "the give-back at the fence survived every seed";
    EXPECT_NE(found->find("published again"), std::string::npos) << *found;
}

// Thousands of seeds, each a day of random faults: none breaks an invariant.
TEST(LeaseSimulation, random_faults_never_break_the_invariants) {
    const auto replay = replay_seed();
    const auto first = replay.value_or(1);
    const auto last = replay ? *replay : seed_count();
    std::map<std::string, std::size_t> republished;
    std::size_t publishes = 0;
    for (auto seed = first; seed <= last; ++seed) {
        Simulation simulation(seed, Rule::fenced_owners_only, replay.has_value());
        const auto violation = simulation.run([](Simulation& s) { s.random_faults(); });
        ASSERT_FALSE(violation) << "seed " << seed << ": " << *violation
                                << "\nreplay: HOURGLASS_LEASE_SEED=" << seed
                                << " build/tests/hourglass_unit_tests --gtest_filter='LeaseSimulation.random*'";
        for (const auto& [cause, count] : simulation.republished_by_cause()) republished[cause] += count;
        publishes += simulation.publishes().size();
    }
    std::cout << "[lease simulation] seeds " << first << ".." << last << ", publishes " << publishes
              << "; published again before the first publisher's record, by its cause:";
    if (republished.empty()) std::cout << " none";
    for (const auto& [cause, count] : republished) std::cout << " " << cause << " " << count << ";";
    std::cout << "\n";
}

}  // namespace
}  // namespace hourglass::loader
