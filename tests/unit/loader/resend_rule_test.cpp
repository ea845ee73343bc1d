// When a run handed over counts as lost (src/loader/resend_rule.hpp), on a clock the test
// advances: only after the loader and the audit were connected, and the broker released (its
// probes came back), for --resend-after without a break; a broker that stops releasing (a
// memory alarm longer than --resend-after) makes no run lost, and the count starts again once
// it releases.
#include "loader/resend_rule.hpp"

#include <gtest/gtest.h>

#include <list>
#include <memory>

namespace hourglass::loader {
namespace {

using namespace std::chrono_literals;
using health::Component, health::Peer;

class ResendRuleTest : public ::testing::Test {
protected:
    void connect(Component component, Peer peer) {
        open_.emplace_back(health_->open_connections(component, peer));
    }
    void connect_all() {
        connect(Component::loader, Peer::rabbitmq);
        connect(Component::audit, Peer::rabbitmq);
        connect(Component::audit, Peer::postgresql);
    }
    // The clock moves by `step`, the audit seeing a probe come back every second meanwhile
    // while `releasing`; the rule is asked every 500 ms, as the claimer polls. Its last answer.
    // (Called on a line of its own: what it returns is compared with now_ after it moved.)
    std::optional<TimePoint> advance(Milliseconds step, bool releasing = true) {
        std::optional<TimePoint> last;
        for (const auto end = now_ + step; now_ < end;) {
            now_ += 500ms;
            if (releasing && now_.time_since_epoch() % 1000ms == 0ms) health_->set_probe_returned(now_);
            last = rule_.lost_if_due_before(now_);
        }
        return last;
    }
    std::shared_ptr<health::ServiceHealth> health_ =
        std::make_shared<health::ServiceHealth>(std::make_shared<metrics::ServiceMetrics>());
    std::list<metrics::ScopedGaugeIncrement> open_;
    ResendRule rule_{20s, health_};
    TimePoint now_{Milliseconds{1795608000000}};
    std::optional<TimePoint> answer;  // the last advance's
};

TEST_F(ResendRuleTest, a_run_is_lost_only_after_resend_after_of_observed_releases) {
    EXPECT_EQ(advance(30s), std::nullopt) << "nothing connected";
    connect_all();
    EXPECT_EQ(advance(19s), std::nullopt) << "connected and releasing for 19 s";
    answer = advance(2s);
    EXPECT_EQ(answer, now_ - 20s);
    health_->set_audit_behind(7s);
    answer = advance(1s);
    EXPECT_EQ(answer, now_ - 27s) << "a copy may wait behind the audit's backlog";
}

TEST_F(ResendRuleTest, a_broker_that_releases_nothing_makes_no_run_lost_however_long) {
    connect_all();
    answer = advance(60s);
    ASSERT_EQ(answer, now_ - 20s);
    const auto alarm_at = now_;
    // A memory alarm: publishers blocked, nothing released, no probe back, for 50 s.
    answer = advance(4s, false);
    EXPECT_EQ(answer, now_ - 20s) << "a silence shorter than kProbeSilence";
    EXPECT_EQ(advance(46s, false), std::nullopt);
    // It ends: the broker releases what it held (runs due during the alarm, ~50 s ago), and
    // those are not lost until it has released for 20 s.
    EXPECT_EQ(advance(19s), std::nullopt);
    const auto lost_before = advance(2s);
    ASSERT_TRUE(lost_before.has_value());
    EXPECT_GT(*lost_before, alarm_at + 50s - 20s) << "counted from the end of the alarm";
    EXPECT_EQ(*lost_before, now_ - 20s);
}

// The rule may not be asked during the break (a claimer waiting on a slow statement): the
// probes' own record of it still restarts the count.
TEST_F(ResendRuleTest, a_silence_between_two_questions_still_restarts_the_count) {
    connect_all();
    answer = advance(60s);
    ASSERT_EQ(answer, now_ - 20s);
    now_ += 30s;  // not asked meanwhile; no probe came back
    health_->set_probe_returned(now_);
    EXPECT_EQ(rule_.lost_if_due_before(now_), std::nullopt);
    answer = advance(20s);
    EXPECT_EQ(answer, now_ - 20s);
}

TEST_F(ResendRuleTest, a_lost_connection_restarts_the_count) {
    connect_all();
    answer = advance(30s);
    ASSERT_EQ(answer, now_ - 20s);
    open_.pop_back();  // the audit's database connection
    EXPECT_EQ(advance(1s), std::nullopt);
    connect(Component::audit, Peer::postgresql);
    EXPECT_EQ(advance(19s), std::nullopt);
    answer = advance(2s);
    EXPECT_EQ(answer, now_ - 20s);
}

}  // namespace
}  // namespace hourglass::loader
