#include "forward/forward_session.hpp"

#include <spdlog/spdlog.h>

#include <vector>

#include "common/text.hpp"
#include "hourglass/command.hpp"

namespace hourglass::forward {

namespace {

constexpr auto kPoll = std::chrono::microseconds{100000};

// A header's text for a log line: quoted, escaped and cut (it is user input).
std::string header_text(const Message& message, std::string_view name) {
    const auto* value = find_header(message.properties, name);
    const auto* text = value ? std::get_if<std::string>(&value->value) : nullptr;
    return text ? quote_value(*text, 64) : std::string("?");
}

}  // namespace

ForwardSession::ForwardSession(const ForwarderOptions& options, ForwarderMetrics& metrics,
                               ForwardChannel& channel)
    : options_(options), metrics_(metrics), channel_(channel) {}

void ForwardSession::run(std::stop_token stop) {
    std::optional<std::chrono::steady_clock::time_point> stop_deadline;
    while (true) {
        if (stop.stop_requested()) {
            // Finish what is in hand; deliveries not taken are requeued when we disconnect.
            if (!stop_deadline) stop_deadline = std::chrono::steady_clock::now() + kShutdownConfirmWait;
            if (in_hand_.empty() || std::chrono::steady_clock::now() > *stop_deadline) break;
        }
        poll(stop, kPoll);
    }
    if (!in_hand_.empty()) {
        spdlog::warn("forward: {} releases unconfirmed at shutdown; they will be forwarded again",
                     in_hand_.size());
    }
}

void ForwardSession::poll(std::stop_token stop, std::chrono::microseconds wait) {
    try {
        if (auto event = channel_.next_event(wait)) handle(std::move(*event), stop);
    } catch (const amqp::ChannelError& error) {
        if (error.channel() != channel_.publish_channel()) throw;
        recover(error);
    }
    publish_next_suspect();
}

void ForwardSession::handle(amqp::Event&& event, std::stop_token stop) {
    if (auto* delivery = std::get_if<amqp::Delivery>(&event)) {
        if (!stop.stop_requested()) take(std::move(*delivery));
    } else if (const auto* confirm = std::get_if<amqp::Confirm>(&event)) {
        settle(*confirm);
    } else if (const auto* returned = std::get_if<amqp::Returned>(&event)) {
        on_returned(*returned);
    }
}

void ForwardSession::take(amqp::Delivery&& delivery) {
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

std::uint64_t ForwardSession::publish(std::uint64_t tag, Destination destination) {
    auto& item = in_hand_.at(tag);
    std::uint64_t sequence = 0;
    switch (destination) {
        case Destination::target:
            // Mandatory: a target that routes it nowhere returns it (then: unroutable).
            sequence = channel_.publish(item.release, /*mandatory=*/true);
            break;
        case Destination::unroutable: {
            Message message = item.release;
            message.exchange = options_.names.unroutable;
            sequence = channel_.publish(message, /*mandatory=*/false);
            break;
        }
        case Destination::audit: {
            // The audit reads only the x-hourglass-* headers.
            Message copy;
            copy.exchange = "";  // the default exchange routes to the queue named by the key
            copy.routing_key = options_.names.audit;
            copy.properties.headers = item.release.properties.headers;
            sequence = channel_.publish(copy, /*mandatory=*/false);
            break;
        }
    }
    ++item.unconfirmed;
    unconfirmed_.published(sequence, Publish{tag, destination});
    return sequence;
}

void ForwardSession::send_to_unroutable(std::uint64_t tag) {
    const auto& item = in_hand_.at(tag);
    if (const auto grant = unroutable_lines_.take(LogBudget::Clock::now()); grant.log) {
        spdlog::warn("forward: job {} due {} goes to {}: {}{}",
                     header_text(item.release, header::kId),
                     header_text(item.release, header::kDue), options_.names.unroutable,
                     item.problem, left_out_note(grant.left_out, "releases to it"));
    }
    publish(tag, Destination::unroutable);
}

void ForwardSession::publish_next_suspect() {
    if (probe_ || suspects_.empty()) return;
    const auto tag = suspects_.front();
    suspects_.pop_front();
    in_hand_.at(tag).awaiting_probe = false;
    probe_ = publish(tag, Destination::target);
}

void ForwardSession::settle(const amqp::Confirm& confirm) {
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
            channel_.ack(tag);
            in_hand_.erase(tag);
        }
    }
}

// A return precedes the confirm of the same publish; publishes are processed in order, so
// it belongs to the oldest unconfirmed target publish of that job and run not yet returned.
void ForwardSession::on_returned(const amqp::Returned& returned) {
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
void ForwardSession::recover(const amqp::ChannelError& error) {
    if (++failures_in_a_row_ > kMaxFailuresInARow) {
        throw amqp::ConnectionError(std::string("forward: publish channel keeps closing: ") +
                                    error.what());
    }
    channel_.reopen_publishing();
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

}  // namespace hourglass::forward
