// The optional configuration file (--config FILE, or HOURGLASS_CONFIG), in TOML or INI as CLI11
// reads them. Keys are the long flag names without the dashes; keys at the top apply to
// whichever command runs (those it does not have are ignored), keys in a [run], [status], ...
// section to that command only:
//
//   amqp-url = "amqp://hourglass:secret@rabbit:5672/%2f"
//   pg-url = "postgresql://hourglass:secret@db/hourglass"
//   [run]
//   horizon = "2m"
//   http = "0.0.0.0:9464"
//
// A value fills an option only if neither its flag nor its environment variable was given:
// flag > environment > file > default.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace hourglass::cli {

// Applies `path` to `command` (a parsed subcommand of `root`). Throws std::runtime_error naming
// the file and key for an unreadable file, a key no command knows, or an invalid value.
void apply_config_file(const CLI::App& root, CLI::App& command, const std::string& path);

}  // namespace hourglass::cli
