// What the audit needs from the store: recording the releases it observed (reference §6.4).
// store::JobStore implements it over PostgreSQL; unit tests of the audit give it a fake, so
// batching and ack-after-commit are tested without a database.
#pragma once

#include <memory>

#include "store/store_options.hpp"

#include <cstddef>
#include <vector>

#include "hourglass/job.hpp"

namespace hourglass::store {

// What one record of releases did.
struct RecordedReleases {
    std::vector<double> lateness_ms;  // of every run recorded
    // Positions (in the releases given) of those parked: another transaction holds the row of
    // their run or of a run of their group, so they were kept in parked_releases (migration
    // 012), to be recorded by record_parked_releases once it ends. Their copies may be acked.
    std::vector<std::size_t> parked;
};

// What one record of parked releases did.
struct RecordedParked {
    std::vector<double> lateness_ms;  // of every run recorded
    std::size_t unparked = 0;         // parked releases recorded, or forgotten (their job is gone)
    std::size_t still_parked = 0;     // releases still parked (any instance's)
};

class ReleaseStore {
public:
    virtual ~ReleaseStore() = default;
    // Records releases in one transaction, each with the rest of its release group (runs
    // observed with it); releases of unknown jobs are skipped. Never waits long for a row lock:
    // what a row another transaction holds stops is parked (RecordedReleases::parked). Throws
    // when the database cannot be reached.
    virtual RecordedReleases record_releases(const std::vector<ObservedRelease>& releases) = 0;
    // Records the parked releases whose rows are free now (any instance's, oldest first, a
    // batch at most) and forgets them, and those of jobs gone. Never waits for a row lock.
    virtual RecordedParked record_parked_releases() = 0;
};

// The store the audit uses, over a connection of its own (throws when PostgreSQL is out of reach).
std::unique_ptr<ReleaseStore> open_release_store(const StoreOptions& options);

}  // namespace hourglass::store
