#include "forward/forwarder.hpp"

#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <vector>

#include "amqp/channel.hpp"
#include "amqp/confirm_tracker.hpp"
#include "common/log_budget.hpp"
#include "common/retry.hpp"
#include "common/text.hpp"
#include "forward/forwarder_metrics.hpp"
#include "hourglass/command.hpp"

namespace hourglass::forward {

namespace {
constexpr std::uint16_t kConsumeChannel = 1;
constexpr std::uint16_t kPublishChannel = 2;
constexpr auto kPoll = std::chrono::microseconds{100000};
constexpr auto kShutdownConfirmWait = std::chrono::seconds{5};
// The publish channel closed, or the broker refused one of hourglass's own publishes, this
// often with no successful confirm in between: something other than one bad target is wrong
// (say <prefix>.unroutable was deleted or is full), so reconnect with backoff.
constexpr int kMaxFailuresInARow = 10;

// Where one publish of a forwarded run goes.
enum class Destination { target, unroutable, audit };

// One forward delivery, held until every publish it caused is confirmed.
struct InHand {
    Message release;              // as published to the target (exchange = target)
    std::string problem;          // why it is not forwarded to its target, if so
    int unconfirmed = 0;          // publishes not yet confirmed
    bool awaiting_probe = false;  // its target publish waits in the suspects queue
};

// One unconfirmed publish: the forward delivery it belongs to, and where it went.
struct Publish {
    std::uint64_t tag = 0;
    Destination destination = Destination::target;
};

// A header's text for a log line: quoted, escaped and cut (it is user input).
std::string header_text(const Message& message, std::string_view name) {
    const auto* value = find_header(message.properties, name);
    const auto* text = value ? std::get_if<std::string>(&value->value) : nullptr;
    return text ? quote_value(*text, 64) : std::string("?");
}

class ForwardSession {
public:
    ForwardSession(const ForwarderOptions& options, ForwarderMetrics& metrics)
        : options_(options),
          metrics_(metrics),
          connection_(connection_options(options)),
          consume_(connection_, kConsumeChannel),
          publish_(connection_, kPublishChannel) {
        publish_.enable_confirms();
        consume_.set_prefetch(options.prefetch);
        consume_.consume(options.names.forward);
        spdlog::info("forward: consuming {}", options.names.forward);
    }

    void run(std::stop_token stop) {
        std::optional<std::chrono::steady_clock::time_point> stop_deadline;
        while (true) {
            if (stop.stop_requested()) {
                // Finish what is in hand; deliveries not taken are requeued when we disconnect.
                if (!stop_deadline) stop_deadline = std::chrono::steady_clock::now() + kShutdownConfirmWait;
                if (in_hand_.empty() || std::chrono::steady_clock::now() > *stop_deadline) break;
            }
            try {
                if (auto event = connection_.next_event(kPoll)) handle(std::move(*event), stop);
            } catch (const amqp::ChannelError& error) {
                if (error.channel() != publish_.number()) throw;
                recover(error);
            }
            publish_next_suspect();
        }
        if (!in_hand_.empty()) {
            spdlog::warn("forward: {} releases unconfirmed at shutdown; they will be forwarded again",
                         in_hand_.size());
        }
    }

private:
    static amqp::ConnectionOptions connection_options(const ForwarderOptions& options) {
        auto result = options.amqp;
        result.connection_name = "hourglass forward";
        return result;
    }

    void handle(amqp::Event&& event, std::stop_token stop) {
        if (auto* delivery = std::get_if<amqp::Delivery>(&event)) {
            if (!stop.stop_requested()) take(std::move(*delivery));
        } else if (const auto* confirm = std::get_if<amqp::Confirm>(&event)) {
            settle(*confirm);
        } else if (const auto* returned = std::get_if<amqp::Returned>(&event)) {
            on_returned(*returned);
        }
    }

    void take(amqp::Delivery&& delivery) {
        const auto tag = delivery.delivery_tag;
        // The audit records a run observed with its release group's last run when that one's
        // copy arrives: it needs no copy of its own.
        const bool copy_to_audit = options_.audit && !observed_with_another_run(delivery.message);
        InHand item;
        auto targeted = targeted_release(delivery.message);
        if (targeted) {
            item.release = std::move(targeted->message);
        } else {
            item.release = std::move(delivery.message);
            remove_header(item.release.properties, header::kObservedWith);
            item.problem = "it has no x-hourglass-exchange header naming a target";
        }
        auto& held = in_hand_.emplace(tag, std::move(item)).first->second;
        if (!held.problem.empty()) {
            send_to_unroutable(tag);
        } else if (probe_ || !suspects_.empty()) {
            // While a refused publish is being tracked down, targets are tried one at a time.
            held.awaiting_probe = true;
            suspects_.push_back(tag);
        } else {
            publish(tag, Destination::target);
        }
        if (copy_to_audit) publish(tag, Destination::audit);
    }

    std::uint64_t publish(std::uint64_t tag, Destination destination) {
        auto& item = in_hand_.at(tag);
        std::uint64_t sequence = 0;
        switch (destination) {
            case Destination::target:
                // Mandatory: a target that routes it nowhere returns it (then: unroutable).
                sequence = publish_.publish(item.release, /*mandatory=*/true);
                break;
            case Destination::unroutable: {
                Message message = item.release;
                message.exchange = options_.names.unroutable;
                sequence = publish_.publish(message);
                break;
            }
            case Destination::audit: {
                // The audit reads only the x-hourglass-* headers.
                Message copy;
                copy.exchange = "";  // the default exchange routes to the queue named by the key
                copy.routing_key = options_.names.audit;
                copy.properties.headers = item.release.properties.headers;
                sequence = publish_.publish(copy);
                break;
            }
        }
        ++item.unconfirmed;
        unconfirmed_.published(sequence, Publish{tag, destination});
        return sequence;
    }

    void send_to_unroutable(std::uint64_t tag) {
        const auto& item = in_hand_.at(tag);
        if (const auto grant = unroutable_lines_.take(LogBudget::Clock::now()); grant.log) {
            spdlog::warn("forward: job {} due {} goes to {}: {}{}",
                         header_text(item.release, header::kId),
                         header_text(item.release, header::kDue), options_.names.unroutable,
                         item.problem, left_out_note(grant.left_out, "releases to it"));
        }
        publish(tag, Destination::unroutable);
    }

    void publish_next_suspect() {
        if (probe_ || suspects_.empty()) return;
        const auto tag = suspects_.front();
        suspects_.pop_front();
        in_hand_.at(tag).awaiting_probe = false;
        probe_ = publish(tag, Destination::target);
    }

    void settle(const amqp::Confirm& confirm) {
        for (const auto& settled : unconfirmed_.settle(confirm)) {
            const auto [tag, destination] = settled.value;
            if (probe_ == settled.sequence) probe_.reset();
            auto& item = in_hand_.at(tag);
            --item.unconfirmed;
            if (!settled.ack) {
                // The broker refused it (e.g. a queue with reject-publish is full). A target that
                // refuses sends the release to <prefix>.unroutable, like one that cannot route
                // it; hourglass's own publishes are tried again, a bounded number of times in a
                // row, so a nack can neither loop nor duplicate without bound.
                if (++failures_in_a_row_ > kMaxFailuresInARow) {
                    throw amqp::ConnectionError("forward: the broker keeps refusing publishes");
                }
                if (destination == Destination::target) {
                    item.problem = "exchange " + quote_value(item.release.exchange) +
                                   " refused it (basic.nack: a queue is full?)";
                    send_to_unroutable(tag);
                } else {
                    publish(tag, destination);
                }
                continue;
            }
            failures_in_a_row_ = 0;
            if (destination == Destination::target) {
                if (settled.returned) {
                    send_to_unroutable(tag);
                } else {
                    metrics_.count_forwarded(1);
                }
            } else if (destination == Destination::unroutable) {
                metrics_.count_unroutable(1);
            }
            if (item.unconfirmed == 0 && !item.awaiting_probe) {
                consume_.ack(tag);
                in_hand_.erase(tag);
            }
        }
    }

    // A return precedes the confirm of the same publish; publishes are processed in order, so
    // it belongs to the oldest unconfirmed target publish of that job and run not yet returned.
    void on_returned(const amqp::Returned& returned) {
        const auto* id = find_header(returned.message.properties, header::kId);
        const auto* run = find_header(returned.message.properties, header::kRun);
        const bool matched = id != nullptr && unconfirmed_.mark_returned([&](const Publish& publish) {
            if (publish.destination != Destination::target) return false;
            auto& item = in_hand_.at(publish.tag);
            const auto* item_id = find_header(item.release.properties, header::kId);
            const auto* item_run = find_header(item.release.properties, header::kRun);
            if (item_id == nullptr || *id != *item_id) return false;
            if ((run == nullptr) != (item_run == nullptr) || (run && *run != *item_run)) return false;
            item.problem = "exchange " + quote_value(item.release.exchange) + " routed it to no queue (" +
                           std::to_string(returned.reply_code) +
                           " NO_ROUTE, and it has no alternate exchange)";
            return true;
        });
        if (!matched) {
            spdlog::warn("forward: a returned message matches no publish in flight (job {})",
                         header_text(returned.message, header::kId));
        }
    }

    // The broker closed the publish channel: a target exchange is gone (404) or refuses
    // publishes (403). Every unconfirmed publish on it is lost. Those to hourglass's own
    // exchanges are published again; lost target publishes are tried again one at a time, so
    // that the one the broker refuses is known and goes to <prefix>.unroutable.
    void recover(const amqp::ChannelError& error) {
        if (++failures_in_a_row_ > kMaxFailuresInARow) {
            throw amqp::ConnectionError(std::string("forward: publish channel keeps closing: ") +
                                        error.what());
        }
        publish_.reopen();
        publish_.enable_confirms();
        const auto lost = unconfirmed_.take_unsettled();
        const auto refused = probe_;
        probe_.reset();
        std::deque<std::uint64_t> retry;
        for (const auto& settled : lost) {
            const auto [tag, destination] = settled.value;
            auto& item = in_hand_.at(tag);
            --item.unconfirmed;
            if (destination != Destination::target) {
                publish(tag, destination);
            } else if (settled.sequence == refused) {
                item.problem = "exchange " + quote_value(item.release.exchange) +
                               " refused it: " + error.what();
                send_to_unroutable(tag);
            } else {
                item.awaiting_probe = true;
                retry.push_back(tag);
            }
        }
        suspects_.insert(suspects_.begin(), retry.begin(), retry.end());
        if (!refused) {
            spdlog::info("forward: publish channel closed ({}); trying {} targets one at a time",
                         error.what(), suspects_.size());
        }
    }

    const ForwarderOptions& options_;
    ForwarderMetrics& metrics_;
    amqp::Connection connection_;
    amqp::Channel consume_;
    amqp::Channel publish_;
    std::map<std::uint64_t, InHand> in_hand_;  // by delivery tag on the forward queue
    amqp::ConfirmTracker<Publish> unconfirmed_;
    std::deque<std::uint64_t> suspects_;  // delivery tags whose target publish is to be probed
    std::optional<std::uint64_t> probe_;  // sequence of the one suspect publish in flight
    int failures_in_a_row_ = 0;
    LogBudget unroutable_lines_;  // jobs decide how many go there; the metrics count each
};

}  // namespace

bool observed_with_another_run(const Message& forwarded) {
    return find_header(forwarded.properties, header::kObservedWith) != nullptr;
}

std::optional<TargetedRelease> targeted_release(const Message& forwarded) {
    const auto* value = find_header(forwarded.properties, header::kExchange);
    const auto* target = value ? std::get_if<std::string>(&value->value) : nullptr;
    if (target == nullptr || target->empty()) return std::nullopt;
    TargetedRelease release{*target, forwarded};
    release.message.exchange = *target;
    remove_header(release.message.properties, header::kExchange);
    remove_header(release.message.properties, header::kObservedWith);
    return release;
}

void run_forwarder(const ForwarderOptions& options, std::stop_token stop) {
    ForwarderMetrics metrics(options.metrics->registry());
    run_with_reconnect("forward", stop, [&] {
        ForwardSession session(options, metrics);
        session.run(stop);
    });
}

}  // namespace hourglass::forward
