// The publisher stage (reference §6.2): on a thread and a broker connection of its own, takes
// each scheduled run from the ScheduleBoard at its publish instant and publishes it into its
// delay queue (delay::ReleaseMessages; a burst run at its due time to the release exchange or
// the forward queue), with publisher confirms and at most max_unconfirmed publishes awaiting
// one. Before every publish it asks the LeaseKeeper whether this instance's claims are surely
// its own (docs/architecture.md "Fencing"); the rest of a batch it may not publish goes back.
// A confirmed run goes to the recorder (ConfirmedRuns); a refused one, or one whose publish may
// not have arrived (a lost connection), back to the store through the claimer (RunsToGiveBack).
// While the broker is slow to confirm (HandoverPace), runs due later than the near rung are
// held for it. Takes: the board's due runs. Gives: confirmed runs, runs to give back. Owns: the publishes in
// flight, the lane each rung's next publish takes, its connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <vector>

#include "amqp/confirm_tracker.hpp"
#include "common/log_budget.hpp"
#include "common/thread_priority.hpp"
#include "delay/release_messages.hpp"
#include "loader/claimer_inbox.hpp"
#include "loader/handover_pace.hpp"
#include "loader/confirmed_runs.hpp"
#include "loader/held_runs.hpp"
#include "loader/lease_keeper.hpp"
#include "loader/loader_metrics.hpp"
#include "loader/release_channel.hpp"
#include "loader/schedule_board.hpp"
#include "loader/scheduled_run.hpp"
#include "loader/stage_clock.hpp"

namespace hourglass::loader {

class Publisher {
public:
    // How often an idle publisher looks at the board again.
    static constexpr auto kIdleWait = Milliseconds{100};
    // While the broker is slow to confirm, runs due later than this (at least: the smallest rung
    // of the ladder not shorter) are held and handed over this long before they are due. As
    // long as a survivor takes an instance's claims over (5 s, reference §5 "Leases"): a run
    // held for it in an instance that dies goes out no later than one held for its own rung.
    static constexpr auto kNearLead = Milliseconds{5000};

    struct Options {
        std::size_t max_unconfirmed = 4096;
        unsigned delay_lanes = 1;
        // False with --no-audit: nothing observes the releases (never re-sent as lost).
        bool releases_observed = true;
        RealtimeMode realtime = RealtimeMode::automatic;
        // A publish awaiting its confirm longer than this means the broker is slow
        // (--slow-confirm, HandoverPace); unset: runs are always handed over a horizon ahead.
        std::optional<std::chrono::microseconds> slow_confirm;
    };
    // What the publisher takes from, asks and gives to; each outlives it.
    struct Neighbours {
        ScheduleBoard& board;
        const LeaseKeeper& leases;
        const delay::ReleaseMessages& release_messages;
        ConfirmedRuns& confirmed;
        RunsToGiveBack& to_give_back;
        HeldRuns& held;
        ClaimerDoorbell& claimer;
        LoaderMetrics& metrics;
    };
    // Its connection, and real-time scheduling for the calling thread (0 or an errno).
    struct Seams {
        std::function<std::unique_ptr<ReleaseChannel>()> open_channel;
        std::function<int()> make_realtime;
    };

    Publisher(Options options, Neighbours neighbours, Seams seams, StageClock clock);

    // On the calling thread: asks for real-time scheduling as options say, then publishes on
    // one connection after another until `stop`; waits (bounded) for outstanding confirms,
    // and closes the hand-off to the recorder.
    void run(std::stop_token stop);

    // A connection's publishes awaiting their confirm.
    using InFlight = amqp::ConfirmTracker<ScheduledRun>;
    // What a connection's publishing does between its waits, for tests on a manual clock:
    // publishes the runs due now (within the confirm window) on `channel`, each only while
    // this instance's claims are surely its own; returns how many it published.
    std::size_t publish_due(ReleaseChannel& channel, InFlight& in_flight, std::stop_token stop);
    // Settles the confirms that have arrived, without waiting.
    void settle_arrived(ReleaseChannel& channel, InFlight& in_flight);

private:
    // While publishes await confirms the publisher polls the socket this often at most.
    static constexpr auto kConfirmPoll = std::chrono::microseconds{1000};
    static constexpr auto kShutdownConfirmWait = std::chrono::seconds{5};

    // The runs due now (within the confirm window), and when to look again.
    struct DueBatch {
        std::vector<ScheduledRun> runs;
        TimePoint now{};  // the batch's one instant: its TTLs and groups are taken at it
        TimePoint next_publish{};
        bool window_full = false;  // max_unconfirmed publishes await confirms
    };

    void make_realtime();
    // One connection's publishing: take the runs due, publish them, wait for confirms or the
    // next run; on a failure, what is unconfirmed goes back to the store.
    void publish_session(std::stop_token stop);
    DueBatch take_due(std::stop_token stop, const InFlight& in_flight);
    // A publish has waited `waited` for its confirm (confirmed now, or still open).
    void note_confirm_wait(std::chrono::microseconds waited, std::chrono::steady_clock::time_point now);
    // Takes the runs due and publishes them; returns the batch (what to wait for next).
    DueBatch publish_next(ReleaseChannel& channel, InFlight& in_flight, std::stop_token stop);
    void publish_batch(ReleaseChannel& channel, DueBatch& batch, InFlight& in_flight);
    void await_confirms_or_runs(std::stop_token stop, ReleaseChannel& channel, const DueBatch& batch,
                                InFlight& in_flight);
    // A confirm (ack or nack) for the publishes up to its sequence: acked runs go to the
    // recorder, refused ones back to the store.
    void settle_confirm(InFlight& in_flight, const amqp::Confirm& confirm);
    // Sets observed_with of the runs of `batch` that a release group observes with another
    // (delay::ReleaseMessages::group).
    void group_releases(std::vector<ScheduledRun>& batch, TimePoint now, unsigned first_lane) const;
    // Runs published but refused, or maybe not received, go back to the store (the claimer
    // gives them back at once) and are forgotten here.
    void give_back(const std::vector<InFlight::Settled>& runs);

    const Options options_;
    Neighbours with_;
    Seams seams_;
    StageClock clock_;
    unsigned next_lane_ = 0;  // consecutive publishes go to different lanes of their rung
    HandoverPace pace_;
    Milliseconds near_rung_;  // kNearLead, or the smallest rung not shorter
    LogBudget slow_log_{1, std::chrono::minutes{1}};
    LogBudget release_nack_log_{1, std::chrono::minutes{1}};
};

}  // namespace hourglass::loader
