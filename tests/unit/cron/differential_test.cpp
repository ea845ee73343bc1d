// Differential test: hourglass's next_occurrence against an independent implementation,
// Debian's python3-croniter (run through croniter_next.py), on random valid expressions
// (seeded, so every run checks the same cases) in four zones.
//
// Where croniter cannot be expected to give reference §5's answer, the query is left out and
// counted:
//  * DST. croniter walks local wall-clock time and maps it to UTC with fold=0 plus its own
//    correction, so around a transition it neither collapses a gap into one run at the end of
//    the gap nor applies the repeated-hour rule (and inside a repeated hour it may even answer
//    an instant before `after`). Any query with a UTC-offset change from 26 hours before
//    `after` up to the earlier answer (or `after`, if later) is left out.
//  * Vixie rule. hourglass: a day field is restricted unless its text starts with `*`. croniter:
//  unless
//    its expanded value set is complete. They disagree on e.g. `*/2` (restricted for croniter)
//    and `1-31` or dow `*/1` (unrestricted for croniter); queries where croniter's OR/AND choice
//    differs from hourglass's are left out.
//  * A croniter bug (taichino/croniter#178; fixed upstream in 2025 by pallets-eco/croniter#178,
//    after Debian's 1.3.5): to reach the next allowed day v it adds v - today days even when the
//    month is shorter than v, lands on day v - length of the next month, and skips the allowed
//    days before it (`0 0 1,10,31 * *` after 21 February gives 10 March, not 1 March). Queries
//    whose search crosses the end of a month where that can happen are left out.
//  * Years after 2037. The date library reads only the transitions stored in the zone files,
//    which end in 2037, while croniter's zoneinfo continues the DST rules; answers from 2037 on
//    are left out (and starts are before 2036).
// Differences in syntax are avoided or translated instead of excluded: croniter wants seconds
// last (the helper moves them), reads a lone `7` as Sunday only in five-field expressions (the
// helper writes `0`), and mishandles a 7 produced by a day-of-week range or step (`5-7`,
// `FRI-SUN`, `1/2` = 1,3,5,7, `*/7` = 0,7): it never matches Sunday, yet counts towards a
// "complete" set, which turns `0-5,*/7` into `*`. The generator does not produce those.
#include <date/tz.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cron_test_support.hpp"
#include "support/build_paths.hpp"

namespace hourglass::cron {
namespace {

using std::chrono::seconds;
using test_support::expression;
using test_support::values;
using test_support::zone;

constexpr int expression_count = 600;
constexpr int queries_per_zone = 3;  // a random start, then twice from hourglass's own answer
constexpr std::array<const char*, 4> zone_names{"UTC", "Europe/Berlin", "America/New_York",
                                                "Australia/Lord_Howe"};
const date::sys_seconds earliest_start{date::sys_days{date::year{2021} / 1 / 1}};
const date::sys_seconds latest_start{date::sys_days{date::year{2036} / 1 / 1}};
const date::sys_seconds frozen_zones_from{date::sys_days{date::year{2037} / 1 / 1}};
constexpr auto dst_margin = std::chrono::hours{26};

// --- random expressions ---------------------------------------------------------------------

class Random {
  public:
    explicit Random(std::uint64_t seed) : engine_{seed} {}
    // Uniform enough for test generation, and unlike std::uniform_int_distribution the same
    // on every standard library.
    int between(int low, int high) {
        return low + static_cast<int>(engine_() % static_cast<std::uint64_t>(high - low + 1));
    }
    bool percent(int chance) { return between(1, 100) <= chance; }
    std::mt19937_64& engine() { return engine_; }

  private:
    std::mt19937_64 engine_;
};

struct GeneratedField {
    int min;
    int max;
    int star_percent;                     // how often the whole field is `*`
    std::vector<std::string> names = {};  // names[i] stands for min_named + i
    int min_named = 0;
    bool is_day_of_week = false;
};

std::string in_random_case(Random& random, std::string text) {
    for (char& c : text) {
        if (c >= 'a' && c <= 'z' && random.percent(50)) c = static_cast<char>(c - 'a' + 'A');
    }
    return text;
}

std::string value_text(Random& random, const GeneratedField& field, int value) {
    const int name_index = value - field.min_named;
    if (!field.names.empty() && name_index >= 0 &&
        name_index < static_cast<int>(field.names.size()) && random.percent(40)) {
        return in_random_case(random, field.names[name_index]);
    }
    return std::to_string(value);
}

// Whether a day-of-week step from `first` (to the end, 7) produces a 7.
bool reaches_seven(int first, int step) {
    return (7 - first) % step == 0;
}

std::string random_element(Random& random, const GeneratedField& field) {
    // Day-of-week ranges and steps stay within 0-6 (croniter ignores a 7 made by them).
    const int top = field.is_day_of_week ? 6 : field.max;
    const int widest_step = field.max - field.min + 1;
    while (true) {
        switch (random.between(0, 4)) {
            case 0:  // single value; 7 (Sunday) only on its own
                return value_text(random, field, random.between(field.min, field.max));
            case 1: {
                const int first = random.between(field.min, top);
                const int last = random.between(first, top);
                return value_text(random, field, first) + "-" + value_text(random, field, last);
            }
            case 2: {
                const int first = random.between(field.min, top);
                const int last = random.between(first, top);
                return value_text(random, field, first) + "-" + value_text(random, field, last) +
                       "/" + std::to_string(random.between(1, widest_step));
            }
            case 3: {
                const int step = random.between(1, widest_step);
                if (field.is_day_of_week && reaches_seven(field.min, step)) continue;
                return "*/" + std::to_string(step);
            }
            default: {
                const int first = random.between(field.min, top);
                const int step = random.between(1, widest_step);
                if (field.is_day_of_week && reaches_seven(first, step)) continue;
                return value_text(random, field, first) + "/" + std::to_string(step);
            }
        }
    }
}

std::string random_field(Random& random, const GeneratedField& field) {
    if (random.percent(field.star_percent)) return "*";
    std::string text = random_element(random, field);
    for (int more = random.between(0, 2); more > 0; --more) {
        text += "," + random_element(random, field);
    }
    return text;
}

std::string random_expression(Random& random) {
    static const std::array<std::string, 7> macros{"@yearly", "@annually", "@monthly", "@weekly",
                                                   "@daily",  "@midnight", "@hourly"};
    static const GeneratedField second{0, 59, 50};
    static const GeneratedField minute{0, 59, 25};
    static const GeneratedField hour{0, 23, 45};
    static const GeneratedField day_of_month{1, 31, 60};
    static const GeneratedField month{
        1,
        12,
        65,
        {"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"},
        1};
    static const GeneratedField day_of_week{
        0, 7, 60, {"sun", "mon", "tue", "wed", "thu", "fri", "sat"}, 0, true};

    if (random.percent(3)) {
        return in_random_case(random, macros[static_cast<std::size_t>(random.between(0, 6))]);
    }
    std::string text = random.percent(30) ? random_field(random, second) + " " : "";
    return text + random_field(random, minute) + " " + random_field(random, hour) + " " +
           random_field(random, day_of_month) + " " + random_field(random, month) + " " +
           random_field(random, day_of_week);
}

date::sys_seconds random_start(Random& random) {
    const auto span = (latest_start - earliest_start).count();
    const auto start =
        earliest_start +
        seconds{static_cast<std::int64_t>(random.engine()() % static_cast<std::uint64_t>(span))};
    return start;
}

// Whether croniter's month-overshoot bug (see the top of the file) can affect a search from
// `from` to `to`: some month touched has length L, allowed days v > L and d <= v - L.
bool croniter_may_skip_days(const CronExpression& e, date::sys_seconds from, date::sys_seconds to) {
    const bool croniter_uses_day_of_month = values(e.days_of_month).size() != 31;
    if (!croniter_uses_day_of_month) return false;
    // The local calendar is within a day of the UTC one.
    const date::year_month_day first{std::chrono::floor<date::days>(from) - date::days{1}};
    const date::year_month_day last{std::chrono::floor<date::days>(to) + date::days{1}};
    for (auto month = first.year() / first.month(); month <= last.year() / last.month();
         month += date::months{1}) {
        const int length = static_cast<int>(static_cast<unsigned>((month / date::last).day()));
        for (auto beyond = e.days_of_month.first_at_or_after(length + 1); beyond;
             beyond = e.days_of_month.first_at_or_after(*beyond + 1)) {
            if (*e.days_of_month.first_at_or_after(1) <= *beyond - length) return true;
        }
    }
    return false;
}

// --- running croniter -----------------------------------------------------------------------

std::string shell_quoted(const std::string& text) {
    std::string quoted = "'";
    for (char c : text) quoted += (c == '\'') ? std::string{"'\\''"} : std::string(1, c);
    return quoted + "'";
}

// The first Python that can import croniter: $HOURGLASS_PYTHON, then Debian's own python3 (a
// python3 earlier in PATH, e.g. from pyenv, does not see Debian's packages).
std::optional<std::string> python_with_croniter() {
    std::vector<std::string> candidates;
    if (const char* configured = std::getenv("HOURGLASS_PYTHON"))
        candidates.emplace_back(configured);
    candidates.emplace_back("/usr/bin/python3");
    candidates.emplace_back("python3");
    for (const std::string& python : candidates) {
        const std::string probe = shell_quoted(python) + " -c 'import croniter' >/dev/null 2>&1";
        if (std::system(probe.c_str()) == 0) return python;
    }
    return std::nullopt;
}

// From the source tree's absolute path, not __FILE__: a build through ccache compiles with paths
// relative to the checkout (CMakeLists.txt), which __FILE__ would then be.
std::string helper_script() {
    return hourglass::testing::source_dir() + "/tests/unit/cron/croniter_next.py";
}

// "1774699200.250": what croniter_next.py reads.
std::string epoch_seconds_text(TimePoint instant) {
    const long long ms = instant.time_since_epoch().count();
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%lld.%03lld", ms / 1000, ms % 1000);
    return text.data();
}

struct Query {
    std::string expression;
    const char* zone_name;
    TimePoint after;
};

struct CroniterAnswer {
    std::optional<std::int64_t> next_epoch_seconds;  // nothing: no run
    bool day_or = false;                             // croniter applied the Vixie OR
    std::string error;                               // croniter refused the expression
};

// One croniter process answers all queries: queries go in through a temporary file, answers
// come back through popen.
std::vector<CroniterAnswer> ask_croniter(const std::string& python,
                                         const std::vector<Query>& queries) {
    std::string input_path =
        (std::filesystem::temp_directory_path() / "hourglass-cron-differential-XXXXXX").string();
    const int fd = mkstemp(input_path.data());
    if (fd < 0) throw std::runtime_error("cannot create a temporary file");
    close(fd);
    struct RemoveOnExit {
        std::string path;
        ~RemoveOnExit() { std::remove(path.c_str()); }
    } cleanup{input_path};
    {
        std::ofstream input{input_path};
        for (const Query& query : queries) {
            input << query.expression << '\t' << query.zone_name << '\t'
                  << epoch_seconds_text(query.after) << '\n';
        }
    }
    const std::string command = shell_quoted(python) + " " + shell_quoted(helper_script()) + " < " +
                                shell_quoted(input_path);
    FILE* output = popen(command.c_str(), "r");
    if (output == nullptr) throw std::runtime_error("cannot run " + command);
    std::vector<CroniterAnswer> answers;
    std::array<char, 4096> line{};
    while (std::fgets(line.data(), static_cast<int>(line.size()), output) != nullptr) {
        std::istringstream fields{line.data()};
        std::string next;
        int day_or = 0;
        fields >> next >> day_or;
        CroniterAnswer answer;
        answer.day_or = day_or != 0;
        if (next.rfind("error:", 0) == 0) {
            answer.error = next;
        } else if (next != "none") {
            answer.next_epoch_seconds = std::stoll(next);
        }
        answers.push_back(answer);
    }
    const int status = pclose(output);
    if (status != 0 || answers.size() != queries.size()) {
        throw std::runtime_error("croniter helper failed (status " + std::to_string(status) + ", " +
                                 std::to_string(answers.size()) + " answers for " +
                                 std::to_string(queries.size()) + " queries): " + command);
    }
    return answers;
}

std::string describe(std::optional<date::sys_seconds> run) {
    return run ? date::format("%FT%TZ", *run) : std::string{"none"};
}

// --- the test -------------------------------------------------------------------------------

TEST(CronDifferential, next_occurrence_agrees_with_croniter) {
    const auto python = python_with_croniter();
    if (!python)
        GTEST_SKIP() << "python3-croniter is not installed (apt-get install python3-croniter)";

    Random random{0x686f7572676c6173};  // "hourglas"
    std::vector<Query> queries;
    std::vector<std::optional<date::sys_seconds>> ours;
    for (int generated = 0; generated < expression_count;) {
        const std::string text = random_expression(random);
        const CronExpression parsed = expression(text);
        if (!can_ever_fire(parsed)) continue;  // croniter would search 50 years to say so
        ++generated;
        for (const char* zone_name : zone_names) {
            TimePoint after = random_start(random);
            if (random.percent(50)) after += std::chrono::milliseconds{random.between(1, 999)};
            for (int step = 0; step < queries_per_zone && after < latest_start; ++step) {
                const auto next = next_occurrence(parsed, zone(zone_name), after);
                queries.push_back({text, zone_name, after});
                ours.push_back(next ? std::optional{std::chrono::floor<seconds>(*next)}
                                    : std::nullopt);
                if (!next) break;
                after = *next;
            }
        }
    }

    const std::vector<CroniterAnswer> theirs = ask_croniter(*python, queries);
    int compared = 0;
    int excluded_dst = 0;
    int excluded_vixie = 0;
    int excluded_after_2037 = 0;
    int excluded_croniter_bug = 0;
    int mismatches = 0;
    for (std::size_t i = 0; i < queries.size(); ++i) {
        const Query& query = queries[i];
        const CroniterAnswer& answer = theirs[i];
        ASSERT_TRUE(answer.error.empty())
            << "croniter refused '" << query.expression << "': " << answer.error;
        const CronExpression parsed = expression(query.expression);
        const std::optional<date::sys_seconds> their_run =
            answer.next_epoch_seconds
                ? std::optional{date::sys_seconds{seconds{*answer.next_epoch_seconds}}}
                : std::nullopt;
        const std::optional<date::sys_seconds> our_run = ours[i];
        const auto earliest = (our_run && their_run)
                                  ? std::min(*our_run, *their_run)
                                  : (our_run ? *our_run : their_run.value_or(latest_start));

        if (answer.day_or != (parsed.day_of_month_restricted && parsed.day_of_week_restricted)) {
            ++excluded_vixie;
        } else if (croniter_may_skip_days(parsed, std::chrono::floor<seconds>(query.after),
                                          earliest)) {
            ++excluded_croniter_bug;
        } else if (earliest >= frozen_zones_from) {
            ++excluded_after_2037;
        } else if (zone(query.zone_name).get_info(query.after - dst_margin).end <=
                   std::max(earliest, std::chrono::ceil<seconds>(query.after))) {
            ++excluded_dst;
        } else {
            ++compared;
            if (our_run != their_run && ++mismatches <= 20) {
                ADD_FAILURE() << "'" << query.expression << "' in " << query.zone_name << " after "
                              << date::format("%FT%TZ", query.after) << ": hourglass "
                              << describe(our_run) << ", croniter " << describe(their_run);
            }
        }
    }
    std::cout << "[ differential ] " << expression_count << " expressions x " << zone_names.size()
              << " zones: " << queries.size() << " queries, " << compared << " compared, "
              << mismatches << " mismatches; left out: " << excluded_dst << " near DST changes, "
              << excluded_vixie << " Vixie-rule differences, " << excluded_croniter_bug
              << " croniter month-overshoot bug, " << excluded_after_2037 << " in 2037 or later\n";
    RecordProperty("compared", compared);
    EXPECT_EQ(mismatches, 0);
    EXPECT_GE(compared, expression_count * static_cast<int>(zone_names.size()));
}

}  // namespace
}  // namespace hourglass::cron
