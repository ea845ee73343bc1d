#include "ingest/ingest.hpp"

#include <spdlog/spdlog.h>

#include <deque>

#include "common/retry.hpp"

namespace hourglass::ingest {

namespace {
constexpr std::uint16_t kConsumeChannel = 1;
constexpr std::uint16_t kPublishChannel = 2;

struct Received {
    amqp::Delivery delivery;
    TimePoint received_at;
};

Message receipt_message(const std::string& reply_to, const Command& command,
                        const CommandOutcome& outcome) {
    Message receipt;
    receipt.exchange = "";  // the default exchange routes to the queue named by the key
    receipt.routing_key = reply_to;
    receipt.body = receipt_json(command.id, outcome);
    receipt.properties.content_type = "application/json";
    receipt.properties.correlation_id = command.correlation_id;
    return receipt;
}

class IngestSession {
public:
    IngestSession(const IngestOptions& options, const WakeLoader& wake_loader)
        : options_(options),
          wake_loader_(wake_loader),
          store_(options.store),
          connection_(connection_options(options)) {
        connection_.open_channel(kConsumeChannel);
        connection_.open_channel(kPublishChannel);
        connection_.enable_confirms(kPublishChannel);
        connection_.set_prefetch(kConsumeChannel, options.prefetch);
        connection_.consume(kConsumeChannel, options.names.input);
        spdlog::info("ingest: consuming {}", options.names.input);
    }

    void run(std::stop_token stop) {
        while (!stop.stop_requested()) {
            collect_batch(stop);
            if (!batch_.empty()) process_batch();
        }
    }

private:
    static amqp::ConnectionOptions connection_options(const IngestOptions& options) {
        auto result = options.amqp;
        result.connection_name = "hourglass ingest";
        return result;
    }

    void take(amqp::Event&& event) {
        if (auto* delivery = std::get_if<amqp::Delivery>(&event)) {
            batch_.push_back({std::move(*delivery), now_ms()});
        } else if (const auto* confirm = std::get_if<amqp::Confirm>(&event)) {
            if (!confirm->ack) throw amqp::ConnectionError("broker refused a rejection or receipt");
            confirmed_up_to_ = std::max(confirmed_up_to_, confirm->delivery_tag);
        }
    }

    // Gathers up to batch_size commands, waiting at most batch_wait after the first one.
    void collect_batch(std::stop_token stop) {
        std::optional<std::chrono::steady_clock::time_point> deadline;
        while (batch_.size() < options_.batch_size && !stop.stop_requested()) {
            auto wait = std::chrono::microseconds{100000};
            if (!batch_.empty()) {
                if (!deadline) deadline = std::chrono::steady_clock::now() + options_.batch_wait;
                const auto left = *deadline - std::chrono::steady_clock::now();
                wait = std::max(std::chrono::microseconds{0},
                                std::chrono::duration_cast<std::chrono::microseconds>(left));
            }
            auto event = connection_.next_event(wait);
            if (event) {
                take(std::move(*event));
            } else if (!batch_.empty()) {
                return;  // nothing more arrived in time
            }
        }
    }

    void process_batch() {
        options_.metrics->count_received(batch_.size());
        std::vector<Command> commands;
        commands.reserve(batch_.size());
        for (const auto& received : batch_) {
            commands.push_back(parse_command(received.delivery.message, received.received_at,
                                             options_.limits, generate_uuid));
        }
        const auto outcomes = store_.apply(commands);

        std::uint64_t last_publish = 0;
        bool wake = false;
        const auto horizon_end = now_ms() + options_.horizon;
        std::size_t rejected = 0;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            const auto& outcome = outcomes[i];
            if (outcome.status == CommandStatus::rejected) {
                ++rejected;
                spdlog::info("ingest: rejected a command (id '{}'): {}", commands[i].id, outcome.error);
                last_publish = connection_.publish(
                    kPublishChannel, rejected_message(batch_[i].delivery.message,
                                                      options_.names.rejected, outcome.error));
            }
            if (commands[i].reply_to) {
                last_publish = connection_.publish(
                    kPublishChannel, receipt_message(*commands[i].reply_to, commands[i], outcome));
            }
            if ((outcome.status == CommandStatus::scheduled ||
                 outcome.status == CommandStatus::replaced) &&
                outcome.due && *outcome.due <= horizon_end) {
                wake = true;
            }
        }
        if (wake) wake_loader_();
        // Rejections must be safe in the broker before the command is acked (never dropped).
        std::deque<Received> arrived_meanwhile;
        while (confirmed_up_to_ < last_publish) {
            if (auto event = connection_.next_event(std::chrono::seconds{1})) {
                if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) {
                    arrived_meanwhile.push_back({std::move(*delivery), now_ms()});
                } else {
                    take(std::move(*event));
                }
            }
        }
        connection_.ack(kConsumeChannel, batch_.back().delivery.delivery_tag, /*multiple=*/true);
        options_.metrics->count_outcomes(outcomes);
        spdlog::debug("ingest: committed {} commands ({} rejected)", commands.size(), rejected);
        batch_.assign(std::make_move_iterator(arrived_meanwhile.begin()),
                      std::make_move_iterator(arrived_meanwhile.end()));
    }

    const IngestOptions& options_;
    const WakeLoader& wake_loader_;
    store::JobStore store_;
    amqp::Connection connection_;
    std::vector<Received> batch_;
    std::uint64_t confirmed_up_to_ = 0;
};

}  // namespace

Message rejected_message(const Message& command, const std::string& exchange,
                         const std::string& error) {
    Message rejected;
    rejected.exchange = exchange;
    rejected.routing_key = command.routing_key;
    rejected.body = command.body;
    rejected.properties = command.properties;
    // RabbitMQ checks user_id against the publishing connection, which is hourglass's: keep the
    // value as a header, as on release (SPEC §3.1).
    if (rejected.properties.user_id) {
        set_header(rejected.properties, std::string(header::kUserId), *rejected.properties.user_id);
        rejected.properties.user_id.reset();
    }
    set_header(rejected.properties, std::string(header::kError), error);
    return rejected;
}

void run_ingest(const IngestOptions& options, const WakeLoader& wake_loader, std::stop_token stop) {
    run_with_reconnect("ingest", stop, [&] {
        IngestSession session(options, wake_loader);
        session.run(stop);
    });
}

}  // namespace hourglass::ingest
