// Retention rounds (reference §8): batches until one comes back short, at a steady pace, and never
// when another instance prunes.
#include <gtest/gtest.h>

#include <deque>

#include "retention/pruner.hpp"

namespace hourglass::retention {
namespace {

RetentionOptions fast_options(std::size_t batch) {
    RetentionOptions options;
    options.batch = batch;
    options.pause = Milliseconds{1};
    return options;
}

// A table with `rows` rows old enough to go; each batch deletes up to its limit.
struct FakeTable {
    std::size_t rows;
    std::vector<std::size_t> limits_asked;
    std::optional<std::size_t> delete_batch(std::size_t limit) {
        limits_asked.push_back(limit);
        const auto deleted = std::min(rows, limit);
        rows -= deleted;
        return deleted;
    }
};

TEST(PruneRound, deletes_in_batches_until_a_short_one) {
    FakeTable table{2500, {}};
    std::vector<std::size_t> seen;
    const auto deleted = prune_round([&](std::size_t limit) { return table.delete_batch(limit); },
                                     fast_options(1000), std::stop_token{},
                                     [&](std::size_t batch) { seen.push_back(batch); });
    EXPECT_EQ(deleted, 2500u);
    EXPECT_EQ(table.rows, 0u);
    EXPECT_EQ(seen, (std::vector<std::size_t>{1000, 1000, 500}));
    EXPECT_EQ(table.limits_asked, (std::vector<std::size_t>{1000, 1000, 1000}))
        << "every batch is bounded";
}

TEST(PruneRound, an_exact_multiple_ends_with_an_empty_batch) {
    FakeTable table{2000, {}};
    EXPECT_EQ(prune_round([&](std::size_t limit) { return table.delete_batch(limit); },
                          fast_options(1000), std::stop_token{}),
              2000u);
    EXPECT_EQ(table.limits_asked.size(), 3u);
}

TEST(PruneRound, stops_at_once_when_another_instance_prunes) {
    int calls = 0;
    EXPECT_EQ(prune_round(
                  [&](std::size_t) -> std::optional<std::size_t> {
                      ++calls;
                      return std::nullopt;
                  },
                  fast_options(1000), std::stop_token{}),
              0u);
    EXPECT_EQ(calls, 1);
}

TEST(PruneRound, a_stop_ends_the_round_between_batches) {
    std::stop_source stop;
    int calls = 0;
    prune_round(
        [&](std::size_t limit) -> std::optional<std::size_t> {
            if (++calls == 2) stop.request_stop();
            return limit;  // always full: would go on forever
        },
        fast_options(10), stop.get_token());
    EXPECT_EQ(calls, 2);
}

TEST(PruneRound, full_batches_are_paced) {
    auto options = fast_options(10);
    options.pause = Milliseconds{20};
    FakeTable table{50, {}};
    const auto started = std::chrono::steady_clock::now();
    prune_round([&](std::size_t limit) { return table.delete_batch(limit); }, options,
                std::stop_token{});
    EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds{5 * 20 - 5});
}

}  // namespace
}  // namespace hourglass::retention
