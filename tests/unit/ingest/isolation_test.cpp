// Per-command isolation in ingest (reference §4): a batch the database refuses for its data is
// split until the command at fault is found; a transient failure is never blamed on a command.
// And a rejection copy always fits the frame.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pqxx/except>
#include <unordered_set>

#include "ingest/ingest.hpp"
#include "store/errors.hpp"

namespace hourglass::ingest {
namespace {

using ::testing::HasSubstr;

std::vector<Command> commands_with_ids(std::initializer_list<const char*> ids) {
    std::vector<Command> commands;
    for (const auto* id : ids) {
        Command command;
        command.id = id;
        command.action = CancelCommand{id};
        commands.push_back(command);
    }
    return commands;
}

// A store that refuses, like PostgreSQL, any batch holding a command whose id starts with
// "bad", and times out on a lock in any holding one that starts with "locked"; it records every
// batch it was given and what it committed.
struct FakeStore {
    std::vector<std::size_t> batch_sizes;
    std::vector<std::string> committed;

    std::vector<CommandOutcome> apply(std::span<const Command> commands) {
        batch_sizes.push_back(commands.size());
        for (const auto& command : commands) {
            if (command.id.starts_with("locked")) {
                throw pqxx::sql_error("ERROR:  canceling statement due to lock timeout", "",
                                      "55P03");
            }
            if (command.id.starts_with("bad")) {
                throw pqxx::data_exception("ERROR:  date/time field value out of range: \"0000-01-01\"\n"
                                           "HINT: a second line",
                                           "INSERT ...", "22008");
            }
        }
        std::vector<CommandOutcome> outcomes;
        for (const auto& command : commands) {
            committed.push_back(command.id);
            outcomes.push_back({CommandStatus::cancelled, std::nullopt, {}});
        }
        return outcomes;
    }
    ApplyCommands as_function() {
        return [this](std::span<const Command> part) { return apply(part); };
    }
};

TEST(ApplyIsolating, only_the_command_the_database_refuses_is_rejected_in_order) {
    FakeStore store;
    const auto commands = commands_with_ids({"a", "b", "bad-1", "c", "d", "e", "bad-2", "f"});
    std::unordered_set<std::string> waiting;
    const auto outcomes = apply_isolating(commands, store.as_function(), waiting);
    ASSERT_EQ(outcomes.size(), commands.size());
    for (std::size_t i = 0; i < commands.size(); ++i) {
        SCOPED_TRACE(commands[i].id);
        ASSERT_TRUE(outcomes[i]);
        if (commands[i].id.starts_with("bad")) {
            EXPECT_EQ(outcomes[i]->status, CommandStatus::rejected);
            EXPECT_THAT(outcomes[i]->error, HasSubstr("date/time field value out of range"));
            EXPECT_THAT(outcomes[i]->error, ::testing::Not(HasSubstr("HINT")));
        } else {
            EXPECT_EQ(outcomes[i]->status, CommandStatus::cancelled);
        }
    }
    EXPECT_TRUE(waiting.empty());
    EXPECT_EQ(store.committed, (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}))
        << "the good commands commit, in their order";
}

TEST(ApplyIsolating, one_bad_command_in_500_costs_a_logarithmic_number_of_tries) {
    FakeStore store;
    std::vector<Command> commands = commands_with_ids({});
    for (int i = 0; i < 500; ++i) {
        commands.push_back(commands_with_ids({i == 321 ? "bad" : "ok"})[0]);
    }
    std::unordered_set<std::string> waiting;
    const auto outcomes = apply_isolating(commands, store.as_function(), waiting);
    EXPECT_EQ(outcomes[321]->status, CommandStatus::rejected);
    EXPECT_EQ(store.committed.size(), 499u);
    EXPECT_LE(store.batch_sizes.size(), 2u * 9 + 1);
}

// A job whose row another transaction keeps locked: its commands wait (no outcome, not
// applied), later commands for it too, and the others are applied in order.
TEST(ApplyIsolating, commands_for_a_locked_job_wait_and_the_others_are_applied) {
    FakeStore store;
    const auto commands = commands_with_ids({"a", "locked-1", "b", "bad", "locked-1", "c"});
    std::unordered_set<std::string> waiting;
    const auto outcomes = apply_isolating(commands, store.as_function(), waiting);
    ASSERT_EQ(outcomes.size(), commands.size());
    EXPECT_FALSE(outcomes[1]);
    EXPECT_FALSE(outcomes[4]);
    ASSERT_TRUE(outcomes[3]);
    EXPECT_EQ(outcomes[3]->status, CommandStatus::rejected);
    EXPECT_EQ(store.committed, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(waiting, (std::unordered_set<std::string>{"locked-1"}));
}

// Commands for a job already waiting are not even tried: they wait behind the earlier ones, also
// once the lock is gone (here the store would now take "x").
TEST(ApplyIsolating, commands_for_a_waiting_job_wait_without_being_tried) {
    FakeStore store;
    std::unordered_set<std::string> waiting = {"x"};
    const auto outcomes =
        apply_isolating(commands_with_ids({"x", "a", "x"}), store.as_function(), waiting);
    EXPECT_FALSE(outcomes[0]);
    ASSERT_TRUE(outcomes[1]);
    EXPECT_FALSE(outcomes[2]);
    EXPECT_EQ(store.committed, (std::vector<std::string>{"a"}));
    EXPECT_EQ(store.batch_sizes, (std::vector<std::size_t>{1}));
}

TEST(ClassifyFailure, a_lock_timeout_means_busy) {
    EXPECT_EQ(store::classify_failure(pqxx::sql_error("lock timeout", "", "55P03")),
              store::FailureKind::busy);
}

TEST(ApplyIsolating, transient_failures_propagate_and_reject_nothing) {
    for (const auto& failure : std::vector<std::function<void()>>{
             [] { throw pqxx::broken_connection("server closed the connection"); },
             [] { throw pqxx::in_doubt_error("commit in doubt"); },
             [] { throw pqxx::sql_error("terminating connection due to administrator command", "", "57P01"); },
             [] { throw pqxx::insufficient_privilege("permission denied for table jobs", "", "42501"); },
             [] { throw pqxx::serialization_failure("could not serialize"); }}) {
        int calls = 0;
        const ApplyCommands apply = [&](std::span<const Command>) -> std::vector<CommandOutcome> {
            ++calls;
            failure();
            return {};
        };
        std::unordered_set<std::string> waiting;
        EXPECT_ANY_THROW(apply_isolating(commands_with_ids({"a", "b", "c"}), apply, waiting));
        EXPECT_EQ(calls, 1) << "never split on a transient failure";
    }
}

TEST(ClassifyFailure, data_integrity_and_limit_errors_are_about_the_data) {
    using store::classify_failure, store::FailureKind;
    EXPECT_EQ(classify_failure(pqxx::data_exception("x", "", "22008")), FailureKind::about_the_data);
    EXPECT_EQ(classify_failure(pqxx::sql_error("x", "", "22P05")), FailureKind::about_the_data);
    EXPECT_EQ(classify_failure(pqxx::sql_error("x", "", "23505")), FailureKind::about_the_data);
    EXPECT_EQ(classify_failure(pqxx::sql_error("stack depth", "", "54001")), FailureKind::about_the_data);
    EXPECT_EQ(classify_failure(pqxx::sql_error("x", "", "53100")), FailureKind::transient);
    EXPECT_EQ(classify_failure(pqxx::sql_error("x", "", "42P01")), FailureKind::transient);
    EXPECT_EQ(classify_failure(std::runtime_error("unknown")), FailureKind::transient);
}

Message command_with_headers(FieldTable headers) {
    Message command;
    command.routing_key = "orders";
    command.body = "body";
    command.properties.message_id = "job-1";
    command.properties.headers = std::move(headers);
    return command;
}

std::string error_of(const Message& message) {
    const auto* value = find_header(message.properties, header::kError);
    const auto* text = value ? std::get_if<std::string>(&value->value) : nullptr;
    return text ? *text : "<none>";
}

TEST(RejectedMessage, carries_the_command_unchanged_with_the_error_when_it_fits) {
    const auto command = command_with_headers({{"x-cron-tz", std::string("Nowhere/City")}});
    const auto copy = rejected_message(command, "hourglass.rejected", "x-cron-tz: unknown", 131000);
    EXPECT_EQ(copy.exchange, "hourglass.rejected");
    EXPECT_EQ(copy.body, "body");
    EXPECT_NE(find_header(copy.properties, "x-cron-tz"), nullptr);
    EXPECT_EQ(error_of(copy), "x-cron-tz: unknown");
}

TEST(RejectedMessage, oversized_headers_are_dropped_and_named_so_the_copy_fits) {
    const auto command = command_with_headers({{"x-cron-tz", std::string(70 * 1024, 'z')},
                                               {"x-cron", std::string("* * * * *")},
                                               {"big-2", std::string(50 * 1024, 'b')},
                                               {"small", std::int32_t{1}}});
    const std::size_t limit = 60 * 1024;
    const auto copy = rejected_message(command, "hourglass.rejected", "x-cron-tz: unknown zone", limit);
    EXPECT_LE(encoded_size(copy.properties), limit);
    EXPECT_EQ(find_header(copy.properties, "x-cron-tz"), nullptr);
    EXPECT_NE(find_header(copy.properties, "x-cron"), nullptr) << "only what must go goes";
    EXPECT_NE(find_header(copy.properties, "small"), nullptr);
    EXPECT_THAT(error_of(copy), HasSubstr("x-cron-tz: unknown zone; headers dropped to fit the frame size"));
    EXPECT_THAT(error_of(copy), HasSubstr("'x-cron-tz' (71695 bytes)"));
    EXPECT_EQ(copy.body, command.body);
}

TEST(RejectedMessage, hundreds_of_headers_still_fit_and_the_note_stays_short) {
    FieldTable headers;
    for (int i = 0; i < 300; ++i) headers.emplace_back("h" + std::to_string(i), std::string(1000, 'v'));
    const auto copy = rejected_message(command_with_headers(headers), "r", "too many", 100 * 1024);
    EXPECT_LE(encoded_size(copy.properties), 100u * 1024u);
    EXPECT_THAT(error_of(copy), HasSubstr("more"));
    EXPECT_LT(error_of(copy).size(), 2000u);
}

}  // namespace
}  // namespace hourglass::ingest
