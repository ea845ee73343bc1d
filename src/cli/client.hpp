// `hourglass schedule`, `cancel`, `pause` and `resume` (reference §9): client conveniences that publish one
// command to <prefix>.in, as any AMQP client would, with a private reply queue (x-reply-to) and a
// correlation id; wait for the receipt (reference §4), print it on stdout and turn its status into
// the exit code. Input is passed on as written wherever hourglass itself validates it, so the
// receipt carries hourglass's own reason for a rejection.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "amqp/connection.hpp"
#include "delay/topology.hpp"
#include "hourglass/message.hpp"
#include "hourglass/time.hpp"

namespace hourglass::cli {

// Exit codes of schedule and cancel (documented in docs/operating.md, "Command line").
enum ExitCode : int {
    kExitAccepted = 0,     // scheduled, replaced, duplicate, cancelled
    kExitFailed = 1,       // any other error
    kExitUnreachable = 2,  // cannot connect to RabbitMQ or PostgreSQL
    kExitRejected = 3,     // the receipt says rejected
    kExitNotApplied = 4,   // not_found or too_late: nothing was changed
    kExitNoReceipt = 5,    // no receipt within --timeout (is hourglass running with this --prefix?)
};
int exit_code_for_status(std::string_view status);

struct ScheduleRequest {
    std::string routing_key;
    std::string at;     // x-schedule-at, as written
    std::string delay;  // x-delay: milliseconds as written, or a duration with a unit (5s)
    std::string cron;   // x-cron
    std::string zone;   // x-cron-tz
    std::string until;  // x-cron-until
    std::string limit;  // x-cron-limit, as written
    std::string catchup;  // x-cron-catchup, as written
    std::string id;     // message_id; empty: hourglass generates one
    std::string body;
    std::string body_file;             // read instead of body when set
    std::vector<std::string> headers;  // "name=value", string headers
    std::string content_type;
    bool replace = false;
};

// The command messages, without the reply queue and correlation id. Throws
// std::invalid_argument for input no command could carry (a header without '=', an unreadable
// body file, a header that send_command sets itself).
Message schedule_command(const ScheduleRequest& request, const delay::TopologyNames& names);
// The control commands of reference §3.2 and §3.3: `target` is the job id, or the routing key
// prefix for cancel_prefix.
enum class Control { cancel, pause, resume, cancel_prefix };
Message control_command(Control control, const std::string& target,
                        const delay::TopologyNames& names);

// Publishes `command` with a fresh exclusive reply queue and correlation id, waits up to
// `timeout` for its receipt, prints the receipt JSON on stdout and returns the exit code.
int send_command(const amqp::ConnectionOptions& amqp, Message command, Milliseconds timeout);

}  // namespace hourglass::cli
