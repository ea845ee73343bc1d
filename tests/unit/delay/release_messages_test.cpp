// How a claimed run leaves for the broker (reference §6.2): the delay queue of its TTL and lane,
// the burst and expired paths, the headers a release carries, and the release groups that give
// the audit one copy per group.
#include "delay/release_messages.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hourglass::delay {
namespace {

using std::chrono::seconds;

const TimePoint kNow = from_epoch_ms(1795339800000);

TopologyOptions topology(unsigned lanes = 4) {
    TopologyOptions options;
    options.delay_lanes = lanes;
    return options;
}

const DelayLadder kLadder(seconds{10}, seconds{1});

ClaimedRun run(std::string id, TimePoint due, std::string exchange = "") {
    ClaimedRun claimed;
    claimed.id = std::move(id);
    claimed.routing_key = "orders." + claimed.id;
    claimed.exchange = std::move(exchange);
    claimed.body = "body of " + claimed.id;
    claimed.due_at = due;
    claimed.run = 3;
    set_header(claimed.properties, "x-app", std::string("kept"));
    return claimed;
}

std::string text_header(const Message& message, std::string_view name) {
    const auto* value = find_header(message.properties, name);
    if (value == nullptr) return "<none>";
    if (const auto* text = std::get_if<std::string>(&value->value)) return *text;
    return "<not text>";
}

bool copied_to_audit(const Message& message) { return find_header(message.properties, "BCC") != nullptr; }

TEST(ReleaseMessages, a_run_goes_to_the_delay_queue_of_its_ttl_and_lane_with_its_identity_and_an_audit_copy) {
    const ReleaseMessages messages(topology(), kLadder, true);
    auto claimed = run("a", kNow + std::chrono::milliseconds{2500});
    const auto message = messages.release(claimed, kNow, 131072, 2, std::nullopt, false);
    const TopologyNames names;
    EXPECT_EQ(message.exchange, names.delay(seconds{3}, 2));  // never early: the TTL above
    EXPECT_EQ(message.routing_key, "orders.a");
    EXPECT_EQ(message.body, "body of a");
    EXPECT_EQ(message.properties.delivery_mode, 2);
    EXPECT_EQ(text_header(message, header::kId), "a");
    EXPECT_EQ(text_header(message, header::kDue), format_rfc3339_ms(claimed.due_at));
    EXPECT_EQ(text_header(message, "x-app"), "kept");
    EXPECT_TRUE(copied_to_audit(message));
}

TEST(ReleaseMessages, a_run_observed_with_another_or_without_the_audit_takes_no_copy) {
    auto claimed = run("a", kNow + seconds{2});
    const auto grouped = ReleaseMessages(topology(), kLadder, true)
                             .release(claimed, kNow, 131072, 0, RunRef{"last", 1}, false);
    EXPECT_FALSE(copied_to_audit(grouped));
    auto again = run("a", kNow + seconds{2});
    const auto unaudited =
        ReleaseMessages(topology(), kLadder, false).release(again, kNow, 131072, 0, std::nullopt, false);
    EXPECT_FALSE(copied_to_audit(unaudited));
}

TEST(ReleaseMessages, a_targeted_run_goes_to_the_forward_ladder_and_names_its_exchange_and_group) {
    const ReleaseMessages messages(topology(), kLadder, true);
    auto claimed = run("t", kNow + seconds{4}, "billing");
    const auto message = messages.release(claimed, kNow, 131072, 3, RunRef{"last", 1}, false);
    const TopologyNames names;
    EXPECT_EQ(message.exchange, names.forward_delay(seconds{4}));  // no lanes
    EXPECT_EQ(text_header(message, header::kExchange), "billing");
    EXPECT_EQ(text_header(message, header::kObservedWith), "last");
    EXPECT_FALSE(copied_to_audit(message));  // the forwarder copies targeted releases
}

TEST(ReleaseMessages, a_burst_run_goes_straight_to_the_release_exchange_or_the_forward_queue) {
    const ReleaseMessages messages(topology(), kLadder, true);
    const TopologyNames names;
    auto plain = run("b", kNow);
    EXPECT_EQ(messages.release(plain, kNow, 131072, 1, std::nullopt, true).exchange, names.release);
    auto targeted = run("bt", kNow, "billing");
    EXPECT_EQ(messages.release(targeted, kNow, 131072, 1, std::nullopt, true).exchange, names.forward);
}

TEST(ReleaseMessages, an_expired_or_skipped_run_goes_to_the_expired_exchange_with_its_reason_and_no_copy) {
    const ReleaseMessages messages(topology(), kLadder, true);
    const TopologyNames names;
    auto late = run("late", kNow - seconds{5});
    late.expires_after = seconds{2};
    const auto expired = messages.expired(late, kNow, 131072, false);
    EXPECT_EQ(expired.exchange, names.expired);
    EXPECT_FALSE(copied_to_audit(expired));
    EXPECT_EQ(text_header(expired, header::kError),
              "expired: handed over 5000 ms after its due time, more than "
              "x-hourglass-expires-after (2000 ms)");
    auto missed = run("missed", kNow - seconds{1});
    const auto skipped = messages.expired(missed, kNow, 131072, true);
    EXPECT_EQ(skipped.exchange, names.expired);
    EXPECT_NE(text_header(skipped, header::kError).find("x-cron-catchup is skip"), std::string::npos);
}

TEST(ReleaseMessages, headers_that_would_not_fit_a_frame_are_dropped_largest_first_and_the_release_says_so) {
    const ReleaseMessages messages(topology(), kLadder, true);
    auto claimed = run("big", kNow + seconds{1});
    set_header(claimed.properties, "x-big", std::string(200000, 'n'));
    const auto message = messages.release(claimed, kNow, 131072, 0, std::nullopt, false);
    EXPECT_EQ(find_header(message.properties, "x-big"), nullptr);  // the largest goes first
    EXPECT_NE(text_header(message, header::kError).find("x-big"), std::string::npos);
    EXPECT_EQ(text_header(message, "x-app"), "kept");  // the rest fits
    EXPECT_EQ(text_header(message, header::kId), "big");  // x-hourglass-* headers stay
}

// One lane (so that the lanes do not split the groups), runs in publish order.
std::vector<std::optional<RunRef>> groups_of(const std::vector<ClaimedRun>& runs,
                                             const std::vector<BatchRun>& shape = {},
                                             bool audit = true, unsigned lanes = 1) {
    std::vector<BatchRun> batch;
    for (std::size_t i = 0; i < runs.size(); ++i) {
        BatchRun entry = i < shape.size() ? shape[i] : BatchRun{};
        entry.run = &runs[i];
        batch.push_back(entry);
    }
    return ReleaseMessages(topology(lanes), kLadder, audit).group(batch, kNow, 0);
}

TEST(ReleaseMessages, runs_sharing_a_queue_and_a_due_time_are_observed_with_the_last_of_them) {
    const auto due = kNow + seconds{3};
    const std::vector<ClaimedRun> runs = {run("a", due), run("b", due), run("other-time", due + seconds{1}),
                                          run("c", due)};
    const auto observed = groups_of(runs);
    ASSERT_EQ(observed.size(), 4u);
    EXPECT_EQ(observed[0]->id, "c");
    EXPECT_EQ(observed[1]->id, "c");
    EXPECT_FALSE(observed[2]);  // alone at its due time
    EXPECT_FALSE(observed[3]);  // the last: takes the copy
}

TEST(ReleaseMessages, a_run_that_must_observe_itself_an_expired_run_or_another_queue_is_never_grouped) {
    const auto due = kNow + seconds{3};
    std::vector<ClaimedRun> runs = {run("itself", due), run("expired", due), run("targeted", due, "x"),
                                    run("burst", due), run("last", due)};
    runs[0].observe_itself = true;
    const auto observed = groups_of(runs, {{}, {.expired = true}, {}, {.burst = true}, {}});
    EXPECT_FALSE(observed[0]);
    EXPECT_FALSE(observed[1]);
    EXPECT_FALSE(observed[2]);  // the forward ladder's queue, alone there
    EXPECT_FALSE(observed[3]);  // the release exchange, alone there
    EXPECT_FALSE(observed[4]);
}

TEST(ReleaseMessages, runs_in_different_lanes_are_apart_and_the_audit_off_groups_nothing) {
    const auto due = kNow + seconds{3};
    const std::vector<ClaimedRun> runs = {run("a", due), run("b", due), run("c", due), run("d", due)};
    // Two lanes: a and c share lane 0, b and d lane 1.
    const auto observed = groups_of(runs, {}, true, 2);
    EXPECT_EQ(observed[0]->id, "c");
    EXPECT_EQ(observed[1]->id, "d");
    EXPECT_FALSE(observed[2]);
    EXPECT_FALSE(observed[3]);
    for (const auto& none : groups_of(runs, {}, false)) EXPECT_FALSE(none);
}

}  // namespace
}  // namespace hourglass::delay
