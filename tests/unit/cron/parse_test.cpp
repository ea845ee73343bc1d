// Cron syntax (reference §5): every element parses to the right values, and every malformed input
// is rejected with a message naming the field and the token, without throwing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "cron_test_support.hpp"

namespace hourglass::cron {
namespace {

using test_support::expression;
using test_support::parse_error;
using test_support::values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int> range(int first, int last, int step = 1) {
    std::vector<int> out;
    for (int value = first; value <= last; value += step) out.push_back(value);
    return out;
}

// --- fields and syntax elements -------------------------------------------------------------

TEST(CronParse, five_fields_are_minute_hour_day_month_weekday_at_second_zero) {
    const CronExpression e = expression("5 4 3 2 1");
    EXPECT_FALSE(e.has_seconds);
    EXPECT_THAT(values(e.seconds), ElementsAre(0));
    EXPECT_THAT(values(e.minutes), ElementsAre(5));
    EXPECT_THAT(values(e.hours), ElementsAre(4));
    EXPECT_THAT(values(e.days_of_month), ElementsAre(3));
    EXPECT_THAT(values(e.months), ElementsAre(2));
    EXPECT_THAT(values(e.days_of_week), ElementsAre(1));
}

TEST(CronParse, six_fields_put_seconds_first) {
    const CronExpression e = expression("6 5 4 3 2 1");
    EXPECT_TRUE(e.has_seconds);
    EXPECT_THAT(values(e.seconds), ElementsAre(6));
    EXPECT_THAT(values(e.minutes), ElementsAre(5));
    EXPECT_THAT(values(e.hours), ElementsAre(4));
    EXPECT_THAT(values(e.days_of_month), ElementsAre(3));
    EXPECT_THAT(values(e.months), ElementsAre(2));
    EXPECT_THAT(values(e.days_of_week), ElementsAre(1));
}

TEST(CronParse, star_allows_every_value_of_each_field) {
    const CronExpression e = expression("* * * * * *");
    EXPECT_EQ(values(e.seconds), range(0, 59));
    EXPECT_EQ(values(e.minutes), range(0, 59));
    EXPECT_EQ(values(e.hours), range(0, 23));
    EXPECT_EQ(values(e.days_of_month), range(1, 31));
    EXPECT_EQ(values(e.months), range(1, 12));
    EXPECT_EQ(values(e.days_of_week), range(0, 6));
}

TEST(CronParse, extremes_of_each_field_are_accepted) {
    const CronExpression low = expression("0 0 0 1 1 0");
    const CronExpression high = expression("59 59 23 31 12 7");
    EXPECT_THAT(values(low.days_of_month), ElementsAre(1));
    EXPECT_THAT(values(high.seconds), ElementsAre(59));
    EXPECT_THAT(values(high.hours), ElementsAre(23));
    EXPECT_THAT(values(high.days_of_month), ElementsAre(31));
    EXPECT_THAT(values(high.months), ElementsAre(12));
}

TEST(CronParse, list_combines_values_ranges_and_steps) {
    EXPECT_THAT(values(expression("1,5,10-12,50/5 * * * *").minutes),
                ElementsAre(1, 5, 10, 11, 12, 50, 55));
}

TEST(CronParse, duplicates_in_a_list_are_harmless) {
    EXPECT_THAT(values(expression("5,5,1-6 * * * *").minutes), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(CronParse, range_includes_both_ends) {
    EXPECT_THAT(values(expression("* 9-17 * * *").hours), range(9, 17));
    EXPECT_THAT(values(expression("* 7-7 * * *").hours), ElementsAre(7));
}

TEST(CronParse, star_step_takes_every_nth_value_from_the_minimum) {
    EXPECT_THAT(values(expression("*/15 * * * *").minutes), ElementsAre(0, 15, 30, 45));
    EXPECT_THAT(values(expression("* * */10 * *").days_of_month), ElementsAre(1, 11, 21, 31));
    EXPECT_THAT(values(expression("* * * */5 *").months), ElementsAre(1, 6, 11));
}

TEST(CronParse, range_step_takes_every_nth_value_inside_the_range) {
    EXPECT_THAT(values(expression("10-40/7 * * * *").minutes), ElementsAre(10, 17, 24, 31, 38));
}

TEST(CronParse, start_step_means_start_to_maximum) {
    EXPECT_EQ(expression("5/15 * * * *"), expression("5-59/15 * * * *"));
    EXPECT_THAT(values(expression("5/15 * * * *").minutes), ElementsAre(5, 20, 35, 50));
    EXPECT_THAT(values(expression("* 20/2 * * *").hours), ElementsAre(20, 22));
    EXPECT_THAT(values(expression("* * 30/1 * *").days_of_month), ElementsAre(30, 31));
}

TEST(CronParse, step_as_wide_as_the_field_keeps_only_the_start) {
    EXPECT_THAT(values(expression("*/60 * * * *").minutes), ElementsAre(0));
    EXPECT_THAT(values(expression("* */24 * * *").hours), ElementsAre(0));
}

TEST(CronParse, month_names_are_case_insensitive) {
    EXPECT_THAT(values(expression("* * * jan,Feb,MAR,aPr *").months), ElementsAre(1, 2, 3, 4));
    EXPECT_EQ(values(expression("* * * JAN-DEC *").months), range(1, 12));
    EXPECT_THAT(values(expression("* * * may-aug/2 *").months), ElementsAre(5, 7));
    EXPECT_THAT(values(expression("* * * Oct/1 *").months), ElementsAre(10, 11, 12));
}

TEST(CronParse, weekday_names_are_case_insensitive) {
    EXPECT_THAT(values(expression("* * * * sun,Mon,TUE,wEd,thu,FRI,sat").days_of_week),
                range(0, 6));
    EXPECT_THAT(values(expression("* * * * mon-fri").days_of_week), ElementsAre(1, 2, 3, 4, 5));
}

TEST(CronParse, names_and_numbers_mix) {
    EXPECT_THAT(values(expression("* * * 1,MAR-4 *").months), ElementsAre(1, 3, 4));
    EXPECT_THAT(values(expression("* * * * 1-WED").days_of_week), ElementsAre(1, 2, 3));
}

TEST(CronParse, seven_is_sunday) {
    EXPECT_EQ(expression("0 0 * * 7"), expression("0 0 * * 0"));
    EXPECT_THAT(values(expression("* * * * 5-7").days_of_week), ElementsAre(0, 5, 6));
    EXPECT_THAT(values(expression("* * * * 0-7").days_of_week), range(0, 6));
    EXPECT_THAT(values(expression("* * * * 1-7/2").days_of_week), ElementsAre(0, 1, 3, 5));
}

TEST(CronParse, sunday_name_ends_a_range_as_seven) {
    EXPECT_THAT(values(expression("* * * * FRI-SUN").days_of_week), ElementsAre(0, 5, 6));
    EXPECT_THAT(values(expression("* * * * SUN-SAT").days_of_week), range(0, 6));
    EXPECT_THAT(values(expression("* * * * SUN-SUN").days_of_week), ElementsAre(0));
}

TEST(CronParse, weekday_star_step_and_start_step_run_to_seven) {
    EXPECT_THAT(values(expression("* * * * */2").days_of_week), ElementsAre(0, 2, 4, 6));
    EXPECT_THAT(values(expression("* * * * */7").days_of_week), ElementsAre(0));
    // `1/2` is `1-7/2`: Monday, Wednesday, Friday and (as 7) Sunday, as in cronie.
    EXPECT_THAT(values(expression("* * * * 1/2").days_of_week), ElementsAre(0, 1, 3, 5));
}

TEST(CronParse, fields_may_be_separated_by_any_whitespace) {
    EXPECT_EQ(expression("  0\t9 \t *  *   MON-FRI \n"), expression("0 9 * * 1-5"));
}

TEST(CronParse, leading_zeros_are_accepted) {
    EXPECT_EQ(expression("05 09 01 02 03"), expression("5 9 1 2 3"));
}

// --- macros ---------------------------------------------------------------------------------

TEST(CronParse, macros_expand_to_their_five_field_meaning) {
    EXPECT_EQ(expression("@yearly"), expression("0 0 1 1 *"));
    EXPECT_EQ(expression("@annually"), expression("0 0 1 1 *"));
    EXPECT_EQ(expression("@monthly"), expression("0 0 1 * *"));
    EXPECT_EQ(expression("@weekly"), expression("0 0 * * 0"));
    EXPECT_EQ(expression("@daily"), expression("0 0 * * *"));
    EXPECT_EQ(expression("@midnight"), expression("0 0 * * *"));
    EXPECT_EQ(expression("@hourly"), expression("0 * * * *"));
}

TEST(CronParse, macros_are_case_insensitive_and_may_be_padded) {
    EXPECT_EQ(expression("@DAILY"), expression("@daily"));
    EXPECT_EQ(expression("@Hourly"), expression("@hourly"));
    EXPECT_EQ(expression(" @AnNuAlLy\t"), expression("@yearly"));
}

// --- flags that drive the day and DST rules -------------------------------------------------

TEST(CronParse, day_field_is_restricted_unless_it_starts_with_star) {
    const CronExpression both_star = expression("0 0 * * *");
    EXPECT_FALSE(both_star.day_of_month_restricted);
    EXPECT_FALSE(both_star.day_of_week_restricted);

    const CronExpression star_steps = expression("0 0 */2 * */3");
    EXPECT_FALSE(star_steps.day_of_month_restricted);
    EXPECT_FALSE(star_steps.day_of_week_restricted);

    // Restricted even though they allow every day: only the leading `*` counts.
    const CronExpression full_ranges = expression("0 0 1-31 * 0-6");
    EXPECT_TRUE(full_ranges.day_of_month_restricted);
    EXPECT_TRUE(full_ranges.day_of_week_restricted);
}

TEST(CronParse, hour_starts_with_star_is_recorded_for_repeated_hours) {
    EXPECT_TRUE(expression("0 * * * *").hour_starts_with_star);
    EXPECT_TRUE(expression("0 */2 * * *").hour_starts_with_star);
    EXPECT_TRUE(expression("0 0 * * * *").hour_starts_with_star);  // six fields: third is hour
    EXPECT_TRUE(expression("@hourly").hour_starts_with_star);
    EXPECT_FALSE(expression("0 0-23 * * *").hour_starts_with_star);
    EXPECT_FALSE(expression("0 2 * * *").hour_starts_with_star);
    EXPECT_FALSE(expression("@daily").hour_starts_with_star);
}

// --- errors ---------------------------------------------------------------------------------

TEST(CronParse, empty_or_blank_expression_is_rejected) {
    EXPECT_EQ(parse_error(""), "expression: empty");
    EXPECT_EQ(parse_error(" \t\n"), "expression: empty");
}

TEST(CronParse, wrong_number_of_fields_is_rejected) {
    EXPECT_THAT(parse_error("* * * *"), HasSubstr("got 4"));
    EXPECT_THAT(parse_error("* * * * * * *"), HasSubstr("got 7"));
    EXPECT_THAT(parse_error("*"), HasSubstr("expected 5 fields"));
}

TEST(CronParse, input_longer_than_the_limit_is_rejected_unread) {
    const std::string padded = "* * * * *" + std::string(max_expression_length, ' ');
    EXPECT_EQ(parse_error(padded), "expression: too long (265 characters, at most 256)");
    const std::string longest_accepted = "* * * * *" + std::string(max_expression_length - 9, ' ');
    EXPECT_NO_THROW(expression(longest_accepted));
    EXPECT_THAT(parse_error(std::string(1'000'000, '1')), HasSubstr("too long"));
}

TEST(CronParse, value_out_of_range_names_field_and_token) {
    EXPECT_EQ(parse_error("60 * * * *"), "minute: bad token '60' (60 is out of range 0-59)");
    EXPECT_EQ(parse_error("* 24 * * *"), "hour: bad token '24' (24 is out of range 0-23)");
    EXPECT_EQ(parse_error("* * 0 * *"), "day-of-month: bad token '0' (0 is out of range 1-31)");
    EXPECT_EQ(parse_error("* * 32 * *"), "day-of-month: bad token '32' (32 is out of range 1-31)");
    EXPECT_EQ(parse_error("* * * 0 *"), "month: bad token '0' (0 is out of range 1-12)");
    EXPECT_EQ(parse_error("* * * 13 *"), "month: bad token '13' (13 is out of range 1-12)");
    EXPECT_EQ(parse_error("* * * * 8"), "day-of-week: bad token '8' (8 is out of range 0-7)");
    EXPECT_EQ(parse_error("60 * * * * *"), "second: bad token '60' (60 is out of range 0-59)");
    EXPECT_EQ(parse_error("1-60 * * * *"), "minute: bad token '1-60' (60 is out of range 0-59)");
    EXPECT_THAT(parse_error("99999999999999999999 * * * *"), HasSubstr("is out of range 0-59"));
}

TEST(CronParse, step_zero_or_wider_than_the_field_is_rejected) {
    EXPECT_EQ(parse_error("*/0 * * * *"),
              "minute: bad token '*/0' (step must be between 1 and 60)");
    EXPECT_EQ(parse_error("* */25 * * *"),
              "hour: bad token '*/25' (step must be between 1 and 24)");
    EXPECT_EQ(parse_error("* * * * 1-5/0"),
              "day-of-week: bad token '1-5/0' (step must be between 1 and 8)");
}

TEST(CronParse, malformed_step_is_rejected) {
    EXPECT_EQ(parse_error("*/ * * * *"), "minute: bad token '*/' (missing step after '/')");
    EXPECT_EQ(parse_error("*/x * * * *"), "minute: bad token '*/x' (step 'x' is not a number)");
    EXPECT_EQ(parse_error("1/2/3 * * * *"),
              "minute: bad token '1/2/3' (step '2/3' is not a number)");
    EXPECT_EQ(parse_error("/5 * * * *"), "minute: bad token '/5' (expected a value)");
    EXPECT_EQ(parse_error("*/-1 * * * *"), "minute: bad token '*/-1' (step '-1' is not a number)");
}

TEST(CronParse, wrap_around_range_is_rejected) {
    EXPECT_EQ(parse_error("0 9 * * FRI-MON"),
              "day-of-week: bad token 'FRI-MON' (ranges must not wrap)");
    EXPECT_EQ(parse_error("50-10 * * * *"), "minute: bad token '50-10' (ranges must not wrap)");
    EXPECT_EQ(parse_error("* 22-2 * * *"), "hour: bad token '22-2' (ranges must not wrap)");
    EXPECT_EQ(parse_error("* * * NOV-FEB *"), "month: bad token 'NOV-FEB' (ranges must not wrap)");
    EXPECT_EQ(parse_error("* * * * 5-0"), "day-of-week: bad token '5-0' (ranges must not wrap)");
}

TEST(CronParse, malformed_range_is_rejected) {
    EXPECT_EQ(parse_error("1- * * * *"), "minute: bad token '1-' (expected a value)");
    EXPECT_EQ(parse_error("-1 * * * *"), "minute: bad token '-1' (expected a value)");
    EXPECT_EQ(parse_error("1-2-3 * * * *"), "minute: bad token '1-2-3' ('2-3' is not a number)");
    EXPECT_EQ(parse_error("*-5 * * * *"), "minute: bad token '*-5' ('*' is not a number)");
    EXPECT_EQ(parse_error("5-* * * * *"), "minute: bad token '5-*' ('*' is not a number)");
}

TEST(CronParse, empty_list_element_is_rejected) {
    EXPECT_EQ(parse_error("1,,2 * * * *"), "minute: bad token '1,,2' (empty list element)");
    EXPECT_EQ(parse_error("1, * * * *"), "minute: bad token '1,' (empty list element)");
    EXPECT_EQ(parse_error("* * * * ,MON"), "day-of-week: bad token ',MON' (empty list element)");
}

TEST(CronParse, names_are_only_known_three_letter_names_in_their_own_field) {
    EXPECT_EQ(parse_error("* * * JANUARY *"),
              "month: bad token 'JANUARY' ('JANUARY' is neither a number nor a name like jan)");
    EXPECT_EQ(parse_error("* * * * MONDAY"),
              "day-of-week: bad token 'MONDAY' ('MONDAY' is neither a number nor a name like sun)");
    EXPECT_EQ(parse_error("* * * MON *"),
              "month: bad token 'MON' ('MON' is neither a number nor a name like jan)");
    EXPECT_EQ(parse_error("* * * * JAN"),
              "day-of-week: bad token 'JAN' ('JAN' is neither a number nor a name like sun)");
    EXPECT_EQ(parse_error("MON * * * *"), "minute: bad token 'MON' ('MON' is not a number)");
}

TEST(CronParse, garbage_is_rejected_with_the_first_bad_field) {
    EXPECT_EQ(parse_error("a b c d e"), "minute: bad token 'a' ('a' is not a number)");
    EXPECT_EQ(parse_error("0 0 ? * *"), "day-of-month: bad token '?' ('?' is not a number)");
    EXPECT_EQ(parse_error("0 0 L * *"), "day-of-month: bad token 'L' ('L' is not a number)");
    EXPECT_EQ(parse_error("0 0 * * 5#3"), "day-of-week: bad token '5#3' ('5#3' is not a number)");
    EXPECT_EQ(parse_error("+5 * * * *"), "minute: bad token '+5' ('+5' is not a number)");
    EXPECT_EQ(parse_error("1.5 * * * *"), "minute: bad token '1.5' ('1.5' is not a number)");
    EXPECT_EQ(parse_error("** * * * *"), "minute: bad token '**' ('**' is not a number)");
}

TEST(CronParse, unprintable_bytes_are_escaped_in_messages) {
    EXPECT_EQ(parse_error("\x01\xff * * * *"),
              "minute: bad token '\\x01\\xff' ('\\x01\\xff' is not a number)");
}

TEST(CronParse, a_huge_token_is_quoted_in_at_most_200_bytes) {
    const auto error = parse_error(std::string(70000, 'x') + " * * * *");
    EXPECT_LT(error.size(), 600u);
}

TEST(CronParse, reboot_macro_is_unsupported) {
    EXPECT_THAT(parse_error("@reboot"), HasSubstr("'@reboot' is not supported"));
    EXPECT_THAT(parse_error("@REBOOT"), HasSubstr("'@REBOOT' is not supported"));
}

TEST(CronParse, unknown_macro_or_macro_with_fields_is_rejected) {
    EXPECT_THAT(parse_error("@every_5m"), HasSubstr("unknown macro '@every_5m'"));
    EXPECT_THAT(parse_error("@"), HasSubstr("unknown macro '@'"));
    EXPECT_EQ(parse_error("@daily 5"), "expression: macro '@daily' must be the whole expression");
    EXPECT_THAT(parse_error("0 @daily * * *"), HasSubstr("hour: bad token '@daily'"));
}

TEST(CronParse, random_bytes_never_throw) {
    std::mt19937 random{20260329};
    const std::string alphabet = "0123456789*/-,@ \tMONJANSUNfriL?#x\x01\xff";
    for (int round = 0; round < 20'000; ++round) {
        std::string text(random() % 40, ' ');
        for (char& c : text) c = alphabet[random() % alphabet.size()];
        EXPECT_NO_THROW((void)parse(text)) << text;
    }
}

}  // namespace
}  // namespace hourglass::cron
