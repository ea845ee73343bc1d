#include "retention/pruner.hpp"

#include <spdlog/spdlog.h>

#include <memory>

#include "common/retry.hpp"
#include "common/thread_name.hpp"

namespace hourglass::retention {

std::size_t prune_round(const PruneBatch& prune_batch, const RetentionOptions& options,
                        std::stop_token stop, const std::function<void(std::size_t)>& on_batch) {
    std::size_t total = 0;
    while (!stop.stop_requested()) {
        const auto deleted = prune_batch(options.batch);
        if (!deleted) break;  // another instance prunes this schema
        total += *deleted;
        if (on_batch) on_batch(*deleted);
        if (*deleted < options.batch) break;  // nothing old enough is left
        if (!sleep_unless_stopped(stop, options.pause)) break;
    }
    return total;
}

Pruner::Pruner(RetentionOptions options, metrics::Registry& registry)
    : options_(std::move(options)),
      rows_deleted_(registry.add_counter(
          "hourglass_retention_rows_deleted_total",
          "Ended one-shot jobs deleted by retention (--retention), by any instance's pruner "
          "counted where it ran")),
      table_bytes_(registry.add_gauge("hourglass_jobs_table_bytes",
                                      "Bytes of hourglass.jobs with its indexes and TOAST")) {
    options_.store.open_connections = nullptr;  // not a pipeline component: not in /readyz
    options_.store.background = true;
    thread_ = std::jthread([this](std::stop_token stop) {
        name_this_thread("hg-prune");
        prune_until_stopped(stop);
    });
}

Pruner::~Pruner() = default;  // the jthread asks the loop to stop and joins it

void Pruner::prune_until_stopped(std::stop_token stop) {
    std::unique_ptr<store::RetentionStore> store;
    store::LeaderLockWatch leader_lock("prune", "retention", "no ended job is deleted");
    do {
        try {
            if (!store) store = store::open_retention_store(options_.store);
            if (!options_.keep_ended_jobs) {
                bool held_elsewhere = false;
                const auto deleted = prune_round(
                    [&](std::size_t limit) {
                        const auto batch = store->prune_ended(options_.retention, limit);
                        held_elsewhere = !batch;
                        return batch;
                    },
                    options_, stop, [&](std::size_t batch) { rows_deleted_.increment(batch); });
                leader_lock.log(held_elsewhere, *store, store::LeaderLockWatch::Clock::now());
                if (deleted > 0) spdlog::info("retention: deleted {} ended jobs", deleted);
            }
            const auto rejection_age = options_.keep_ended_jobs
                                           ? std::nullopt
                                           : std::optional<Milliseconds>(options_.retention);
            prune_round(
                [&](std::size_t limit) -> std::optional<std::size_t> {
                    return store->prune_rejections(rejection_age, store::kKeptRejections, limit);
                },
                options_, stop);
            if (!options_.keep_ended_jobs) {
                prune_round(
                    [&](std::size_t limit) -> std::optional<std::size_t> {
                        return store->prune_receipts(options_.retention, limit);
                    },
                    options_, stop);
            }
            table_bytes_.set(static_cast<double>(store->table_bytes()));
        } catch (const std::exception& error) {
            // The pipeline components report lost connections; a failed round is retried.
            spdlog::warn("retention: {}", error.what());
            store.reset();
        }
    } while (sleep_unless_stopped(stop, options_.interval));
}

}  // namespace hourglass::retention
