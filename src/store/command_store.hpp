// What ingest needs from the store: applying commands and keeping rejections for the console.
// store::JobStore implements it over PostgreSQL; unit tests of the ingest session give it a
// fake, so ack-after-commit and the handling of refusals are tested without a database.
#pragma once

#include <memory>

#include "store/store_options.hpp"

#include <span>
#include <string>
#include <vector>

#include "hourglass/command.hpp"
#include "hourglass/job.hpp"

namespace hourglass::store {

// A rejected command as the console lists it (migration 008). The store escapes every value
// (printable ASCII, as in the logs) and cuts it short: the command may hold any bytes.
struct RecordedRejection {
    std::string job_id;  // may be empty (no message_id)
    std::string routing_key;
    std::string reason;
};

class CommandStore {
public:
    virtual ~CommandStore() = default;
    // Applies commands in order in one transaction; outcome i belongs to command i. Throws what
    // store::classify_failure calls busy when a job's row stays locked by another transaction.
    // With `claims`, the plain schedules marked claim_at_insert that it inserts are leased to
    // claims->owner (outcome `claimed`); without, none is.
    virtual std::vector<CommandOutcome> apply(std::span<const Command> commands,
                                              const InsertClaimOffer* claims) = 0;
    // Keeps rejections for the console's list of recent ones.
    virtual void record_rejections(const std::vector<RecordedRejection>& rejections) = 0;
};

// The store ingest uses, over a connection of its own (throws when PostgreSQL is out of reach).
std::unique_ptr<CommandStore> open_command_store(const StoreOptions& options);

}  // namespace hourglass::store
