// The loader over its fakes (loader_fixture.hpp): its pace, real-time scheduling, the confirm
// window, its memory bounds, bursts and expiry.
#include <gtest/gtest.h>

#include "unit/loader/loader_fixture.hpp"

namespace hourglass::loader::loader_tests {
namespace {

// Each confirm wakes the claimer to record hand-overs; it must not claim again each time
// (at 1,000 jobs/s that was a claim query every few milliseconds).
TEST_F(LoaderTest, claims_once_per_poll_interval_however_many_confirms_arrive) {
    for (int i = 0; i < 40; ++i) db.add("job-" + std::to_string(100 + i), in(200ms + i * 20ms));
    auto slow_poll = options();
    slow_poll.poll_interval = 5s;
    start(std::move(slow_poll));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 40; }));
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.claims; }), 1);
}

// --realtime-publisher auto: the publisher thread (the one whose timing makes releases late or
// not) asks once for real-time scheduling, and the gauge says whether it got it.
TEST_F(LoaderTest, the_publisher_thread_asks_for_realtime_scheduling_and_reports_the_answer) {
    realtime_answer = 0;
    db.add("on-time", in(300ms));
    auto realtime = options();
    realtime.realtime_publisher = RealtimeMode::automatic;
    start(std::move(realtime));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_EQ(realtime_requests(), std::vector<std::string>{"hg-loader-pub"});
    EXPECT_EQ(metric("hourglass_publisher_realtime"), 1);
}

// Refused (no CAP_SYS_NICE, no RLIMIT_RTPRIO): the loader goes on with normal scheduling.
TEST_F(LoaderTest, a_refused_realtime_request_changes_nothing_but_the_gauge) {
    realtime_answer = EPERM;
    db.add("on-time", in(300ms));
    auto realtime = options();
    realtime.realtime_publisher = RealtimeMode::automatic;
    start(std::move(realtime));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_EQ(realtime_requests().size(), 1u);
    EXPECT_EQ(metric("hourglass_publisher_realtime"), 0);
}

TEST_F(LoaderTest, with_realtime_off_the_publisher_never_asks) {
    realtime_answer = 0;
    db.add("on-time", in(300ms));
    auto normal = options();
    normal.realtime_publisher = RealtimeMode::off;
    start(std::move(normal));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 1; }));
    EXPECT_TRUE(realtime_requests().empty());
    EXPECT_EQ(metric("hourglass_publisher_realtime"), 0);
}

// A slow broker: the confirm window is full while more runs are due. The publisher must wait
// for a confirm, not poll in a loop (as a real-time thread that would keep a CPU from the
// broker whose confirms it waits for).
TEST_F(LoaderTest, waits_for_a_confirm_without_polling_in_a_loop_while_the_window_is_full) {
    for (int i = 0; i < 6; ++i) db.add("job-" + std::to_string(i), in(200ms));
    {
        std::lock_guard lock(broker.mutex);
        broker.hold_confirms = true;
    }
    auto small_window = options();
    small_window.max_unconfirmed = 2;
    start(std::move(small_window));
    ASSERT_TRUE(eventually([&] { return broker.publishes().size() == 2; }));
    const auto polls_before = [&] {
        std::lock_guard lock(broker.mutex);
        return broker.empty_polls_without_wait;
    }();
    std::this_thread::sleep_for(300ms);  // every run is due, the window stays full
    {
        std::lock_guard lock(broker.mutex);
        EXPECT_LE(broker.empty_polls_without_wait - polls_before, 20);
        EXPECT_EQ(broker.published.size(), 2u);
        broker.hold_confirms = false;
    }
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 6; }));
}

// The recorder has a connection of its own: a claim that takes long (a hotspot's next batch)
// does not hold up the record of runs already confirmed.
TEST_F(LoaderTest, records_confirmed_runs_while_a_claim_is_still_running) {
    for (int i = 0; i < 20; ++i) db.add("run-" + std::to_string(i), in(300ms));
    db.claims_allowed = 1;  // the first claim takes the 20 runs; the next one hangs
    start(options());

    ASSERT_TRUE(eventually([&] { return broker.publishes().size() == 20u; }));
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 20u; })) << "recorded while a claim hangs";
    EXPECT_EQ(db.read([](const FakeDatabase& d) { return d.claims; }), 1);
    EXPECT_TRUE(eventually([&] { return loader->runs_handed_over() == 20u; }));
}

// Runs confirmed one by one, a millisecond apart, are recorded together (kRecordEvery).
TEST_F(LoaderTest, records_runs_confirmed_close_together_in_one_update) {
    for (int i = 0; i < 40; ++i) db.add("job-" + std::to_string(100 + i), in(300ms + i * 1ms));
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 40; }));
    EXPECT_LE(db.read([](const FakeDatabase& d) { return d.records; }), 2);
}

TEST_F(LoaderTest, a_wake_for_a_run_due_before_the_next_claim_claims_it_at_once) {
    auto slow_poll = options();
    slow_poll.horizon = 20s;
    slow_poll.poll_interval = 1s;
    start(std::move(slow_poll));
    ASSERT_TRUE(eventually([&] { return db.read([](const FakeDatabase& d) { return d.claims; }) == 1; }));

    // Due after the next regular claim (1 s) plus the margin (1 s): no claim until that one.
    db.add("in-ten-seconds", in(10s));
    loader->wake_for(in(10s));
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(db.claimed("in-ten-seconds"));
    EXPECT_TRUE(eventually([&] { return db.claimed("in-ten-seconds"); }, 3s));

    // Due sooner: claimed at once, well before the next regular claim.
    db.add("in-half-a-second", in(500ms));
    const auto woken = std::chrono::steady_clock::now();
    loader->wake_for(in(500ms));
    const auto handed_over = [&](const std::string& id) {
        return db.read([&](const FakeDatabase& d) { return d.rows.at(id).handed_over; });
    };
    ASSERT_TRUE(eventually([&] { return db.claimed("in-half-a-second") || handed_over("in-half-a-second"); }));
    EXPECT_LT(std::chrono::steady_clock::now() - woken, 400ms);
    EXPECT_TRUE(eventually([&] { return handed_over("in-half-a-second"); }));
}

TEST_F(LoaderTest, holds_no_more_runs_in_memory_than_allowed) {
    for (int i = 0; i < 50; ++i) db.add("job-" + std::to_string(100 + i), in(1500ms));
    auto limited = options();
    limited.max_in_memory_runs = 20;
    start(std::move(limited));
    ASSERT_TRUE(eventually([&] { return loader->in_memory_runs() == 20; }));
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(loader->in_memory_runs(), 20u);
    EXPECT_EQ(metric("hourglass_runs_held"), 20);
    EXPECT_TRUE(eventually([&] { return db.handed_over() == 50; }));
    EXPECT_TRUE(eventually([&] { return metric("hourglass_runs_held") == 0; }));
}

// A job may carry a frame's worth of headers and a tiny body: the memory bound counts its
// properties too, or 20,000 such runs would be held (2.5 GB at 128 KB each).
TEST_F(LoaderTest, counts_the_headers_of_the_runs_it_holds_against_its_memory_bound) {
    auto small_claims = options();
    small_claims.claim_batch = 2;  // so that only the count of bytes held stops the claims
    expect_held_within_the_byte_bound([](ClaimedRun& run) {
        run.body = "b";
        set_header(run.properties, "big", std::string(4000, 'h'));
    }, std::move(small_claims));
}

// Bodies of 4 KB: a claim takes no more than the bytes left of the memory bound (plus one
// run), not a whole batch of 1,000 runs (1 GB with bodies of the default --max-body).
TEST_F(LoaderTest, claims_no_more_bytes_than_its_memory_bound_has_left) {
    expect_held_within_the_byte_bound([](ClaimedRun& run) { run.body = std::string(4000, 'b'); },
                                      options());
}


// Burst release: the runs of one instant shared by many runs of a claim are held until their
// due time and published straight to the release exchange (paced by the broker's credit flow,
// where a flood dead-lettered by the delay queues has none), still in release groups, recurring
// runs with the others. Runs of other instants take the delay queues as before; a targeted run
// of the instant goes to the forward queue (below).
TEST_F(LoaderTest, publishes_the_runs_of_a_burst_at_their_due_time_to_the_release_exchange) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) db.add("hot-" + std::to_string(100 + i), due);
    db.add("alone", in(1400ms));
    ClaimedRun recurring;
    recurring.id = "recurring";
    recurring.routing_key = "rk.recurring";
    recurring.due_at = due;
    recurring.cron = CronSpec{};
    db.add(recurring);
    db.add_targeted("targeted", due);
    auto loader_options = options();
    loader_options.topology.delay_lanes = 4;
    loader_options.burst_min_runs = 10;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 33; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 33u);
    std::size_t copied = 0;
    for (std::size_t i = 0; i < publishes.size(); ++i) {
        const auto& publish = publishes[i];
        const auto id = header_text(publish.message, header::kId);
        if (id == "targeted") {
            EXPECT_EQ(publish.message.exchange, names.forward);
            EXPECT_GE(publish.at, due) << "published before its due time";
        }
        if (!id.starts_with("hot-") && id != "recurring") {
            if (id == "alone") {
                EXPECT_NE(publish.message.exchange, names.release) << id;
            }
            continue;
        }
        EXPECT_EQ(publish.message.exchange, names.release) << id;
        EXPECT_EQ(publish.message.routing_key, "rk." + id);
        EXPECT_GE(publish.at, due) << id << ": published before its due time";
        EXPECT_LE(publish.at, due + 500ms) << id;  // loose: CI machines are busy
        const bool observed_itself = !bcc_keys(publish.message).empty();
        copied += observed_itself;
        // Observed with a burst run published after it on this one channel.
        const auto with = db.read([&](const FakeDatabase& d) { return d.rows.at(id).observed_with; });
        EXPECT_EQ(with.has_value(), !observed_itself) << id;
        if (with) {
            const auto later = std::find_if(publishes.begin() + static_cast<long>(i) + 1, publishes.end(),
                                            [&](const auto& p) { return header_text(p.message, header::kId) == with->id; });
            ASSERT_NE(later, publishes.end()) << id;
            EXPECT_EQ(later->message.exchange, names.release) << id;
        }
    }
    // One copy per publish batch of the burst, not one per lane or per run.
    EXPECT_GE(copied, 1u);
    EXPECT_LE(copied, 3u);
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 32);  // the targeted and recurring runs too
}

// A nack is not a loss (issue: a full consumer queue multiplied a burst): a burst run goes
// straight to the release exchange, whose nack says only that one bound queue refused its copy
// (x-overflow reject-publish at its limit) while the others took theirs. Given back, it was
// claimed and published again round after round; counted as released, it is published once.
TEST_F(LoaderTest, a_nacked_burst_run_counts_as_released_and_is_never_published_again) {
    const auto due = in(800ms);
    for (int i = 0; i < 12; ++i) db.add("nacked-" + std::to_string(100 + i), due);
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    broker.answer_next({FakeBroker::Answer::nack, FakeBroker::Answer::nack});
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 12; }, 5s));
    std::this_thread::sleep_for(500ms);  // a give-back would be claimed and published again by now
    const auto publishes = broker.publishes();
    EXPECT_EQ(publishes.size(), 12u);
    for (const auto& publish : publishes) EXPECT_EQ(publish.message.exchange, names.release);
    EXPECT_EQ(metric("hourglass_release_nacks_total"), 2);
    EXPECT_EQ(metric("hourglass_delay_nacks_total"), 0);
}

// Expiry (x-hourglass-expires-after): a run handed over later than that after its due time
// goes to <prefix>.expired with the reason, is recorded as ended (never observed, never re-sent);
// one still within its bound is released as usual.
TEST_F(LoaderTest, a_run_handed_over_later_than_its_expiry_goes_to_the_expired_exchange) {
    ClaimedRun too_late;
    too_late.id = "too-late";
    too_late.routing_key = "rk.too-late";
    too_late.due_at = in(-5s);
    too_late.expires_after = Milliseconds{2000};
    db.add(too_late);
    ClaimedRun in_time = too_late;
    in_time.id = "in-time";
    in_time.expires_after = Milliseconds{60000};
    db.add(in_time);
    start(options());
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 2; }));
    for (const auto& publish : broker.publishes()) {
        const auto id = header_text(publish.message, header::kId);
        if (id == "too-late") {
            EXPECT_EQ(publish.message.exchange, names.expired);
            EXPECT_NE(header_text(publish.message, header::kError).find("x-hourglass-expires-after (2000 ms)"),
                      std::string::npos);
            EXPECT_TRUE(bcc_keys(publish.message).empty()) << "nothing observes an expired run";
        } else {
            EXPECT_NE(publish.message.exchange, names.expired) << id;
        }
    }
    EXPECT_FALSE(db.read([](const FakeDatabase& d) { return d.rows.at("too-late").audited; }));
    EXPECT_TRUE(db.read([](const FakeDatabase& d) { return d.rows.at("in-time").audited; }));
    EXPECT_EQ(metric("hourglass_runs_expired_total"), 1);
}

// A popular cron minute: the runs of recurring jobs due at one instant are a burst like any
// other. Each is held until the instant, published to the release exchange in release groups
// (one audit copy per group, as for one-shot runs), and its row moves on to the next run once
// the publish is confirmed. That next run is computed when the run is claimed, not at each confirm
// of the burst, which would hold up the publisher at the instant.
TEST_F(LoaderTest, publishes_a_burst_of_recurring_runs_at_their_due_time_and_moves_each_on_after_it) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) {
        ClaimedRun run;
        run.id = "cron-" + std::to_string(100 + i);
        run.routing_key = "rk." + run.id;
        run.due_at = due;
        run.run = 7;
        run.cron = CronSpec{};
        db.add(std::move(run));
    }
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    std::mutex asked_mutex;
    std::vector<TimePoint> asked_at;  // the clock when each next run was computed
    start(std::move(loader_options), [&](const ClaimedRun& run, TimePoint now) -> AfterHandover {
        std::lock_guard lock(asked_mutex);
        asked_at.push_back(now);
        return {.next_due = run.due_at + 60s};
    });
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 30; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 30u);
    for (const auto& publish : publishes) {
        const auto id = header_text(publish.message, header::kId);
        EXPECT_EQ(publish.message.exchange, names.release) << id << " was not taken for a burst";
        EXPECT_GE(publish.at, due) << id << ": published before its due time";
        EXPECT_LE(publish.at, due + 500ms) << id;  // loose: CI machines are busy
        const auto* run = find_header(publish.message.properties, header::kRun);
        ASSERT_NE(run, nullptr) << id;
        EXPECT_EQ(std::get<std::int64_t>(run->value), 7) << id;
        db.read([&](const FakeDatabase& d) {
            const auto& row = d.rows.at(id);
            EXPECT_EQ(row.next_due, due + 60s) << id;
            EXPECT_EQ(row.observed_with.has_value(), bcc_keys(publish.message).empty()) << id;
            if (row.observed_with) {
                EXPECT_EQ(row.observed_with->run, 7) << id;
            }
        });
    }
    const auto copied = std::count_if(publishes.begin(), publishes.end(),
                                      [](const auto& p) { return !bcc_keys(p.message).empty(); });
    EXPECT_GE(copied, 1);
    EXPECT_LE(copied, 3) << "one audit copy per publish batch, not per run";
    std::lock_guard lock(asked_mutex);
    ASSERT_EQ(asked_at.size(), 30u);
    for (const auto& at : asked_at) EXPECT_LT(at, due) << "next run computed on the publish path";
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 30);
}

// The burst bounds hold what they allow; the rest of the burst stays in the store, unclaimed,
// until its instant is a ladder step (1 s) away (claims stop short of it meanwhile), then it is
// claimed and goes out at the instant. Every run is published once, none early, and each run
// left in the store is given back once, not claimed and given back at every poll.
TEST_F(LoaderTest, holds_no_more_burst_runs_than_allowed_and_claims_the_rest_a_step_before_their_instant) {
    const auto due = in(2500ms);
    for (int i = 0; i < 30; ++i) db.add("hot-" + std::to_string(100 + i), due);
    db.add("before", in(1000ms));
    auto loader_options = options();
    loader_options.horizon = 3s;
    loader_options.burst_min_runs = 10;
    loader_options.max_burst_runs = 10;
    start(std::move(loader_options));
    const auto given_back = [&] { return db.read([](const FakeDatabase& d) { return d.released.size(); }); };
    ASSERT_TRUE(eventually([&] { return given_back() >= 20; }));
    db.add("zz-after", in(2700ms));  // within the horizon, but due after the burst
    std::this_thread::sleep_for(300ms);
    EXPECT_LT(clock(), due - 1s);
    EXPECT_LE(loader->in_memory_runs(), 11u);  // 10 of the burst, and "before"
    EXPECT_FALSE(db.claimed("zz-after")) << "claimed past a burst instant whose runs wait";
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 32; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 32u);
    std::set<std::string> ids;
    for (const auto& publish : publishes) {
        const auto id = header_text(publish.message, header::kId);
        EXPECT_TRUE(ids.insert(id).second) << id << " published twice";
        if (id.starts_with("hot-")) {
            EXPECT_EQ(publish.message.exchange, names.release) << id;
            EXPECT_GE(publish.at, due) << id;
            EXPECT_LE(publish.at, due + 500ms) << id;
        } else {
            const auto run_due = db.read([&](const FakeDatabase& d) { return d.rows.at(id).run.due_at; });
            EXPECT_GE(released_at(publish), run_due) << id;
        }
    }
    db.read([](const FakeDatabase& d) { EXPECT_EQ(d.released.size(), 20u); });
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 30);
}

// A burst of targeted runs (the delayed-message plugin's path: x-hourglass-exchange) skips the
// forward ladder the same way: each run is published at its due time into the forward queue,
// which its forward delay queue dead-letters into, with its target for the forwarder, and in
// release groups: all but the last run of a group tell the forwarder to take no audit copy.
// No untargeted run of the instant shares a group with them (they go elsewhere).
TEST_F(LoaderTest, publishes_a_burst_of_targeted_runs_at_their_due_time_to_the_forward_queue) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) db.add_targeted("hot-" + std::to_string(100 + i), due);
    for (int i = 0; i < 5; ++i) db.add("plain-" + std::to_string(i), due);
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 35; }));

    const auto publishes = broker.publishes();
    ASSERT_EQ(publishes.size(), 35u);
    std::size_t last_of_group = 0;
    for (std::size_t i = 0; i < publishes.size(); ++i) {
        const auto& message = publishes[i].message;
        const auto id = header_text(message, header::kId);
        EXPECT_GE(publishes[i].at, due) << id << ": published before its due time";
        EXPECT_LE(publishes[i].at, due + 500ms) << id;  // loose: CI machines are busy
        if (id.starts_with("plain-")) {
            EXPECT_EQ(message.exchange, names.release) << id;
            EXPECT_TRUE(find_header(message.properties, header::kObservedWith) == nullptr) << id;
            continue;
        }
        EXPECT_EQ(message.exchange, names.forward) << id;
        EXPECT_EQ(header_text(message, header::kExchange), "user.exchange") << id;
        EXPECT_TRUE(bcc_keys(message).empty()) << id << ": the forwarder copies targeted runs";
        const auto with = db.read([&](const FakeDatabase& d) { return d.rows.at(id).observed_with; });
        const auto* mark = find_header(message.properties, header::kObservedWith);
        ASSERT_EQ(mark != nullptr, with.has_value()) << id;
        if (!with) {
            ++last_of_group;
            continue;
        }
        EXPECT_EQ(std::get<std::string>(mark->value), with->id) << id;
        const auto later = std::find_if(publishes.begin() + static_cast<long>(i) + 1, publishes.end(),
                                        [&](const auto& p) { return header_text(p.message, header::kId) == with->id; });
        ASSERT_NE(later, publishes.end()) << id << " observed with a run published before it";
        EXPECT_EQ(later->message.exchange, names.forward) << id;
    }
    // One audit copy per publish batch of the burst, not one per run.
    EXPECT_GE(last_of_group, 1u);
    EXPECT_LE(last_of_group, 3u);
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 35);
}

// A hotspot scheduled within the horizon comes into it over several claims, none of which holds
// enough of its runs to be a burst alone: the runs claimed so far count, so once they reach the
// bound the instant is a burst, and the runs claimed from then on go out as one. Those claimed
// before took the delay queues.
TEST_F(LoaderTest, counts_a_burst_over_the_claims_that_bring_its_runs_into_the_horizon) {
    const auto due = in(2500ms);
    auto loader_options = options();
    loader_options.horizon = 3s;
    loader_options.burst_min_runs = 10;
    start(std::move(loader_options));
    for (int wave = 0; wave < 3; ++wave) {
        std::vector<std::string> ids;
        for (int i = 0; i < 6; ++i) {
            ids.push_back("wave" + std::to_string(wave) + "-" + std::to_string(i));
            db.add(ids.back(), due);
        }
        ASSERT_TRUE(eventually([&] {
            return std::all_of(ids.begin(), ids.end(), [&](const auto& id) {
                return db.claimed(id) || db.read([&](const FakeDatabase& d) { return d.rows.at(id).handed_over; });
            });
        }));
    }
    ASSERT_LT(clock(), due - 1s) << "the waves took too long to tell bursts from the rest";
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 18; }));

    for (const auto& publish : broker.publishes()) {
        const auto id = header_text(publish.message, header::kId);
        if (id.starts_with("wave0-")) {
            EXPECT_GE(released_at(publish), due) << id;  // fails for a publish not to a delay queue
        } else {
            EXPECT_EQ(publish.message.exchange, names.release) << id << " was not taken for a burst";
            EXPECT_GE(publish.at, due) << id;
        }
    }
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 12);
}

TEST_F(LoaderTest, with_burst_release_off_every_run_of_a_burst_takes_the_delay_queues) {
    const auto due = in(1500ms);
    for (int i = 0; i < 30; ++i) db.add("hot-" + std::to_string(100 + i), due);
    auto loader_options = options();
    loader_options.burst_min_runs = 10;
    loader_options.max_burst_runs = 0;
    start(std::move(loader_options));
    ASSERT_TRUE(eventually([&] { return db.handed_over() == 30; }));
    for (const auto& publish : broker.publishes()) {
        EXPECT_GE(released_at(publish), due);  // fails for a publish that is not to a delay queue
    }
    EXPECT_EQ(metric("hourglass_burst_runs_total"), 0);
}

}  // namespace
}  // namespace hourglass::loader::loader_tests
