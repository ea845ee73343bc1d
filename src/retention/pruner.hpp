// Retention (reference §8): deletes one-shot jobs that ended (done or cancelled) more than
// --retention ago, and the console's recorded rejections past it or beyond the newest 100,000, so
// that hourglass.jobs and its indexes stay the same size under a steady load. A thread with its own
// connection runs rounds: each round deletes batches of at most `batch` rows (oldest first, SKIP
// LOCKED, bounded in time) with a pause between them, a steady pace that never competes with ingest
// and claims for long, until a batch comes back short; then it waits `interval`. One instance per
// schema prunes at a time (a row of `leader_locks`, which only its role can lock); the others
// find it taken and wait for the next round.
#pragma once

#include <functional>
#include <optional>
#include <stop_token>
#include <thread>

#include "common/metrics.hpp"
#include "hourglass/defaults.hpp"
#include "hourglass/time.hpp"
#include "store/upkeep_store.hpp"

namespace hourglass::retention {

struct RetentionOptions {
    store::StoreOptions store;
    Milliseconds retention = kDefaultRetention;
    // --retention off: ended jobs are kept; only the rejections are bounded (by their count).
    bool keep_ended_jobs = false;
    std::size_t batch = 1000;
    Milliseconds pause{50};       // between full batches of one round
    Milliseconds interval{5000};  // between rounds
};

// Deletes one batch of at most `limit` rows; returns how many went, or nullopt when another
// instance is pruning.
using PruneBatch = std::function<std::optional<std::size_t>(std::size_t limit)>;

// One round: batches until one comes back short (or another instance prunes, or `stop`),
// pausing between them. Returns the rows deleted; `on_batch` sees each batch's count.
std::size_t prune_round(const PruneBatch& prune_batch, const RetentionOptions& options,
                        std::stop_token stop, const std::function<void(std::size_t)>& on_batch = {});

class Pruner {
public:
    // Registers its metrics (rows deleted, table bytes) in `registry` and starts the thread.
    Pruner(RetentionOptions options, metrics::Registry& registry);
    ~Pruner();  // stops the thread
    Pruner(const Pruner&) = delete;
    Pruner& operator=(const Pruner&) = delete;

private:
    void prune_until_stopped(std::stop_token stop);

    RetentionOptions options_;
    metrics::Counter& rows_deleted_;
    metrics::Gauge& table_bytes_;
    std::jthread thread_;
};

}  // namespace hourglass::retention
