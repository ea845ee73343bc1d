// The subcommands of the `hourglass` binary. Each returns the process exit code and reports
// failures as one clear line on stderr.
#pragma once

#include "cli/options.hpp"

namespace hourglass::cli {

int run_service(const ServiceOptions& options);
int run_migrate(const ServiceOptions& options, bool dry_run);
int run_status(const ServiceOptions& options);
// Deletes (or with dry_run counts) the ended jobs older than --retention, in batches, printing
// progress; `hourglass run` does the same continuously.
int run_prune(const ServiceOptions& options, bool dry_run);

}  // namespace hourglass::cli
