// The fixture of the release-group tests (release_groups_test.cpp, previous_ladder_test.cpp):
// runs due at one instant released as a group or a burst, and what a test checks of them.
#pragma once

#include <gmock/gmock.h>

#include <map>
#include <string>
#include <vector>

#include "integration/harness.hpp"

namespace hourglass::testing {

using namespace std::chrono_literals;

class ReleaseGroups : public HourglassTest {
protected:
    // One series of a /metrics scrape (0 when absent).
    static double metric(const HourglassProcess& process, const std::string& name) {
        const auto text = http_get(process.http_port(), "/metrics").body;
        const auto at = text.find("\n" + name + " ");
        return at == std::string::npos ? 0 : std::stod(text.substr(at + name.size() + 2));
    }
    // A fanout exchange of "the user" for targeted jobs, with `client` subscribed to it; the
    // flags that let hourglass release to it.
    std::string user_target(Client& client, const std::string& suffix) const {
        const auto target = prefix_ + ".user." + suffix;
        client.channel().declare_exchange(target, "fanout");
        client.subscribe(target, "");
        return target;
    }
    std::vector<std::string> allowing_user_targets(std::vector<std::string> flags) const {
        flags.insert(flags.end(), {"--allow-exchange", prefix_ + "\\.user\\..*"});
        return flags;
    }
    // Each of `jobs` runs received once, none early, none through a delay queue, none with
    // hourglass's own control headers; all counted as burst runs.
    void expect_received_as_a_burst(const HourglassProcess& process,
                                    const std::vector<Received>& received, int jobs, TimePoint due) {
        std::map<std::string, int> times;
        for (const auto& r : received) {
            const auto id = string_header(r.message, "x-hourglass-id");
            ++times[id];
            EXPECT_GE(r.received_at, due) << id << " early";
            EXPECT_EQ(find_header(r.message.properties, "x-death"), nullptr)
                << id << " went through a delay queue";
            for (const auto* name : {"BCC", "x-hourglass-exchange", "x-hourglass-observed-with"}) {
                EXPECT_EQ(find_header(r.message.properties, name), nullptr) << id << ": " << name;
            }
            EXPECT_EQ(r.message.routing_key, "jobs.test");
        }
        EXPECT_EQ(times.size(), static_cast<std::size_t>(jobs)) << "lost";
        EXPECT_EQ(received.size(), static_cast<std::size_t>(jobs)) << "duplicated";
        EXPECT_EQ(metric(process, "hourglass_burst_runs_total"), jobs);
    }
    // As above, and every run ends done from one audit copy per publish batch.
    void expect_released_as_a_burst(const HourglassProcess& process,
                                    const std::vector<Received>& received, int jobs, TimePoint due) {
        expect_received_as_a_burst(process, received, jobs, due);
        ASSERT_TRUE(eventually("SELECT count(*) FROM jobs WHERE state = 'done' AND released_at >= due_at "
                               "AND lateness_ms >= 0 AND released_run = 1",
                               std::to_string(jobs), 15s))
            << process.log_tail(30);
        EXPECT_LT(metric(process, "hourglass_release_copies_total"), jobs / 10)
            << "one copy per publish batch of the burst";
    }
    // scheduled_series, each job released to `target`.
    std::vector<Message> targeted_series(const std::string& stem, int count, TimePoint due,
                                         const std::string& target) const {
        auto jobs = scheduled_series(stem, count, due);
        for (auto& job : jobs) set_header(job.properties, "x-hourglass-exchange", target);
        return jobs;
    }
};

}  // namespace hourglass::testing
