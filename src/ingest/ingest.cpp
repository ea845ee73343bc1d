#include "ingest/ingest.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <iterator>
#include <optional>
#include <unordered_set>
#include <utility>

#include "amqp/ack_plan.hpp"
#include "amqp/confirm_tracker.hpp"
#include "common/log_budget.hpp"
#include "common/retry.hpp"
#include "common/text.hpp"
#include "ingest/ingest_metrics.hpp"
#include "store/errors.hpp"

namespace hourglass::ingest {

namespace {
// A database error names the value it refused; keep the reason short (reference §4).
constexpr std::size_t kMaxDatabaseReasonBytes = 300;

struct Received {
    amqp::Delivery delivery;
    TimePoint received_at;
};

// What ingest publishes, and what a broker refusal (basic.nack) of it means.
enum class Publication {
    rejection,  // must be safe before the command is acked: a refusal is retried
    receipt,    // a courtesy to the client: a refusal (reply queue full) only is logged
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

std::string first_line(std::string_view text) {
    const auto end = text.find('\n');
    return std::string(text.substr(0, end));
}

class IngestSession {
public:
    IngestSession(const IngestOptions& options, const IngestSeams& seams,
                  const LoaderLink& loader, IngestMetrics& metrics)
        : options_(options),
          loader_(loader),
          metrics_(metrics),
          now_(seams.now),
          limits_(options.limits),
          store_(seams.open_store(options.store)),
          channel_(seams.open_channel(options)) {
        // What hourglass publishes must fit the frame_max the broker agreed to (reference §4).
        max_properties_bytes_ = channel_->frame_max() - kContentHeaderOverhead;
        limits_.max_properties_bytes = std::min(
            limits_.max_properties_bytes, max_properties_bytes_ - kReleaseHeaderReserve);
    }

    void run(std::stop_token stop) {
        while (!stop.stop_requested()) {
            collect_batch(stop);
            if (!batch_.empty() || retry_due()) process_batch(stop);
        }
    }

private:
    void take(amqp::Event&& event) {
        if (auto* delivery = std::get_if<amqp::Delivery>(&event)) {
            batch_bytes_ += delivery->message.body.size();
            batch_.push_back({std::move(*delivery), now_()});
        } else if (const auto* confirm = std::get_if<amqp::Confirm>(&event)) {
            for (const auto& settled : publications_.settle(*confirm)) {
                if (settled.ack) continue;
                if (settled.value == Publication::rejection) {
                    // hourglass.rejected refuses (e.g. a length limit with reject-publish): the
                    // command stays unacked and is tried again after a backoff.
                    throw amqp::ConnectionError("the broker refused a copy for " +
                                                options_.names.rejected);
                }
                if (const auto grant = refused_receipt_lines_.take(LogBudget::Clock::now());
                    grant.log) {
                    spdlog::warn(
                        "ingest: the broker refused a receipt (its reply queue is full?){}",
                        left_out_note(grant.left_out, "refused receipts"));
                }
            }
        }
    }

    // Gathers up to batch_size commands (or batch_bytes of bodies), waiting at most batch_wait
    // after the first one.
    void collect_batch(std::stop_token stop) {
        std::optional<std::chrono::steady_clock::time_point> deadline;
        while (batch_.size() < options_.batch_size && batch_bytes_ < options_.batch_bytes &&
               !stop.stop_requested()) {
            auto wait = std::chrono::microseconds{100000};
            if (!batch_.empty()) {
                if (!deadline) deadline = std::chrono::steady_clock::now() + options_.batch_wait;
                const auto left = *deadline - std::chrono::steady_clock::now();
                wait = std::max(std::chrono::microseconds{0},
                                std::chrono::duration_cast<std::chrono::microseconds>(left));
            }
            auto event = channel_->next_event(wait);
            if (event) {
                take(std::move(*event));
            } else if (!batch_.empty() || retry_due()) {
                return;  // nothing more arrived in time, or commands wait to be tried again
            }
        }
    }

    void process_batch(std::stop_token stop) {
        metrics_.count_received(batch_.size());
        const bool retrying = retry_due();
        auto [round, retried] = take_round(retrying);
        std::vector<Command> commands;
        commands.reserve(round.size());
        for (const auto& received : round) {
            const auto& message = received.delivery.message;
            auto command = parse_command(message, received.received_at, limits_, generate_uuid);
            assign_owner(command, amqp_owner(message, limits_.owners), limits_.owners);
            commands.push_back(std::move(command));
        }
        auto outcomes = apply_round(commands, retried, retrying);
        bound_waiting(round, commands, outcomes);
        record_rejections(round, commands, outcomes);
        const auto answered = answer_outcomes(round, commands, outcomes);
        if (answered.earliest_due && loader_.wake) loader_.wake(*answered.earliest_due);
        // Rejections must be safe in the broker before the command is acked (never dropped).
        auto arrived_meanwhile = await_publications(stop);
        settle_round(round, commands, outcomes, retrying);
        metrics_.count_outcomes(answered.applied);
        spdlog::debug("ingest: committed {} commands ({} rejected, {} waiting)", answered.applied.size(),
                      answered.rejected, waiting_.size());
        batch_bytes_ = 0;
        for (const auto& received : arrived_meanwhile) batch_bytes_ += received.delivery.message.body.size();
        batch_.assign(std::make_move_iterator(arrived_meanwhile.begin()),
                      std::make_move_iterator(arrived_meanwhile.end()));
    }

    // The round: the commands waiting for a locked job first when it is time to try them again
    // (else they stay where they are), then the batch. Delivery tags increase along it. Returns
    // it with the count of retried commands at its head.
    std::pair<std::vector<Received>, std::size_t> take_round(bool retrying) {
        std::vector<Received> round;
        round.reserve((retrying ? waiting_.size() : 0) + batch_.size());
        if (retrying) {
            std::move(waiting_.begin(), waiting_.end(), std::back_inserter(round));
            waiting_.clear();
        }
        const auto retried = round.size();
        std::move(batch_.begin(), batch_.end(), std::back_inserter(round));
        batch_.clear();
        return {std::move(round), retried};
    }

    // Applies the round's commands, the first `retried` apart from the rest: a job still locked
    // costs the batch no second wait. No outcome: the job's row is locked, the command waits.
    Outcomes apply_round(std::vector<Command>& commands, std::size_t retried, bool retrying) {
        std::unordered_set<std::string> waiting_ids;
        if (!retrying) waiting_ids = waiting_ids_;
        // Jobs claimed at insert are handed to the loader as each part of the batch commits,
        // whatever befalls the parts after it: a row leased to this loader and never handed
        // over would be nobody's until this instance stops.
        InsertClaims claims(loader_, offer_insert_claims(commands));
        const auto apply = [&](std::span<const Command> part) {
            auto outcomes = store_->apply(part, claims.offer());
            claims.committed(part, outcomes);
            return outcomes;
        };
        const std::span<const Command> all(commands);
        auto outcomes = apply_isolating(all.first(retried), apply, waiting_ids);
        auto fresh = apply_isolating(all.subspan(retried), apply, waiting_ids);
        std::move(fresh.begin(), fresh.end(), std::back_inserter(outcomes));
        claims.hand_over();
        return outcomes;
    }

    struct Answered {
        std::vector<CommandOutcome> applied;
        std::size_t rejected = 0;
        std::optional<TimePoint> earliest_due;  // of the jobs accepted within the horizon
    };
    // Publishes each outcome's rejection and receipt, and logs the commands that wait.
    Answered answer_outcomes(const std::vector<Received>& round, const std::vector<Command>& commands,
                             const Outcomes& outcomes) {
        Answered answered;
        const auto horizon_end = now_() + options_.horizon;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            if (!outcomes[i]) {
                if (const auto grant = waiting_lines_.take(LogBudget::Clock::now()); grant.log) {
                    spdlog::warn(
                        "ingest: job {} is locked by another PostgreSQL transaction; its "
                        "command waits and is tried again{}",
                        quote_value(commands[i].id, 64),
                        left_out_note(grant.left_out, "such waits"));
                }
                continue;
            }
            const auto& outcome = *outcomes[i];
            answered.applied.push_back(outcome);
            if (outcome.status == CommandStatus::rejected) {
                ++answered.rejected;
                if (const auto grant = rejection_lines_.take(LogBudget::Clock::now()); grant.log) {
                    spdlog::info("ingest: rejected a command (id {}): {}{}",
                                 quote_value(commands[i].id, 64), outcome.error,
                                 left_out_note(grant.left_out, "rejections"));
                }
                publications_.published(channel_->publish(rejected_message(
                                            round[i].delivery.message, options_.names.rejected,
                                            outcome.error, max_properties_bytes_)),
                                        Publication::rejection);
            }
            if (commands[i].reply_to) {
                publications_.published(
                    channel_->publish(receipt_message(*commands[i].reply_to, commands[i], outcome)),
                    Publication::receipt);
            }
            if ((outcome.status == CommandStatus::scheduled ||
                 outcome.status == CommandStatus::replaced) &&
                !outcome.claimed && outcome.due && *outcome.due <= horizon_end) {
                answered.earliest_due = std::min(answered.earliest_due.value_or(*outcome.due), *outcome.due);
            }
        }
        return answered;
    }

    // Waits for the confirms of the round's publications; returns the commands that arrived
    // meanwhile (the next batch).
    std::deque<Received> await_publications(std::stop_token stop) {
        std::deque<Received> arrived_meanwhile;
        while (!publications_.empty()) {
            // Left unacked: the broker delivers the batch again to whoever consumes next.
            if (stop.stop_requested()) throw amqp::ConnectionError("stopping before confirms");
            if (auto event = channel_->next_event(std::chrono::milliseconds{100})) {
                if (auto* delivery = std::get_if<amqp::Delivery>(&*event)) {
                    arrived_meanwhile.push_back({std::move(*delivery), now_()});
                } else {
                    take(std::move(*event));
                }
            }
        }
        return arrived_meanwhile;
    }

    // Acks the round's commands that have an outcome and keeps the others waiting, in delivery
    // order. While an earlier command waits, later ones are acked one by one (an ack "through"
    // a tag would ack the waiting one too).
    void settle_round(std::vector<Received>& round, const std::vector<Command>& commands,
                      const Outcomes& outcomes, bool retried) {
        std::deque<Received> waiting = std::move(waiting_);  // not tried this round
        waiting_.clear();
        if (retried) waiting_ids_.clear();
        std::vector<std::uint64_t> done;
        for (std::size_t i = 0; i < round.size(); ++i) {
            if (outcomes[i]) {
                done.push_back(round[i].delivery.delivery_tag);
            } else {
                waiting.push_back(std::move(round[i]));
                waiting_ids_.insert(commands[i].id);
            }
        }
        const auto first_waiting =
            waiting.empty() ? std::nullopt : std::optional{waiting.front().delivery.delivery_tag};
        const auto acks = amqp::plan_acks(done, first_waiting);
        for (const auto tag : acks.one_by_one) channel_->ack(tag);
        if (acks.through) channel_->ack_through(*acks.through);
        waiting_ = std::move(waiting);
        metrics_.set_waiting(waiting_.size());
        retry_.settled(std::chrono::steady_clock::now(), !waiting_.empty(), retried);
    }

    // Waiting commands are held in memory and in the prefetch window, and clients decide how
    // many come for a locked job: past half the window or batch_bytes of bodies, the latest
    // are rejected (new commands must keep coming, and memory stays bounded).
    void bound_waiting(const std::vector<Received>& round, const std::vector<Command>& commands,
                       Outcomes& outcomes) const {
        std::size_t count = 0, bytes = 0;
        for (const auto& waiting : waiting_) {
            ++count;
            bytes += waiting.delivery.message.body.size();
        }
        const std::size_t max_count = std::max<std::size_t>(options_.prefetch / 2, 1);
        for (std::size_t i = 0; i < round.size(); ++i) {
            if (outcomes[i]) continue;
            const auto body = round[i].delivery.message.body.size();
            if (count + 1 <= max_count && bytes + body <= options_.batch_bytes) {
                ++count;
                bytes += body;
                continue;
            }
            outcomes[i] = CommandOutcome{CommandStatus::rejected, std::nullopt,
                                         "job " + quote_value(commands[i].id, 64) +
                                             " is locked by another PostgreSQL transaction, and " +
                                             std::to_string(count) +
                                             " commands already wait for locked jobs"};
        }
    }

    bool retry_due() const { return retry_.due(std::chrono::steady_clock::now()); }

    // For the console's list of recent rejections (migration 008). Rejections are what a bad
    // command ends in, so their record must never hold up the others: a refusal by the database
    // is only logged (the copy on hourglass.rejected is the record that counts); a lost
    // connection is retried with the batch like any other.
    void record_rejections(const std::vector<Received>& round, const std::vector<Command>& commands,
                           const Outcomes& outcomes) {
        std::vector<store::RecordedRejection> rejections;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            if (!outcomes[i] || outcomes[i]->status != CommandStatus::rejected) continue;
            rejections.push_back(
                {commands[i].id, round[i].delivery.message.routing_key, outcomes[i]->error});
        }
        try {
            store_->record_rejections(rejections);
        } catch (const std::exception& failure) {
            if (store::classify_failure(failure) == store::FailureKind::transient) throw;
            spdlog::warn("ingest: could not record {} rejections for the console: {}",
                         rejections.size(), printable(first_line(failure.what()), kMaxDatabaseReasonBytes));
        }
    }

    // Asks the loader for room to claim the batch's plain one-shot schedules due within the
    // horizon at insert, and marks those that fit (claim_at_insert), earliest first in the
    // batch's order; none without the loader's offer.
    std::optional<InsertClaimOffer> offer_insert_claims(std::vector<Command>& commands) {
        if (!loader_.offer_claims || !loader_.adopt_claims) return std::nullopt;
        const auto eligible = [](const Command& command) -> const ScheduleCommand* {
            const auto* job = std::get_if<ScheduleCommand>(&command.action);
            if (!job || job->replace || job->cron || !job->exchange.empty()) return nullptr;
            return job;
        };
        // The candidates and their bytes as the loader counts them (body and properties).
        const auto horizon_end = now_() + options_.horizon;
        std::vector<std::pair<ScheduleCommand*, std::size_t>> candidates;
        std::size_t bytes = 0;
        for (auto& command : commands) {
            const auto* job = eligible(command);
            if (!job || job->due_at > horizon_end) continue;
            auto& schedule = std::get<ScheduleCommand>(command.action);
            candidates.emplace_back(&schedule, job->body.size() + encoded_size(job->properties));
            bytes += candidates.back().second;
        }
        auto offer = loader_.offer_claims(candidates.size(), bytes);
        if (!offer) return std::nullopt;
        std::size_t taken_runs = 0;
        std::size_t taken_bytes = 0;
        for (const auto& [job, job_bytes] : candidates) {
            if (job->due_at > offer->horizon_end) continue;
            if (taken_runs == offer->runs || taken_bytes + job_bytes > offer->bytes) break;
            job->claim_at_insert = true;
            ++taken_runs;
            taken_bytes += job_bytes;
        }
        return offer;
    }

    // One batch's claims at insert: the runs its committed parts leased to the loader, handed
    // over once (hand_over, or the destructor when a later part failed), which also ends the
    // offer's reservation.
    class InsertClaims {
    public:
        InsertClaims(const LoaderLink& loader, std::optional<InsertClaimOffer> offer)
            : loader_(loader), offer_(std::move(offer)) {}
        ~InsertClaims() { hand_over(); }
        InsertClaims(const InsertClaims&) = delete;
        InsertClaims& operator=(const InsertClaims&) = delete;

        const InsertClaimOffer* offer() const { return offer_ ? &*offer_ : nullptr; }
        void committed(std::span<const Command> part, const std::vector<CommandOutcome>& outcomes) {
            for (std::size_t i = 0; i < part.size() && i < outcomes.size(); ++i) {
                if (!outcomes[i].claimed) continue;
                const auto& job = std::get<ScheduleCommand>(part[i].action);
                runs_.push_back(ClaimedRun{.id = job.id,
                                           .routing_key = job.routing_key,
                                           .exchange = {},
                                           .body = job.body,
                                           .properties = job.properties,
                                           .due_at = job.due_at,
                                           .run = 1,
                                           .cron = std::nullopt,
                                           .resent = false,
                                           .observe_itself = false,
                                           .expires_after = job.expires_after});
            }
        }
        void hand_over() {
            if (!offer_) return;
            const auto offer = std::exchange(offer_, std::nullopt);
            loader_.adopt_claims(*offer, std::exchange(runs_, {}));
        }

    private:
        const LoaderLink& loader_;
        std::optional<InsertClaimOffer> offer_;
        std::vector<ClaimedRun> runs_;
    };

    const IngestOptions& options_;
    const LoaderLink& loader_;
    IngestMetrics& metrics_;
    const std::function<TimePoint()>& now_;
    CommandLimits limits_;  // the options' limits, bounded by this connection's frame_max
    std::unique_ptr<store::CommandStore> store_;
    std::unique_ptr<CommandChannel> channel_;
    std::size_t max_properties_bytes_ = 0;
    std::vector<Received> batch_;
    std::size_t batch_bytes_ = 0;
    amqp::ConfirmTracker<Publication> publications_;
    // Commands whose job row another transaction keeps locked, in delivery order: unacked and
    // tried again when retry_ says.
    std::deque<Received> waiting_;
    std::unordered_set<std::string> waiting_ids_;  // their job ids
    LockedRowsRetry retry_;
    // Clients decide how often these run; the metrics count every one.
    LogBudget rejection_lines_;
    LogBudget refused_receipt_lines_;
    LogBudget waiting_lines_;
};

}  // namespace

namespace {

bool waits(const Command& command, const std::unordered_set<std::string>& waiting_ids) {
    return !std::holds_alternative<Rejection>(command.action) && waiting_ids.count(command.id) > 0;
}

// apply_isolating for commands none of which waits yet.
Outcomes apply_or_split(std::span<const Command> commands, const ApplyCommands& apply,
                        std::unordered_set<std::string>& waiting_ids) {
    try {
        auto applied = apply(commands);
        return {std::make_move_iterator(applied.begin()), std::make_move_iterator(applied.end())};
    } catch (const std::exception& failure) {
        const auto kind = store::classify_failure(failure);
        if (kind == store::FailureKind::transient) throw;
        if (commands.size() == 1) {
            if (kind == store::FailureKind::busy) {
                waiting_ids.insert(commands[0].id);
                return {std::nullopt};
            }
            return {CommandOutcome{
                CommandStatus::rejected, std::nullopt,
                "PostgreSQL refused the command: " +
                    printable(first_line(failure.what()), kMaxDatabaseReasonBytes)}};
        }
        // The second half after the first: a job found busy there holds back its later commands.
        const auto half = commands.size() / 2;
        auto outcomes = apply_isolating(commands.first(half), apply, waiting_ids);
        auto rest = apply_isolating(commands.subspan(half), apply, waiting_ids);
        outcomes.insert(outcomes.end(), std::make_move_iterator(rest.begin()),
                        std::make_move_iterator(rest.end()));
        return outcomes;
    }
}

}  // namespace

Outcomes apply_isolating(std::span<const Command> commands, const ApplyCommands& apply,
                         std::unordered_set<std::string>& waiting_ids) {
    if (commands.empty()) return {};
    if (std::none_of(commands.begin(), commands.end(),
                     [&](const Command& command) { return waits(command, waiting_ids); })) {
        return apply_or_split(commands, apply, waiting_ids);
    }
    // Rare (a job's row was locked): the others are copied out, applied, and put back in place.
    std::vector<Command> others;
    std::vector<std::size_t> positions;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        if (waits(commands[i], waiting_ids)) continue;
        others.push_back(commands[i]);
        positions.push_back(i);
    }
    Outcomes outcomes(commands.size());
    if (others.empty()) return outcomes;
    auto applied = apply_isolating(others, apply, waiting_ids);
    for (std::size_t k = 0; k < positions.size(); ++k)
        outcomes[positions[k]] = std::move(applied[k]);
    return outcomes;
}

Message rejected_message(const Message& command, const std::string& exchange,
                         const std::string& error, std::size_t max_properties_bytes) {
    Message rejected;
    rejected.exchange = exchange;
    rejected.routing_key = command.routing_key;
    rejected.body = command.body;
    rejected.properties = command.properties;
    // RabbitMQ checks user_id against the publishing connection, which is hourglass's: keep the
    // value as a header, as on release (reference §3.1).
    if (rejected.properties.user_id) {
        set_header(rejected.properties, std::string(header::kUserId), *rejected.properties.user_id);
        rejected.properties.user_id.reset();
    }
    set_header(rejected.properties, std::string(header::kError), error);
    // Too large for one frame: the largest headers go, and the error says which.
    const auto dropped = drop_largest_headers(rejected.properties, max_properties_bytes,
                                              header::kError);
    if (!dropped.empty()) {
        set_header(rejected.properties, std::string(header::kError),
                   error + "; " + describe_dropped_headers(dropped));
    }
    return rejected;
}

void run_ingest(const IngestOptions& options, const LoaderLink& loader, std::stop_token stop,
                IngestSeams seams) {
    if (!seams.open_store) {
        seams.open_store = store::open_command_store;
    }
    if (!seams.open_channel) {
        seams.open_channel = [](const IngestOptions& ingest_options) {
            return open_command_channel(ingest_options.amqp, ingest_options.names.input,
                                        ingest_options.prefetch);
        };
    }
    if (!seams.now) seams.now = [clock = options.clock] { return clock->now_ms(); };
    IngestMetrics metrics(options.metrics->registry());
    run_with_reconnect("ingest", stop, [&] {
        IngestSession session(options, seams, loader, metrics);
        session.run(stop);
    });
}

}  // namespace hourglass::ingest
