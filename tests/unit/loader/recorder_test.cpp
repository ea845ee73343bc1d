// The recorder stage (src/loader/recorder.hpp) on a fake store and a clock the test moves:
// confirmed runs recorded in batches and no longer held, a locked row waiting aside on its
// retry's schedule while the others are recorded, a failed record tried again, and the end.
#include "loader/recorder.hpp"

#include <gtest/gtest.h>

#include <stop_token>

#include "common/metrics.hpp"
#include "support/fake_claim_store.hpp"
#include "support/manual_clock.hpp"

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;
using testing::FakeDatabase;
using testing::FakeStore;

constexpr auto kRecordEvery = 50ms;

class RecorderTest : public ::testing::Test {
protected:
    // Runs leased to this instance, held, published and confirmed now.
    void confirm(const std::vector<std::string>& ids) {
        std::vector<HandedOverRun> runs;
        for (const auto& id : ids) {
            ClaimedRun run;
            run.id = id;
            db_.add(std::move(run), "me");
            HandedOverRun handed_over;
            handed_over.id = id;
            runs.push_back(std::move(handed_over));
        }
        held_.add(ids);
        confirmed_.push(std::move(runs));
    }
    bool record() { return recorder_.record_batch(store_, stop_.get_token()); }
    bool handed_over(const std::string& id) {
        return db_.read([&](const FakeDatabase& db) { return db.rows.at(id).handed_over; });
    }

    testing::ManualClock clock_;
    FakeDatabase db_;
    FakeStore store_{db_};
    std::stop_source stop_;
    HeldRuns held_;
    ConfirmedRuns confirmed_{ConfirmedRuns::Options{.batch = 1000,
                                                    .record_every = kRecordEvery,
                                                    .idle_wait = 100ms,
                                                    .capacity = 30000,
                                                    .now = [this] { return clock_.steady(); }}};
    ClaimerDoorbell doorbell_;
    metrics::ServiceMetrics service_metrics_;
    LoaderMetrics metrics_{service_metrics_.registry()};
    Recorder recorder_{"me",
                       {.confirmed = confirmed_, .held = held_, .claimer = doorbell_, .metrics = metrics_},
                       StageClock{.now_us = [this] { return clock_.wall(); },
                                  .steady = [this] { return clock_.steady(); }}};
};

TEST_F(RecorderTest, records_confirmed_runs_together_and_no_longer_holds_them) {
    confirm({"a", "b"});
    clock_.advance(10ms);
    confirm({"c"});
    clock_.advance(kRecordEvery - 10ms);  // the oldest has waited long enough
    ASSERT_TRUE(record());
    EXPECT_EQ(db_.records, 1) << "one UPDATE for the three";
    EXPECT_EQ(db_.handed_over(), 3u);
    EXPECT_EQ(held_.size(), 0u);
    EXPECT_EQ(recorder_.runs_recorded(), 3u);
}

TEST_F(RecorderTest, a_locked_row_waits_aside_while_later_runs_are_recorded_then_is_recorded_on_retry) {
    db_.locked = {"locked"};
    confirm({"a", "locked"});
    clock_.advance(kRecordEvery);
    ASSERT_TRUE(record());
    EXPECT_TRUE(handed_over("a"));
    EXPECT_FALSE(handed_over("locked"));
    EXPECT_EQ(recorder_.waiting_for_locked_rows(), 1u);
    EXPECT_EQ(held_.size(), 1u) << "still held until recorded";
    const auto settled = clock_.steady();

    db_.locked.clear();
    confirm({"b"});
    clock_.advance(kRecordEvery);
    ASSERT_TRUE(record());
    EXPECT_TRUE(handed_over("b"));
    EXPECT_FALSE(handed_over("locked")) << "tried again before its retry was due";

    clock_.advance(std::chrono::duration_cast<std::chrono::microseconds>(
        LockedRowsRetry::kFirst - (clock_.steady() - settled)));
    ASSERT_TRUE(record()) << "a due retry ends the wait for a batch";
    EXPECT_TRUE(handed_over("locked"));
    EXPECT_EQ(recorder_.waiting_for_locked_rows(), 0u);
    EXPECT_EQ(held_.size(), 0u);
}

TEST_F(RecorderTest, a_record_that_fails_keeps_its_runs_for_the_next) {
    confirm({"a", "b"});
    clock_.advance(kRecordEvery);
    db_.set_reachable(false);
    EXPECT_THROW(record(), std::runtime_error);
    EXPECT_EQ(held_.size(), 2u);
    db_.set_reachable(true);
    clock_.advance(kRecordEvery);
    ASSERT_TRUE(record());
    EXPECT_EQ(db_.handed_over(), 2u);
    EXPECT_EQ(held_.size(), 0u);
}

TEST_F(RecorderTest, ends_after_the_last_batch_once_stopped_and_the_publisher_closed) {
    confirm({"a"});
    stop_.request_stop();
    confirmed_.close();
    EXPECT_TRUE(record()) << "the runs confirmed before the end are recorded";
    EXPECT_TRUE(handed_over("a"));
    EXPECT_FALSE(record());
    recorder_.run(stop_.get_token(), [this](const store::StoreOptions&) {
        return std::make_unique<FakeStore>(db_);
    }, store::StoreOptions{});
    EXPECT_TRUE(recorder_.done());
}

}  // namespace
}  // namespace hourglass::loader
