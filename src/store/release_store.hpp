// What the audit needs from the store: recording the releases it observed (reference §6.4).
// store::JobStore implements it over PostgreSQL; unit tests of the audit give it a fake, so
// batching and ack-after-commit are tested without a database.
#pragma once

#include <vector>

#include "hourglass/job.hpp"

namespace hourglass::store {

class ReleaseStore {
public:
    virtual ~ReleaseStore() = default;
    // Records releases in one transaction, each with the rest of its release group (runs
    // observed with it); returns the lateness_ms of every run recorded (releases of unknown
    // jobs are skipped). Throws when the database cannot be reached.
    virtual std::vector<double> record_releases(const std::vector<ObservedRelease>& releases) = 0;
};

}  // namespace hourglass::store
