// What the audit needs from the store: recording the releases it observed (reference §6.4).
// store::JobStore implements it over PostgreSQL; unit tests of the audit give it a fake, so
// batching and ack-after-commit are tested without a database.
#pragma once

#include <cstddef>
#include <vector>

#include "hourglass/job.hpp"

namespace hourglass::store {

// What one record of releases did.
struct RecordedReleases {
    std::vector<double> lateness_ms;  // of every run recorded
    // Positions (in the releases given) of those left unrecorded because another transaction
    // holds the row of their run or of a run of their group: to be recorded later.
    std::vector<std::size_t> left;
};

class ReleaseStore {
public:
    virtual ~ReleaseStore() = default;
    // Records releases in one transaction, each with the rest of its release group (runs
    // observed with it); releases of unknown jobs are skipped. Never waits for a row lock (see
    // RecordedReleases::left). Throws when the database cannot be reached.
    virtual RecordedReleases record_releases(const std::vector<ObservedRelease>& releases) = 0;
};

}  // namespace hourglass::store
