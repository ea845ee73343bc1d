// The lease simulation's instances and faults (tests/unit/loader/lease_simulation_test.cpp):
// instances that beat, claim, publish and record against the store model on one virtual clock,
// with one seeded scheduler that injects the faults, and the invariants checked as they run.
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
#include "unit/loader/lease_model.hpp"

namespace hourglass::loader::lease_simulation {

class Simulation {
public:
    Simulation(std::uint64_t seed, Rule rule, bool trace, Taker taker = Taker::unbroken_for_the_grace,
               GiveBack give_back = GiveBack::once_sessions_end,
               Explained explained = Explained::crash_or_sessions_ended)
        : random_(seed), trace_(trace), explained_(explained) {
        store_.rule = rule;
        store_.taker = taker;
        store_.give_back = give_back;
        store_.session_open = [this](int i) {
            const auto& n = node(i);
            if (n.killed) return false;
            return !(now_ < n.cut_until && now_ - n.cut_since >= kSessionEndsAfterCut);
        };
    }

    // Runs one day and returns the first violated invariant, or nothing.
    std::optional<std::string> run(const std::function<void(Simulation&)>& faults) {
        const int instances = 2 + pick(0, 1);
        const int jobs = 100 + pick(0, 200);
        const Ms burst_at = pick(8000, 50000);
        for (int id = 0; id < jobs; ++id) {
            const Ms due = chance(0.5) ? burst_at : pick(3000, 70000);
            store_.jobs.push_back({id, due, std::nullopt, 0, false});
        }
        for (int i = 0; i < instances; ++i) nodes_.emplace_back();
        for (int i = 0; i < instances; ++i) {
            store_.register_instance(i, 0);
            at(pick(0, 999), [this, i] { beat(i); });
            at(pick(0, 499), [this, i] { claim(i); });
            at(pick(0, kPublishTick - 1), [this, i] { publish(i); });
            at(pick(0, kReconcileEvery.count()), [this, i] { reconcile(i); });
        }
        faults(*this);
        while (!events_.empty() && !violation_) {
            auto event = events_.top();
            events_.pop();
            now_ = event.at;
            if (now_ > kRunFor) break;
            event.action();
        }
        if (violation_) return violation_;
        return check_the_end();
    }

    // --- faults ---
    void stall_postgresql(Ms from, Ms length) {
        at(from, [this, length] {
            store_.stalled_until = std::max(store_.stalled_until, now_ + length);
            note("PostgreSQL stalls for " + std::to_string(length) + " ms");
        });
        faults_end_ = std::max(faults_end_, from + length);
    }
    void lock_registration(int instance, Ms from, Ms length) {
        node(instance).faults.push_back({"registration locked", from, from + length});
        at(from, [this, instance, length] {
            store_.registration_locked_until[instance] = now_ + length;
            note("a transaction holds instance " + std::to_string(instance) + "'s row for " +
                 std::to_string(length) + " ms");
        });
        faults_end_ = std::max(faults_end_, from + length);
    }
    void pause(int instance, Ms from, Ms length) {
        node(instance).faults.push_back({"paused", from, from + length});
        at(from, [this, instance, length] {
            node(instance).paused_until = std::max(node(instance).paused_until, now_ + length);
            note("instance " + std::to_string(instance) + " paused for " + std::to_string(length) + " ms");
        });
        faults_end_ = std::max(faults_end_, from + length);
    }
    void cut(int instance, Ms from, Ms length) {
        at(from, [this, instance, length] {
            auto& n = node(instance);
            // Cuts that overlap are one cut: its sessions end 3 s after the first began.
            if (now_ >= n.cut_until) {
                n.cut_since = now_;
                n.faults.push_back({"cut from PostgreSQL", now_, now_ + length});
            }
            n.cut_until = std::max(n.cut_until, now_ + length);
            auto& fault = *std::find_if(n.faults.rbegin(), n.faults.rend(),
                                        [](const Fault& f) { return f.kind == "cut from PostgreSQL"; });
            fault.to = n.cut_until;
            note("instance " + std::to_string(instance) + " cut from PostgreSQL for " +
                 std::to_string(length) + " ms");
        });
        faults_end_ = std::max(faults_end_, from + length);
    }
    void lock_jobs(Ms from, Ms length) {
        at(from, [this, length] {
            store_.jobs_locked_until = std::max(store_.jobs_locked_until, now_ + length);
            note("a transaction holds every job row for " + std::to_string(length) + " ms");
        });
        faults_end_ = std::max(faults_end_, from + length);
    }
    // For good: its sessions end at once.
    void kill(int instance, Ms when) {
        node(instance).faults.push_back({"killed", when, kRunFor});
        at(when, [this, instance] {
            node(instance).killed = true;
            note("instance " + std::to_string(instance) + " killed");
        });
        faults_end_ = std::max(faults_end_, when);
    }
    void lose_replies(Ms from, Ms length) {
        at(from, [this, length] { replies_lost_until_ = now_ + length; });
        faults_end_ = std::max(faults_end_, from + length);
    }
    // A few faults of any kind, anywhere in the first minute.
    void random_faults() {
        const auto instances = static_cast<int>(nodes_.size());
        for (int n = pick(1, 4); n > 0; --n) {
            const Ms from = pick(1000, 60000);
            switch (pick(0, 5)) {
                case 0: stall_postgresql(from, pick(500, 10000)); break;
                case 1: lock_registration(pick(0, instances - 1), from, pick(1000, 60000)); break;
                case 2: pause(pick(0, instances - 1), from, pick(100, 10000)); break;
                case 3: cut(pick(0, instances - 1), from, pick(500, 10000)); break;
                case 4: lock_jobs(from, pick(100, 5000)); break;
                default: lose_replies(from, pick(100, 3000)); break;
            }
        }
        if (chance(0.1)) kill(0, pick(1000, 60000));  // one of two or three: others take over
    }
    int pick(Ms low, Ms high) {
        return static_cast<int>(std::uniform_int_distribution<Ms>(low, high)(random_));
    }
    bool chance(double p) { return std::bernoulli_distribution(p)(random_); }
    std::size_t instances() const { return nodes_.size(); }
    const std::vector<Publish>& publishes() const { return publishes_; }
    // Runs published again, by the fault on their first publisher that explains each.
    const std::map<std::string, std::size_t>& republished_by_cause() const { return republished_by_cause_; }

private:
    struct Fault {
        std::string kind;
        Ms from = 0;
        Ms to = 0;
    };
    struct Node {
        LeaseKeeper leases{LeaseTimings{}};
        bool registered = true;  // in the store's view since start
        std::multimap<Ms, int> held;  // due -> job, until published
        std::set<int> held_ids;       // from the claim until the record (HeldRuns)
        Ms paused_until = 0;
        Ms cut_until = 0;
        Ms cut_since = 0;
        bool killed = false;
        std::uint64_t epoch = 0;  // bumped when it forgets its claims
        std::vector<Fault> faults;  // its own: paused, cut, its registration locked
    };
    struct Event {
        Ms at;
        std::uint64_t order;  // seeded: equal instants run in a random order
        std::function<void()> action;
        bool operator<(const Event& other) const {
            return at != other.at ? at > other.at : order > other.order;
        }
    };

    Node& node(int i) { return nodes_[static_cast<std::size_t>(i)]; }
    static LeaseKeeper::Clock::time_point steady(Ms at) {
        return LeaseKeeper::Clock::time_point{std::chrono::milliseconds{at}};
    }
    void at(Ms when, std::function<void()> action) {
        events_.push({when, random_(), std::move(action)});
    }
    void note(const std::string& text) {
        if (trace_) std::cout << "[" << now_ << " ms] " << text << "\n";
    }
    // Runs `action` on instance i's thread once it is not paused.
    void on_node(int i, Ms when, std::function<void()> action) {
        at(when, [this, i, action = std::move(action)] {
            if (node(i).killed) return;
            if (now_ < node(i).paused_until) {
                on_node(i, node(i).paused_until, action);
                return;
            }
            action();
        });
    }
    // A statement sent by instance i now: it reaches PostgreSQL after the network's delay,
    // runs once PostgreSQL is not stalled (waiting at most the lock timeout for instance i's
    // own registration if `own_row`), and its answer comes back to i. A cut connection fails
    // after the keepalives' bound; a lost reply fails although the statement committed.
    // own_row: the statement updates instance i's registration (a beat reads its fence first,
    // without a lock: a fenced instance learns of it even while the row is held).
    enum class Row { none, own, own_after_fence_check };
    void statement(int i, Row own_row, std::function<void()> run,
                   std::function<void(bool committed)> answer) {
        const Ms sent = now_;
        if (sent < node(i).cut_until) {
            on_node(i, std::max(sent + 1000, node(i).cut_until), [answer] { answer(false); });
            return;
        }
        const Ms arrives = sent + pick(0, 3);
        at(arrives, [this, i, own_row, run, answer] { execute(i, own_row, now_, run, answer); });
    }
    void execute(int i, Row own_row, Ms arrived, const std::function<void()>& run,
                 const std::function<void(bool)>& answer) {
        if (now_ < store_.stalled_until) {
            at(store_.stalled_until, [=, this] { execute(i, own_row, arrived, run, answer); });
            return;
        }
        const bool waits_for_row =
            own_row == Row::own || (own_row == Row::own_after_fence_check && !store_.fences.contains(i));
        if (waits_for_row && store_.row_locked(i, now_)) {
            if (now_ - arrived >= kLockTimeout) {
                on_node(i, now_ + pick(0, 3), [answer] { answer(false); });
            } else {
                at(std::min(arrived + kLockTimeout, store_.registration_locked_until[i]),
                   [=, this] { execute(i, own_row, arrived, run, answer); });
            }
            return;
        }
        run();
        const bool lost = now_ < replies_lost_until_;
        on_node(i, now_ + pick(0, 3), [answer, lost] { answer(!lost); });
    }

    void beat(int i) {
        const Ms sent = now_;
        auto& n = node(i);
        if (!n.registered) {
            // Registers again only once it forgot what it held (heartbeat.cpp).
            statement(i, Row::own, [this, i] { store_.register_instance(i, now_); },
                      [this, i](bool ok) {
                          if (ok) node(i).registered = true;
                          on_node(i, now_ + (ok ? kHeartbeatEvery.count() : pick(100, 400)), [this, i] { beat(i); });
                      });
            return;
        }
        auto result = std::make_shared<Store::Beat>();
        statement(i, Row::own_after_fence_check, [this, i, result] { *result = store_.heartbeat(i, now_); },
                  [this, i, sent, result](bool ok) {
                      auto& n = node(i);
                      Ms next = now_ + pick(100, 400);  // a failed beat: reconnect, beat again
                      if (ok && !result->registered) {
                          note("instance " + std::to_string(i) + " finds itself fenced");
                          n.leases.registration_lost();
                          forget(i);
                      } else if (ok) {
                          n.leases.beat_succeeded(steady(sent));
                          note("instance " + std::to_string(i) + "'s beat sent at " + std::to_string(sent) +
                               " ms committed");
                          next = sent + kHeartbeatEvery.count();
                          for (const auto fenced : result->fenced) {
                              note("instance " + std::to_string(i) + " fenced " + std::to_string(fenced));
                          }
                      }
                      on_node(i, std::max(next, now_), [this, i] { beat(i); });
                  });
    }
    // forget_lost_claims: gives back what it never published, then registers again; what it
    // published stays its own until recorded. (Before: it forgot everything and gave back all.)
    void forget(int i) {
        auto& n = node(i);
        ++n.epoch;
        n.registered = false;
        if (store_.give_back == GiveBack::at_the_fence) {
            n.held.clear();
            n.held_ids.clear();
            statement(i, Row::none, [this, i] { store_.release_all(i); },
                      [this, i](bool) { node(i).leases.claims_forgotten(); });
            return;
        }
        std::vector<int> unpublished;
        for (const auto& [due, id] : n.held) unpublished.push_back(id);
        n.held.clear();
        for (const auto id : unpublished) n.held_ids.erase(id);
        statement(i, Row::none, [this, i, unpublished] { store_.release(i, unpublished); },
                  [this, i](bool) { node(i).leases.claims_forgotten(); });
    }
    void claim(int i) {
        const auto epoch = node(i).epoch;
        auto taken = std::make_shared<std::vector<int>>();
        statement(i, Row::none, [this, i, taken] { *taken = store_.claim(i, now_); },
                  [this, i, epoch, taken](bool ok) {
                      auto& n = node(i);
                      if (ok && n.epoch == epoch) {
                          for (const auto id : *taken) {
                              if (n.held_ids.insert(id).second) {
                                  n.held.emplace(store_.jobs[static_cast<std::size_t>(id)].due, id);
                              }
                          }
                      }
                      // A claim whose reply was lost leaves orphans: reconcile() gives them back.
                      on_node(i, now_ + kClaimEvery, [this, i] { claim(i); });
                  });
    }
    // give_back_orphaned_claims, on the heartbeat's thread: what it holds now, compared in the
    // store with what is leased to it.
    void reconcile(int i) {
        const auto held = node(i).held_ids;
        statement(i, Row::none, [this, i, held] { store_.release_orphans(i, held, now_); },
                  [this, i](bool) { on_node(i, now_ + kReconcileEvery.count(), [this, i] { reconcile(i); }); });
    }
    void publish(int i) {
        auto& n = node(i);
        std::vector<int> published;
        while (!n.held.empty() && n.held.begin()->first <= now_ &&
               n.leases.may_publish(steady(now_))) {
            const auto id = n.held.begin()->second;
            n.held.erase(n.held.begin());
            check_publish(id, i);
            published.push_back(id);
        }
        if (!published.empty()) {
            on_node(i, now_ + kRecordAfter, [this, i, published] { record(i, published, 0); });
        }
        on_node(i, now_ + kPublishTick, [this, i] { publish(i); });
    }
    // The recorder tries again until the record commits (recorder.cpp): at once after a lost
    // connection, on LockedRowsRetry's schedule (250 ms, doubling to 4 s) while rows are held.
    void record(int i, std::vector<int> ids, int waited) {
        auto recorded = std::make_shared<bool>(false);
        statement(i, Row::none, [this, i, ids, recorded] { *recorded = store_.record(i, ids, now_); },
                  [this, i, ids, waited, recorded](bool ok) {
                      if (!ok) {
                          on_node(i, now_ + pick(100, 400), [this, i, ids, waited] { record(i, ids, waited); });
                      } else if (!*recorded) {
                          const Ms retry = std::min<Ms>(kBriefRowLockWait << waited, 4000);
                          on_node(i, now_ + kBriefRowLockWait + retry,
                                  [this, i, ids, waited] { record(i, ids, waited + 1); });
                      } else {
                          for (const auto id : ids) node(i).held_ids.erase(id);
                      }
                  });
    }

    void check_publish(int id, int i) {
        const auto& job = store_.jobs[static_cast<std::size_t>(id)];
        if (now_ < job.due) {
            violation_ = "job " + std::to_string(id) + " published " + std::to_string(job.due - now_) + " ms early";
        }
        const auto before = std::find_if(publishes_.rbegin(), publishes_.rend(),
                                         [&](const Publish& p) { return p.job == id; });
        if (job.owner != i) {
            std::ostringstream text;
            text << "job " << id << " published by instance " << i << " at " << now_
                 << " ms while the store leases it to "
                 << (job.owner ? "instance " + std::to_string(*job.owner) : std::string("nobody"));
            violation_ = text.str();
        } else if (before != publishes_.rend()) {
            // Its first publisher's record never committed: a fault on that instance must say why.
            if (const auto cause = fault_between(before->instance, before->at, now_)) {
                ++republished_by_cause_[*cause];
            } else {
                violation_ = "job " + std::to_string(id) + " published again at " + std::to_string(now_) +
                             " ms by instance " + std::to_string(i) + " after instance " +
                             std::to_string(before->instance) + " published it at " +
                             std::to_string(before->at) + " ms, with no fault on that instance between";
            }
        }
        publishes_.push_back({id, i, now_});
        note("instance " + std::to_string(i) + " publishes job " + std::to_string(id));
    }
    // A fault on instance i that overlaps [from, to], or began at most a takeover before
    // `from` (a publish just before a cut is not recorded until it ends), and that can explain
    // a run published again: with the give-back once sessions end, only a crash, or a cut long
    // enough to end its sessions (paused, or its registration held, its sessions stay open
    // and its record comes).
    std::optional<std::string> fault_between(int i, Ms from, Ms to) {
        for (const auto& fault : node(i).faults) {
            const bool explains = fault.kind == "killed" ||
                                  (fault.kind == "cut from PostgreSQL" && fault.to - fault.from >= kSessionEndsAfterCut) ||
                                  (explained_ == Explained::any_fault_on_the_publisher &&
                                   (fault.kind == "paused" || fault.kind == "registration locked" ||
                                    fault.kind == "cut from PostgreSQL"));
            if (explains && fault.from <= to && fault.to >= from - kTakeoverAfter.count()) return fault.kind;
        }
        return std::nullopt;
    }
    std::optional<std::string> check_the_end() const {
        std::map<int, Ms> first;
        for (const auto& p : publishes_) first.emplace(p.job, p.at);
        for (const auto& job : store_.jobs) {
            const auto it = first.find(job.id);
            if (it == first.end()) return "job " + std::to_string(job.id) + " was never published";
            if (it->second > std::max(job.due, faults_end_) + kMaxParked) {
                return "job " + std::to_string(job.id) + " parked until " + std::to_string(it->second) +
                       " ms (due " + std::to_string(job.due) + ", faults over at " +
                       std::to_string(faults_end_) + ")";
            }
        }
        return std::nullopt;
    }

    std::mt19937_64 random_;
    bool trace_;
    Explained explained_;
    Store store_;
    std::deque<Node> nodes_;  // a LeaseKeeper does not move
    std::priority_queue<Event> events_;
    std::vector<Publish> publishes_;
    Ms now_ = 0;
    Ms faults_end_ = 0;
    Ms replies_lost_until_ = 0;
    std::map<std::string, std::size_t> republished_by_cause_;
    std::optional<std::string> violation_;
};

}  // namespace hourglass::loader::lease_simulation
