// What a row of hourglass.commands stands for (reference §3.4): the message the same command
// would be on <prefix>.in, parsed by the one parser (parse_command) with the same limits, or a
// rejection naming the column and value at fault. Pure: no I/O, never throws on a row.
#pragma once

#include <string>
#include <variant>

#include "hourglass/command.hpp"
#include "hourglass/message.hpp"
#include "store/sql_command_store.hpp"

namespace hourglass::ingest {

// The message a row stands for, or why it stands for none: properties and headers are plain
// JSON (strings, integers, floats, booleans, null, arrays and objects nested at most
// limits.max_header_depth deep); a value over its bound was not read.
std::variant<Message, std::string> message_from_sql_row(const store::SqlCommandRow& row,
                                                        const std::string& input_exchange,
                                                        const CommandLimits& limits);

// The command a row stands for: parse_command of its message, or a rejection. x-reply-to is
// dropped: the receipt is the row in hourglass.command_receipts.
Command command_from_sql_row(const store::SqlCommandRow& row, TimePoint taken_at,
                             const CommandLimits& limits, const std::string& input_exchange);

}  // namespace hourglass::ingest
