#include "cli/client.hpp"

#include <cctype>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "amqp/channel.hpp"
#include "cli/options.hpp"
#include "hourglass/command.hpp"

namespace hourglass::cli {

namespace {

constexpr std::uint16_t kReplyChannel = 1;
constexpr std::uint16_t kPublishChannel = 2;

// Milliseconds are passed on as written, so hourglass answers a bad value with its own reason;
// a duration with a unit (5s, 2m) is converted here.
FieldValue delay_header(const std::string& text) {
    const bool has_unit = !text.empty() && std::isalpha(static_cast<unsigned char>(text.back()));
    if (has_unit) return static_cast<std::int64_t>(parse_duration(text).count());
    return text;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::invalid_argument("cannot read --body-file " + path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

int exit_code_for_status(std::string_view status) {
    if (status == "scheduled" || status == "replaced" || status == "duplicate" ||
        status == "cancelled" || status == "paused" || status == "resumed") {
        return kExitAccepted;
    }
    if (status == "not_found" || status == "too_late") return kExitNotApplied;
    if (status == "rejected") return kExitRejected;
    return kExitFailed;
}

Message schedule_command(const ScheduleRequest& request, const delay::TopologyNames& names) {
    Message command;
    command.exchange = names.input;
    command.routing_key = request.routing_key;
    command.body = request.body_file.empty() ? request.body : read_file(request.body_file);
    auto& properties = command.properties;
    if (!request.id.empty()) properties.message_id = request.id;
    if (!request.content_type.empty()) properties.content_type = request.content_type;
    for (const auto& header : request.headers) {
        const auto equals = header.find('=');
        if (equals == std::string::npos || equals == 0) {
            throw std::invalid_argument("--header '" + header + "' is not name=value");
        }
        const auto name = header.substr(0, equals);
        if (name == header::kReplyTo) {
            throw std::invalid_argument("--header " + name +
                                        ": the reply queue is chosen by hourglass");
        }
        set_header(properties, name, header.substr(equals + 1));
    }
    if (!request.delay.empty())
        set_header(properties, std::string(header::kDelay), delay_header(request.delay));
    if (!request.at.empty()) set_header(properties, std::string(header::kScheduleAt), request.at);
    if (!request.cron.empty()) set_header(properties, std::string(header::kCron), request.cron);
    if (!request.zone.empty()) set_header(properties, std::string(header::kCronTz), request.zone);
    if (!request.until.empty())
        set_header(properties, std::string(header::kCronUntil), request.until);
    if (!request.limit.empty())
        set_header(properties, std::string(header::kCronLimit), request.limit);
    if (!request.catchup.empty())
        set_header(properties, std::string(header::kCronCatchup), request.catchup);
    if (request.replace) set_header(properties, std::string(header::kReplace), true);
    return command;
}

Message control_command(Control control, const std::string& target,
                        const delay::TopologyNames& names) {
    Message command;
    command.exchange = names.input;
    if (control == Control::cancel_prefix) {
        set_header(command.properties, std::string(header::kCancelPrefix), target);
        return command;
    }
    command.properties.message_id = target;
    const auto flag = control == Control::cancel  ? header::kCancel
                      : control == Control::pause ? header::kPause
                                                  : header::kResume;
    set_header(command.properties, std::string(flag), true);
    return command;
}

int send_command(const amqp::ConnectionOptions& amqp, Message command, Milliseconds timeout) {
    auto options = amqp;
    options.connection_name = "hourglass cli";
    amqp::Connection connection(options);
    amqp::Channel replies(connection, kReplyChannel);
    // Exclusive and server-named: private to this process and gone when it exits (reference §10).
    const auto reply_queue = replies.declare_queue("", {}, /*exclusive=*/true);
    replies.consume(reply_queue, /*no_ack=*/true);
    amqp::Channel publishes(connection, kPublishChannel);
    publishes.enable_confirms();

    const auto correlation_id = generate_uuid();
    command.properties.correlation_id = correlation_id;
    // The command's owner (reference §3.5): RabbitMQ checks it is the user logged in.
    command.properties.user_id = connection.user();
    set_header(command.properties, std::string(header::kReplyTo), reply_queue);
    const auto exchange = command.exchange;
    try {
        publishes.publish(command, /*mandatory=*/true);
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (true) {
            const auto left = std::chrono::duration_cast<std::chrono::microseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            auto event = connection.next_event(left);
            if (!event) continue;
            if (const auto* returned = std::get_if<amqp::Returned>(&*event)) {
                std::cerr << "hourglass: no queue is bound to " << exchange
                          << ": is hourglass running with this --prefix? (reply "
                          << returned->reply_code << ")\n";
                return kExitNoReceipt;
            }
            if (const auto* confirm = std::get_if<amqp::Confirm>(&*event)) {
                if (!confirm->ack) throw std::runtime_error("the broker refused the command");
                continue;
            }
            const auto& delivery = std::get<amqp::Delivery>(*event);
            if (delivery.message.properties.correlation_id != correlation_id) continue;
            std::cout << delivery.message.body << std::endl;
            const auto receipt = nlohmann::json::parse(delivery.message.body, nullptr,
                                                       /*allow_exceptions=*/false);
            if (!receipt.is_object() || !receipt.contains("status") ||
                !receipt["status"].is_string()) {
                throw std::runtime_error("the receipt is not the JSON hourglass sends");
            }
            return exit_code_for_status(receipt["status"].get<std::string>());
        }
    } catch (const amqp::ChannelError& error) {
        // Most likely the exchange does not exist (404): no hourglass ever ran with this prefix.
        std::cerr << "hourglass: cannot publish to " << exchange
                  << " (is hourglass running with this --prefix?): " << error.what() << "\n";
        return kExitNoReceipt;
    }
    std::cerr << "hourglass: no receipt within " << timeout.count()
              << " ms: is hourglass running with this --prefix?\n";
    return kExitNoReceipt;
}

}  // namespace hourglass::cli
