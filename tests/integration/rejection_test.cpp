// Every rejection reason of reference §4: the command goes to hourglass.rejected unchanged plus
// x-hourglass-error naming the header and value, the receipt says `rejected`, the command is
// acked, and the service keeps working.
#include <thread>

#include "integration/harness.hpp"

namespace hourglass::testing {
namespace {

using namespace std::chrono_literals;

struct BadCommand {
    std::string name;
    std::function<void(Message&)> spoil;
    std::string error_mentions;  // the header (or body) and value the error must name
};

// One command for each rejection reason, with what its error must name.
std::vector<BadCommand> bad_commands() {
    return {
        {"no time header", [](Message& m) { remove_header(m.properties, "x-delay"); }, "x-delay"},
        {"two time headers",
         [](Message& m) { set_header(m.properties, "x-schedule-at", std::string("2030-01-01T00:00:00Z")); },
         "x-schedule-at"},
        {"negative delay", [](Message& m) { set_header(m.properties, "x-delay", std::int32_t{-5}); },
         "-5"},
        {"non-numeric delay",
         [](Message& m) { set_header(m.properties, "x-delay", std::string("soon")); }, "'soon'"},
        {"unparsable schedule-at",
         [](Message& m) {
             remove_header(m.properties, "x-delay");
             set_header(m.properties, "x-schedule-at", std::string("tomorrow at noon"));
         },
         "'tomorrow at noon'"},
        {"delay beyond max-delay",
         [](Message& m) { set_header(m.properties, "x-delay", std::int64_t{7200000}); }, "7200000"},
        {"body too large", [](Message& m) { m.body = std::string(1001, 'x'); }, "1001"},
        {"cron header without x-cron",
         [](Message& m) { set_header(m.properties, "x-cron-tz", std::string("Europe/Berlin")); },
         "x-cron-tz"},
        {"cron limit without x-cron",
         [](Message& m) { set_header(m.properties, "x-cron-limit", std::int32_t{3}); },
         "x-cron-limit"},
        {"bad replace flag",
         [](Message& m) { set_header(m.properties, "x-replace", std::string("perhaps")); },
         "'perhaps'"},
        {"cancel without message_id",
         [](Message& m) {
             m.properties.message_id.reset();
             set_header(m.properties, "x-cancel", true);
         },
         "x-cancel"},
        {"target exchange not allowed",
         [](Message& m) { set_header(m.properties, "x-hourglass-exchange", std::string("other.exchange")); },
         "'other.exchange'"},
        {"message_id not UTF-8", [](Message& m) { m.properties.message_id = std::string("\xff\xfe", 2); },
         "message_id"},
        {"routing key with SQL text is fine but not UTF-8",
         [](Message& m) { m.routing_key = std::string("'; DROP TABLE jobs; --\xff"); }, "routing key"},
    };
}

class Rejections : public HourglassTest {};

TEST_F(Rejections, each_bad_command_is_rejected_with_a_reason_and_the_service_keeps_working) {
    start_hourglass({"--max-body", "1000", "--max-delay", "1h"});
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    const auto replies = client.receipt_queue();
    Client rejected_reader(amqp_url_);
    rejected_reader.channel().consume(prefix_ + ".rejected", /*no_ack=*/true);

    const auto bad = bad_commands();

    for (std::size_t i = 0; i < bad.size(); ++i) {
        SCOPED_TRACE(bad[i].name);
        auto message = delayed("bad-" + std::to_string(i), 100);
        message.properties.correlation_id = "corr-" + std::to_string(i);
        set_header(message.properties, "x-custom", std::string("kept"));
        set_header(message.properties, "x-reply-to", replies);
        bad[i].spoil(message);
        client.publish(message);

        auto receipt = client.receive(5s);
        ASSERT_TRUE(receipt) << "no receipt";
        const auto view = parse_receipt(*receipt);
        EXPECT_EQ(view.status, "rejected");
        EXPECT_EQ(view.correlation_id, message.properties.correlation_id);
        ASSERT_TRUE(view.error);
        EXPECT_NE(view.error->find(bad[i].error_mentions), std::string::npos) << *view.error;

        auto copy = rejected_reader.receive(5s);
        ASSERT_TRUE(copy) << "nothing on the rejected queue";
        EXPECT_EQ(copy->message.routing_key, message.routing_key);
        EXPECT_EQ(copy->message.body, message.body);
        EXPECT_EQ(string_header(copy->message, "x-custom"), "kept");
        EXPECT_EQ(string_header(copy->message, "x-hourglass-error"), *view.error);
        EXPECT_EQ(copy->message.properties.correlation_id, message.properties.correlation_id);

        // The service still schedules and releases good jobs.
        client.publish(delayed("good-after-" + std::to_string(i), 0));
        auto released = client.receive(5s);
        ASSERT_TRUE(released) << "service stopped working";
        EXPECT_EQ(string_header(released->message, "x-hourglass-id"), "good-after-" + std::to_string(i));
    }
    // Nothing bad was stored; the jobs table still exists (no SQL was executed from input).
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE id LIKE 'bad-%'")[0][0].as<int>(), 0);
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE id LIKE 'good-after-%'")[0][0].as<int>(),
              static_cast<int>(bad.size()));
}

// A client flooding hourglass.in with bad commands cannot flood the log: ingest writes the first
// 20 rejections of each 10 s window and counts the rest, which its next line reports. The
// rejected queue still gets a copy of every one.
TEST_F(Rejections, a_flood_of_bad_commands_writes_a_bounded_number_of_log_lines) {
    auto& process = start_hourglass();
    Client client(amqp_url_);
    Client rejected_reader(amqp_url_);
    rejected_reader.channel().consume(prefix_ + ".rejected", /*no_ack=*/true);
    const auto bad = [&](const std::string& id) {
        auto message = delayed(id, 100);
        set_header(message.properties, "x-delay", std::string("soon"));
        client.publish(message);
    };
    constexpr int kFlood = 2000;
    const auto flood_started = std::chrono::steady_clock::now();
    for (int i = 0; i < kFlood; ++i) bad("flood-" + std::to_string(i));
    for (int i = 0; i < kFlood; ++i) ASSERT_TRUE(rejected_reader.receive(10s)) << "copy " << i;
    const auto flood_took = std::chrono::steady_clock::now() - flood_started;
    // One more once the last window is over: its line reports the rejections left out before it.
    std::this_thread::sleep_for(10500ms);
    bad("after-the-flood");
    ASSERT_TRUE(rejected_reader.receive(10s));
    ASSERT_TRUE(wait_for(
        [&] { return read_all(process.log_path()).find("after-the-flood") != std::string::npos; },
        5s));

    std::size_t lines = 0, reported_left_out = 0;
    for (const auto& line : lines_of(read_all(process.log_path()))) {
        if (line.find("ingest: rejected a command") == std::string::npos) continue;
        ++lines;
        if (const auto note = line.find(" earlier rejections not logged)");
            note != std::string::npos) {
            const auto open = line.rfind('(', note);
            reported_left_out += std::stoul(line.substr(open + 1, note - open - 1));
        }
    }
    // 20 lines a window: the flood's windows and the last line's own.
    const auto windows = static_cast<std::size_t>(flood_took / 10s) + 1;
    EXPECT_LE(lines, 20 * windows + 1)
        << "flood took " << std::chrono::duration<double>(flood_took).count() << " s";
    EXPECT_GE(lines, 2u);
    // Every rejection was either logged or counted in a later line.
    EXPECT_EQ(lines + reported_left_out, static_cast<std::size_t>(kFlood + 1));
}

// Every control header with a value of a type it can never take (void, array, table), a header
// table over the limit, extreme ids and a forged release straight into the release exchange:
// each has a defined outcome (reference §4) and the service keeps working.
TEST_F(Rejections, hostile_inputs_get_a_defined_outcome) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    Client rejected_reader(amqp_url_);
    rejected_reader.channel().consume(prefix_ + ".rejected", /*no_ack=*/true);

    const std::vector<std::string> control_headers = {
        "x-delay",    "x-schedule-at", "x-cron",   "x-cron-tz",   "x-cron-until",
        "x-cron-limit", "x-replace",   "x-cancel", "x-reply-to", "x-hourglass-exchange"};
    const std::vector<std::pair<std::string, FieldValue>> wrong_values = {
        {"void", Void{}},
        {"array", FieldArray{std::int32_t{1}, std::string("two")}},
        {"table", FieldTable{{"nested", std::int64_t{5}}}}};
    int sent = 0;
    auto expect_rejected = [&](Message message, const std::string& mentions) {
        message.properties.message_id = "hostile-" + std::to_string(sent++);
        client.publish(message);
        auto copy = rejected_reader.receive(5s);
        ASSERT_TRUE(copy) << "no rejected copy";
        EXPECT_EQ(copy->message.properties.message_id, message.properties.message_id);
        const auto error = string_header(copy->message, "x-hourglass-error");
        EXPECT_NE(error.find(mentions), std::string::npos) << error;
    };
    for (const auto& header : control_headers) {
        for (const auto& [type, value] : wrong_values) {
            SCOPED_TRACE(header + " as " + type);
            auto message = delayed("unused", 100);
            if (header == "x-schedule-at" || header == "x-cron") remove_header(message.properties, "x-delay");
            set_header(message.properties, header, value);
            expect_rejected(message, header);
        }
    }
    {
        SCOPED_TRACE("300 top-level headers");
        auto message = delayed("unused", 100);
        for (int i = 0; i < 300; ++i) set_header(message.properties, "h" + std::to_string(i), i);
        expect_rejected(message, "headers");
    }

    // Accepted extremes: the longest id AMQP carries, an empty id (one is generated), and a
    // 100 KB custom header, all released intact.
    const std::string longest_id(255, 'i');
    client.publish(delayed(longest_id, 0));
    auto empty_id = delayed("", 0);
    client.publish(empty_id);
    auto big_header = delayed("big-header", 0);
    set_header(big_header.properties, "x-big", std::string(100 * 1024, 'b'));
    client.publish(big_header);
    std::map<std::string, Received> released;
    for (const auto& r : client.drain(1500ms, 20s)) {
        released.emplace(string_header(r.message, "x-hourglass-id"), r);
    }
    EXPECT_TRUE(released.count(longest_id));
    ASSERT_TRUE(released.count("big-header"));
    EXPECT_EQ(string_header(released.at("big-header").message, "x-big").size(), 100u * 1024u);
    EXPECT_EQ(released.size(), 3u) << "the empty id got a generated one";
    EXPECT_FALSE(released.count(""));

    // Forged "releases" published straight into the release exchange with the audit key (no,
    // wrong-typed and unknown ids): the audit skips them and keeps recording real ones.
    for (const auto& forged_id : std::vector<FieldValue>{Void{}, std::int32_t{7}, std::string("no-such-job")}) {
        Message forged;
        forged.exchange = prefix_ + ".delay.released";
        forged.routing_key = ".." + prefix_ + ".release-copied-to-the-audit..";
        forged.body = "forged";
        forged.properties.headers = FieldTable{{"x-hourglass-id", forged_id},
                                               {"x-hourglass-run", std::string("x")}};
        client.publish(forged);
    }
    client.drain(1000ms, 5s);
    EXPECT_NE(processes_.back()->log_tail(100000).find("audit: a message without hourglass headers"),
              std::string::npos)
        << "the forged releases reached the audit";
    client.publish(delayed("after-hostile", 0));
    EXPECT_TRUE(eventually("SELECT state FROM jobs WHERE id = 'after-hostile'", "done"));
    EXPECT_TRUE(processes_.back()->running());
    EXPECT_EQ(sql("SELECT count(*) FROM jobs WHERE id LIKE 'hostile-%'")[0][0].as<int>(), 0);
}

TEST_F(Rejections, sql_text_in_ids_and_routing_keys_is_stored_as_data) {
    start_hourglass();
    Client client(amqp_url_);
    client.subscribe(out_exchange(), "#");
    const std::string hostile = "x'); DROP TABLE jobs; --";
    auto message = delayed(hostile, 0, "route.'; DELETE FROM jobs; --");
    client.publish(message);
    auto released = client.receive(5s);
    ASSERT_TRUE(released);
    EXPECT_EQ(string_header(released->message, "x-hourglass-id"), hostile);
    EXPECT_EQ(released->message.routing_key, "route.'; DELETE FROM jobs; --");
    EXPECT_EQ(job_state(hostile).empty(), false);
    EXPECT_EQ(sql("SELECT count(*) FROM jobs")[0][0].as<int>(), 1);
}

}  // namespace
}  // namespace hourglass::testing
