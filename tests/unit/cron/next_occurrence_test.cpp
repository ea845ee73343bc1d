// When cron expressions fire (reference §5): calendar edge cases, the Vixie day rule, and DST in
// Europe/Berlin, America/New_York and Australia/Lord_Howe (whose DST shift is 30 minutes).
// Runs are shown as local time with the zone abbreviation, so each one says which side of a
// DST change it is on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "cron_test_support.hpp"

namespace hourglass::cron {
namespace {

using test_support::expression;
using test_support::runs_after;
using test_support::utc;
using test_support::zone;
using ::testing::ElementsAre;

// --- basic stepping -------------------------------------------------------------------------

TEST(CronNextOccurrence, next_run_is_strictly_after_the_given_instant) {
    EXPECT_THAT(runs_after("0 9 * * *", "UTC", "2026-06-01T09:00:00Z", 1),
                ElementsAre("2026-06-02 09:00:00 UTC"));
    EXPECT_THAT(runs_after("0 9 * * *", "UTC", "2026-06-01T08:59:59.999Z", 1),
                ElementsAre("2026-06-01 09:00:00 UTC"));
}

TEST(CronNextOccurrence, runs_are_at_whole_seconds) {
    const auto next =
        next_occurrence(expression("* * * * * *"), zone("UTC"), utc("2026-06-01T10:00:00.500Z"));
    EXPECT_EQ(next, utc("2026-06-01T10:00:01Z"));
}

TEST(CronNextOccurrence, every_second_with_six_fields) {
    EXPECT_THAT(runs_after("*/2 * * * * *", "UTC", "2026-06-01T10:00:57Z", 3),
                ElementsAre("2026-06-01 10:00:58 UTC", "2026-06-01 10:01:00 UTC",
                            "2026-06-01 10:01:02 UTC"));
}

TEST(CronNextOccurrence, every_five_minutes) {
    EXPECT_THAT(runs_after("*/5 * * * *", "UTC", "2026-06-01T10:58:30Z", 3),
                ElementsAre("2026-06-01 11:00:00 UTC", "2026-06-01 11:05:00 UTC",
                            "2026-06-01 11:10:00 UTC"));
}

TEST(CronNextOccurrence, weekdays_skip_the_weekend) {
    EXPECT_THAT(runs_after("0 9 * * MON-FRI", "Europe/Berlin", "2026-06-05T08:00:00Z", 2),
                ElementsAre("2026-06-08 09:00:00 CEST", "2026-06-09 09:00:00 CEST"));
}

TEST(CronNextOccurrence, sunday_as_seven_fires_on_sunday) {
    EXPECT_THAT(runs_after("0 0 * * 7", "UTC", "2026-06-01T00:00:00Z", 1),
                ElementsAre("2026-06-07 00:00:00 UTC"));
}

TEST(CronNextOccurrence, month_list_skips_other_months) {
    EXPECT_THAT(runs_after("0 0 1 JAN,JUL *", "UTC", "2026-02-15T00:00:00Z", 2),
                ElementsAre("2026-07-01 00:00:00 UTC", "2027-01-01 00:00:00 UTC"));
}

// --- calendar edges -------------------------------------------------------------------------

TEST(CronNextOccurrence, twenty_ninth_of_february_fires_only_in_leap_years) {
    EXPECT_THAT(runs_after("0 0 29 2 *", "UTC", "2026-01-01T00:00:00Z", 3),
                ElementsAre("2028-02-29 00:00:00 UTC", "2032-02-29 00:00:00 UTC",
                            "2036-02-29 00:00:00 UTC"));
}

TEST(CronNextOccurrence, century_years_not_divisible_by_400_are_not_leap) {
    EXPECT_THAT(runs_after("0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", 1),
                ElementsAre("2104-02-29 00:00:00 UTC"));
    EXPECT_THAT(runs_after("0 0 29 2 *", "UTC", "1999-01-01T00:00:00Z", 1),
                ElementsAre("2000-02-29 00:00:00 UTC"));
}

TEST(CronNextOccurrence, rarest_date_is_found_decades_ahead) {
    // 29 February on a Sunday (`*/7` is Sunday only, and starts with `*`, so both must match).
    EXPECT_THAT(runs_after("0 0 29 2 */7", "UTC", "2032-02-29T00:00:00Z", 1),
                ElementsAre("2060-02-29 00:00:00 UTC"));
}

TEST(CronNextOccurrence, day_31_skips_shorter_months) {
    EXPECT_THAT(
        runs_after("0 12 31 * *", "UTC", "2026-01-31T12:00:00Z", 7),
        ElementsAre("2026-03-31 12:00:00 UTC", "2026-05-31 12:00:00 UTC", "2026-07-31 12:00:00 UTC",
                    "2026-08-31 12:00:00 UTC", "2026-10-31 12:00:00 UTC", "2026-12-31 12:00:00 UTC",
                    "2027-01-31 12:00:00 UTC"));
}

TEST(CronNextOccurrence, day_30_skips_february) {
    EXPECT_THAT(runs_after("0 0 30 * *", "UTC", "2028-01-30T00:00:00Z", 1),
                ElementsAre("2028-03-30 00:00:00 UTC"));
}

TEST(CronNextOccurrence, year_boundary_rolls_into_january) {
    EXPECT_THAT(runs_after("0 0 1 1 *", "UTC", "2026-12-31T23:59:59.999Z", 1),
                ElementsAre("2027-01-01 00:00:00 UTC"));
    EXPECT_THAT(runs_after("59 23 31 12 *", "UTC", "2026-12-31T23:59:00Z", 1),
                ElementsAre("2027-12-31 23:59:00 UTC"));
    EXPECT_THAT(runs_after("*/20 * * * * *", "UTC", "2026-12-31T23:59:50Z", 2),
                ElementsAre("2027-01-01 00:00:00 UTC", "2027-01-01 00:00:20 UTC"));
}

TEST(CronNextOccurrence, year_boundary_is_local_to_the_zone) {
    EXPECT_THAT(runs_after("@yearly", "Europe/Berlin", "2026-06-01T00:00:00Z", 1),
                ElementsAre("2027-01-01 00:00:00 CET"));
    EXPECT_EQ(
        next_occurrence(expression("@yearly"), zone("Europe/Berlin"), utc("2026-06-01T00:00:00Z")),
        utc("2026-12-31T23:00:00Z"));
    EXPECT_EQ(next_occurrence(expression("@yearly"), zone("America/New_York"),
                              utc("2026-12-31T23:00:00Z")),
              utc("2027-01-01T05:00:00Z"));
}

// --- day-of-month and day-of-week (Vixie rule) ----------------------------------------------

TEST(CronNextOccurrence, both_day_fields_restricted_fire_when_either_matches) {
    // 13th of the month OR any Friday; 2026-04-13 is a Monday.
    EXPECT_THAT(runs_after("0 0 13 * FRI", "UTC", "2026-04-08T00:00:00Z", 3),
                ElementsAre("2026-04-10 00:00:00 UTC", "2026-04-13 00:00:00 UTC",
                            "2026-04-17 00:00:00 UTC"));
}

TEST(CronNextOccurrence, star_step_day_of_month_is_unrestricted_so_both_must_match) {
    // Odd days that are Fridays: in April 2026 Fridays fall on 3, 10, 17, 24.
    EXPECT_THAT(runs_after("0 0 */2 * FRI", "UTC", "2026-04-01T00:00:00Z", 3),
                ElementsAre("2026-04-03 00:00:00 UTC", "2026-04-17 00:00:00 UTC",
                            "2026-05-01 00:00:00 UTC"));
}

TEST(CronNextOccurrence, full_range_day_of_month_is_still_restricted) {
    // `1-31` does not start with `*`: with a restricted weekday, every day matches.
    EXPECT_THAT(runs_after("0 0 1-31 * FRI", "UTC", "2026-04-01T00:00:00Z", 2),
                ElementsAre("2026-04-02 00:00:00 UTC", "2026-04-03 00:00:00 UTC"));
}

TEST(CronNextOccurrence, only_day_of_month_restricted_ignores_weekday) {
    EXPECT_THAT(runs_after("0 0 13 * *", "UTC", "2026-04-01T00:00:00Z", 2),
                ElementsAre("2026-04-13 00:00:00 UTC", "2026-05-13 00:00:00 UTC"));
}

// --- expressions that never fire, and the supported range -----------------------------------

TEST(CronNextOccurrence, impossible_dates_can_never_fire) {
    EXPECT_FALSE(can_ever_fire(expression("0 0 30 2 *")));
    EXPECT_FALSE(can_ever_fire(expression("0 0 31 4,6,9,11 *")));
    EXPECT_FALSE(can_ever_fire(expression("0 0 30 2 */2")));  // weekday starts with `*`: AND
    EXPECT_EQ(next_occurrence(expression("0 0 30 2 *"), zone("UTC"), utc("2026-01-01T00:00:00Z")),
              std::nullopt);
}

TEST(CronNextOccurrence, possible_dates_can_fire) {
    EXPECT_TRUE(can_ever_fire(expression("0 0 29 2 *")));
    EXPECT_TRUE(can_ever_fire(expression("0 0 31 4,5 *")));
    EXPECT_TRUE(can_ever_fire(expression("0 0 30 2 MON")));  // or any Monday in February
    EXPECT_TRUE(can_ever_fire(expression("0 0 */30 2 *")));  // 1 February
}

TEST(CronNextOccurrence, malformed_expression_never_fires) {
    EXPECT_FALSE(can_ever_fire(CronExpression{}));
    EXPECT_EQ(next_occurrence(CronExpression{}, zone("UTC"), utc("2026-01-01T00:00:00Z")),
              std::nullopt);
}

TEST(CronNextOccurrence, instants_outside_years_1_to_9999_have_no_next_run) {
    const CronExpression every_second = expression("* * * * * *");
    EXPECT_EQ(next_occurrence(every_second, zone("UTC"), utc("9999-12-31T23:59:59Z")),
              std::nullopt);
    EXPECT_EQ(next_occurrence(every_second, zone("UTC"), TimePoint::max()), std::nullopt);
    EXPECT_EQ(next_occurrence(every_second, zone("UTC"), TimePoint::min()), std::nullopt);
    EXPECT_EQ(next_occurrence(every_second, zone("UTC"), utc("0001-01-01T00:00:00Z")),
              utc("0001-01-01T00:00:01Z"));
}

TEST(CronNextOccurrence, fires_between_includes_until_and_excludes_after) {
    const CronExpression new_year = expression("0 0 1 1 *");
    const auto& in_utc = zone("UTC");
    EXPECT_FALSE(
        fires_between(new_year, in_utc, utc("2026-03-01T00:00:00Z"), utc("2026-12-31T23:59:59Z")));
    EXPECT_TRUE(
        fires_between(new_year, in_utc, utc("2026-03-01T00:00:00Z"), utc("2027-01-01T00:00:00Z")));
    EXPECT_FALSE(
        fires_between(new_year, in_utc, utc("2027-01-01T00:00:00Z"), utc("2027-06-01T00:00:00Z")));
    EXPECT_FALSE(fires_between(expression("0 0 30 2 *"), in_utc, utc("2026-01-01T00:00:00Z"),
                               TimePoint::max()));
}

// --- time zones -----------------------------------------------------------------------------

TEST(CronZone, known_zones_are_found_and_unknown_ones_are_not) {
    ASSERT_NE(find_zone("Europe/Berlin"), nullptr);
    EXPECT_EQ(find_zone("Europe/Berlin")->name(), "Europe/Berlin");
    EXPECT_NE(find_zone("UTC"), nullptr);
    EXPECT_NE(find_zone("Australia/Lord_Howe"), nullptr);
    EXPECT_EQ(find_zone("Mars/Olympus_Mons"), nullptr);
    EXPECT_EQ(find_zone("europe/berlin"), nullptr);
    EXPECT_EQ(find_zone(""), nullptr);
    EXPECT_EQ(find_zone("../../etc/passwd"), nullptr);
    EXPECT_EQ(find_zone(std::string(10'000, 'A')), nullptr);
}

// --- DST: Europe/Berlin, 2026-03-29 02:00 CET -> 03:00 CEST, 2026-10-25 03:00 CEST -> 02:00 CET

TEST(CronDst, spring_forward_gap_runs_once_at_end_of_gap) {
    EXPECT_THAT(runs_after("30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2),
                ElementsAre("2026-03-29 03:00:00 CEST", "2026-03-30 02:30:00 CEST"));
    EXPECT_EQ(next_occurrence(expression("30 2 * * *"), zone("Europe/Berlin"),
                              utc("2026-03-28T12:00:00Z")),
              utc("2026-03-29T01:00:00Z"));
}

TEST(CronDst, every_matching_time_in_the_gap_collapses_into_one_run) {
    EXPECT_THAT(runs_after("*/15 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 3),
                ElementsAre("2026-03-29 03:00:00 CEST", "2026-03-30 02:00:00 CEST",
                            "2026-03-30 02:15:00 CEST"));
    EXPECT_THAT(runs_after("*/10 * 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00Z", 2),
                ElementsAre("2026-03-29 03:00:00 CEST", "2026-03-30 02:00:00 CEST"));
}

TEST(CronDst, gap_run_is_found_from_just_before_the_jump) {
    // The jump is at 01:00:00Z; the run at that instant is strictly after these.
    for (const char* after : {"2026-03-29T00:59:59Z", "2026-03-29T00:59:59.500Z"}) {
        EXPECT_THAT(runs_after("30 2 * * *", "Europe/Berlin", after, 1),
                    ElementsAre("2026-03-29 03:00:00 CEST"))
            << after;
        EXPECT_THAT(runs_after("*/15 * * * *", "Europe/Berlin", after, 1),
                    ElementsAre("2026-03-29 03:00:00 CEST"))
            << after;
    }
    EXPECT_THAT(runs_after("30 2 * * *", "Europe/Berlin", "2026-03-29T01:00:00Z", 1),
                ElementsAre("2026-03-30 02:30:00 CEST"));
}

TEST(CronDst, gap_run_and_a_match_at_the_end_of_the_gap_are_one_run) {
    EXPECT_THAT(runs_after("*/15 * * * *", "Europe/Berlin", "2026-03-29T00:30:00Z", 3),
                ElementsAre("2026-03-29 01:45:00 CET", "2026-03-29 03:00:00 CEST",
                            "2026-03-29 03:15:00 CEST"));
}

TEST(CronDst, repeated_hour_runs_once_when_hour_is_not_star) {
    EXPECT_THAT(runs_after("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2),
                ElementsAre("2026-10-25 02:30:00 CEST", "2026-10-26 02:30:00 CET"));
    EXPECT_THAT(runs_after("*/20 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 4),
                ElementsAre("2026-10-25 02:00:00 CEST", "2026-10-25 02:20:00 CEST",
                            "2026-10-25 02:40:00 CEST", "2026-10-26 02:00:00 CET"));
    EXPECT_THAT(runs_after("0 1-3 * * *", "Europe/Berlin", "2026-10-24T22:00:00Z", 4),
                ElementsAre("2026-10-25 01:00:00 CEST", "2026-10-25 02:00:00 CEST",
                            "2026-10-25 03:00:00 CET", "2026-10-26 01:00:00 CET"));
}

TEST(CronDst, repeated_hour_runs_in_both_passes_when_hour_starts_with_star) {
    EXPECT_THAT(runs_after("30 * * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", 4),
                ElementsAre("2026-10-25 01:30:00 CEST", "2026-10-25 02:30:00 CEST",
                            "2026-10-25 02:30:00 CET", "2026-10-25 03:30:00 CET"));
    EXPECT_THAT(runs_after("0 */2 * * *", "Europe/Berlin", "2026-10-24T23:00:00Z", 3),
                ElementsAre("2026-10-25 02:00:00 CEST", "2026-10-25 02:00:00 CET",
                            "2026-10-25 04:00:00 CET"));
}

TEST(CronDst, starting_inside_the_second_pass_skips_it_unless_hour_starts_with_star) {
    // 2026-10-25T01:10Z is 02:10 CET, in the second pass.
    EXPECT_THAT(runs_after("30 2 * * *", "Europe/Berlin", "2026-10-25T01:10:00Z", 1),
                ElementsAre("2026-10-26 02:30:00 CET"));
    EXPECT_THAT(runs_after("*/30 * * * *", "Europe/Berlin", "2026-10-25T01:10:00Z", 1),
                ElementsAre("2026-10-25 02:30:00 CET"));
}

// --- DST: America/New_York, 2026-03-08 02:00 EST -> 03:00 EDT, 2026-11-01 02:00 EDT -> 01:00 EST

TEST(CronDst, new_york_spring_forward_gap_runs_at_three) {
    EXPECT_THAT(runs_after("0 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 2),
                ElementsAre("2026-03-08 03:00:00 EDT", "2026-03-09 02:00:00 EDT"));
    EXPECT_THAT(runs_after("30 2 * * *", "America/New_York", "2026-03-07T12:00:00Z", 1),
                ElementsAre("2026-03-08 03:00:00 EDT"));
}

TEST(CronDst, new_york_fall_back_runs_first_pass_only_for_fixed_hour) {
    EXPECT_THAT(runs_after("30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 2),
                ElementsAre("2026-11-01 01:30:00 EDT", "2026-11-02 01:30:00 EST"));
}

TEST(CronDst, new_york_fall_back_runs_both_passes_for_star_hour) {
    EXPECT_THAT(
        runs_after("*/30 * * * *", "America/New_York", "2026-11-01T04:45:00Z", 5),
        ElementsAre("2026-11-01 01:00:00 EDT", "2026-11-01 01:30:00 EDT", "2026-11-01 01:00:00 EST",
                    "2026-11-01 01:30:00 EST", "2026-11-01 02:00:00 EST"));
}

TEST(CronDst, midnight_is_unaffected_by_a_two_oclock_change) {
    EXPECT_THAT(runs_after("@daily", "America/New_York", "2026-03-07T12:00:00Z", 2),
                ElementsAre("2026-03-08 00:00:00 EST", "2026-03-09 00:00:00 EDT"));
}

// --- DST: Australia/Lord_Howe shifts by 30 minutes: 2026-04-05 02:00 (+11) -> 01:30 (+1030),
//     2026-10-04 02:00 (+1030) -> 02:30 (+11)

TEST(CronDst, lord_howe_half_hour_gap_runs_at_half_past_two) {
    EXPECT_THAT(runs_after("15 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 2),
                ElementsAre("2026-10-04 02:30:00 +11", "2026-10-05 02:15:00 +11"));
    EXPECT_THAT(runs_after("45 2 * * *", "Australia/Lord_Howe", "2026-10-03T00:00:00Z", 1),
                ElementsAre("2026-10-04 02:45:00 +11"));
    EXPECT_THAT(runs_after("*/10 * * * *", "Australia/Lord_Howe", "2026-10-03T15:15:00Z", 3),
                ElementsAre("2026-10-04 01:50:00 +1030", "2026-10-04 02:30:00 +11",
                            "2026-10-04 02:40:00 +11"));
}

TEST(CronDst, lord_howe_repeated_half_hour_follows_the_hour_field) {
    EXPECT_THAT(runs_after("45 1 * * *", "Australia/Lord_Howe", "2026-04-04T00:00:00Z", 2),
                ElementsAre("2026-04-05 01:45:00 +11", "2026-04-06 01:45:00 +1030"));
    EXPECT_THAT(runs_after("*/15 1 * * *", "Australia/Lord_Howe", "2026-04-04T14:20:00Z", 3),
                ElementsAre("2026-04-05 01:30:00 +11", "2026-04-05 01:45:00 +11",
                            "2026-04-06 01:00:00 +1030"));
    EXPECT_THAT(runs_after("*/15 * * * *", "Australia/Lord_Howe", "2026-04-04T14:20:00Z", 5),
                ElementsAre("2026-04-05 01:30:00 +11", "2026-04-05 01:45:00 +11",
                            "2026-04-05 01:30:00 +1030", "2026-04-05 01:45:00 +1030",
                            "2026-04-05 02:00:00 +1030"));
}

// --- a whole skipped day: Pacific/Apia went from 2011-12-29 23:59:59 (-10) to 2011-12-31 (+14)

TEST(CronDst, skipped_calendar_day_runs_once_when_the_gap_ends) {
    EXPECT_THAT(runs_after("0 12 30 12 *", "Pacific/Apia", "2011-12-01T00:00:00Z", 2),
                ElementsAre("2011-12-31 00:00:00 +14", "2012-12-30 12:00:00 +14"));
}

// --- DST against a brute-force reading of reference §5 -------------------------------------------

// Whether a local wall-clock time matches, checked field by field.
bool matches_local(const CronExpression& expr, date::local_seconds local) {
    const auto day = std::chrono::floor<date::days>(local);
    const date::year_month_day ymd{day};
    const date::hh_mm_ss<std::chrono::seconds> time{local - day};
    const bool day_of_month =
        expr.days_of_month.contains(static_cast<int>(static_cast<unsigned>(ymd.day())));
    const bool day_of_week =
        expr.days_of_week.contains(static_cast<int>(date::weekday{day}.c_encoding()));
    const bool day_ok = (expr.day_of_month_restricted && expr.day_of_week_restricted)
                            ? (day_of_month || day_of_week)
                            : (day_of_month && day_of_week);
    return day_ok && expr.months.contains(static_cast<int>(static_cast<unsigned>(ymd.month()))) &&
           expr.hours.contains(static_cast<int>(time.hours().count())) &&
           expr.minutes.contains(static_cast<int>(time.minutes().count())) &&
           expr.seconds.contains(static_cast<int>(time.seconds().count()));
}

// reference §5 read literally, one instant at a time, using date's own local-time classification.
bool is_run(const CronExpression& expr, const date::time_zone& in_zone, date::sys_seconds instant) {
    const date::sys_info info = in_zone.get_info(instant);
    const date::local_seconds local{instant.time_since_epoch() + info.offset};
    if (matches_local(expr, local)) {
        const date::local_info kind = in_zone.get_info(local);
        const bool second_pass =
            kind.result == date::local_info::ambiguous && kind.second.offset == info.offset;
        if (!second_pass || expr.hour_starts_with_star) return true;
    }
    // The first instant after a gap also runs if any local time skipped by the gap matches.
    const date::sys_info before = in_zone.get_info(instant - std::chrono::seconds{1});
    if (info.begin != instant || before.offset >= info.offset) return false;
    for (date::local_seconds skipped{instant.time_since_epoch() + before.offset}; skipped < local;
         skipped += std::chrono::seconds{1}) {
        if (matches_local(expr, skipped)) return true;
    }
    return false;
}

TEST(CronDst, agrees_with_brute_force_definition_around_every_transition_2020_to_2030) {
    const std::array expressions{"30 2 * * *",   "*/15 * * * *",     "*/15 2 * * *",
                                 "0 * * * *",    "0 1-3 * * *",      "*/7 * * * *",
                                 "59 1 * * *",   "0 3 * * *",        "*/10 */2 * * *",
                                 "45 1,2 * * *", "*/20 * 1-3 * * *", "30 0-3/1 * * *"};
    const auto window = std::chrono::hours{3};
    int transitions = 0;
    int checks = 0;
    for (const char* zone_name : {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe"}) {
        const date::time_zone& in_zone = zone(zone_name);
        date::sys_seconds at = date::sys_days{date::year{2020} / 1 / 1};
        while ((at = in_zone.get_info(at).end) < date::sys_days{date::year{2031} / 1 / 1}) {
            ++transitions;
            for (const char* text : expressions) {
                const CronExpression expr = expression(text);
                const auto step =
                    expr.has_seconds ? std::chrono::seconds{1} : std::chrono::seconds{60};
                std::vector<date::sys_seconds> runs;
                for (auto instant = at - window; instant <= at + window; instant += step) {
                    if (is_run(expr, in_zone, instant)) runs.push_back(instant);
                }
                // From before, at and just after each run, and every 13 minutes, the next run
                // must be the next brute-force run (when that lies inside the window).
                std::vector<TimePoint> starts;
                for (const auto run : runs) {
                    starts.insert(starts.end(), {run - std::chrono::milliseconds{1}, run,
                                                 run + std::chrono::milliseconds{500}});
                }
                for (auto start = at - window; start < at + window;
                     start += std::chrono::minutes{13}) {
                    starts.push_back(start);
                }
                for (const TimePoint start : starts) {
                    const auto expected = std::upper_bound(runs.begin(), runs.end(), start);
                    if (expected == runs.end()) continue;
                    ++checks;
                    EXPECT_EQ(next_occurrence(expr, in_zone, start), TimePoint{*expected})
                        << text << " in " << zone_name << " after "
                        << date::format("%FT%TZ", start);
                }
            }
        }
    }
    EXPECT_EQ(transitions, 3 * 22);
    EXPECT_GT(checks, 10'000);
}

}  // namespace
}  // namespace hourglass::cron
