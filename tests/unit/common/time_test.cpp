// UTC instants (include/hourglass/time.hpp): RFC 3339 parsing accepts exactly the forms the
// header documents and nothing else, formatting always gives three fraction digits (reference §7),
// and epoch conversions are exact, also before 1970.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "hourglass/time.hpp"

namespace hourglass {
namespace {

// 2026-11-22T09:30:00.000Z
constexpr std::int64_t kExampleMs = 1795339800000;
constexpr std::int64_t kHourMs = 3600000;
constexpr std::int64_t kMinuteMs = 60000;

std::optional<std::int64_t> parsed_ms(std::string_view text) {
    const auto instant = parse_rfc3339(text);
    if (!instant) return std::nullopt;
    return to_epoch_ms(*instant);
}

// --- accepted forms -------------------------------------------------------------------------

TEST(ParseRfc3339, upper_case_z_is_utc) {
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00Z"), kExampleMs);
}

TEST(ParseRfc3339, lower_case_z_is_utc) {
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00z"), kExampleMs);
}

TEST(ParseRfc3339, spec_example_with_milliseconds) {
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00.250Z"), kExampleMs + 250);
}

TEST(ParseRfc3339, positive_offset_is_subtracted_to_get_utc) {
    // 09:30 at +01:00 is 08:30 UTC.
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00+01:00"), kExampleMs - kHourMs);
}

TEST(ParseRfc3339, negative_offset_with_minutes_is_added_to_get_utc) {
    // 09:30 at -05:30 is 15:00 UTC.
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00-05:30"), kExampleMs + 5 * kHourMs + 30 * kMinuteMs);
}

TEST(ParseRfc3339, zero_offsets_equal_z) {
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00+00:00"), kExampleMs);
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00-00:00"), kExampleMs);
}

TEST(ParseRfc3339, extreme_offsets_are_accepted) {
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00+23:59"), kExampleMs - 23 * kHourMs - 59 * kMinuteMs);
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00-23:59"), kExampleMs + 23 * kHourMs + 59 * kMinuteMs);
}

TEST(ParseRfc3339, offset_moves_the_instant_across_a_date_boundary) {
    // 00:30 on the 23rd at +01:00 is 23:30 UTC on the 22nd.
    EXPECT_EQ(parsed_ms("2026-11-23T00:30:00+01:00"), kExampleMs + 14 * kHourMs);
}

TEST(ParseRfc3339, fractions_of_one_to_nine_digits_are_truncated_to_milliseconds) {
    const std::string digits = "123456789";
    const std::vector<std::int64_t> expected_millis = {100, 120, 123, 123, 123,
                                                       123, 123, 123, 123};
    for (std::size_t length = 1; length <= 9; ++length) {
        const std::string text = "2026-11-22T09:30:00." + digits.substr(0, length) + "Z";
        SCOPED_TRACE(text);
        EXPECT_EQ(parsed_ms(text), kExampleMs + expected_millis[length - 1]);
    }
}

TEST(ParseRfc3339, fraction_is_truncated_never_rounded_up) {
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00.999999999Z"), kExampleMs + 999);
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00.0009Z"), kExampleMs);
}

TEST(ParseRfc3339, fraction_combines_with_an_offset) {
    EXPECT_EQ(parsed_ms("2026-11-22T09:30:00.5+01:00"), kExampleMs - kHourMs + 500);
}

TEST(ParseRfc3339, long_fraction_within_the_input_bound_is_accepted) {
    const std::string text = "2026-11-22T09:30:00." + std::string(30, '7') + "Z";
    EXPECT_EQ(parsed_ms(text), kExampleMs + 777);
}

TEST(ParseRfc3339, space_separates_date_and_time) {
    EXPECT_EQ(parsed_ms("2026-11-22 09:30:00Z"), kExampleMs);
}

TEST(ParseRfc3339, lower_case_t_separates_date_and_time) {
    EXPECT_EQ(parsed_ms("2026-11-22t09:30:00.250z"), kExampleMs + 250);
}

TEST(ParseRfc3339, leap_day_of_a_leap_year_is_accepted) {
    EXPECT_EQ(parsed_ms("2028-02-29T12:00:00Z"), 1835438400000);
    EXPECT_EQ(parsed_ms("2000-02-29T00:00:00Z"), 951782400000);
}

TEST(ParseRfc3339, times_before_the_epoch_are_negative) {
    EXPECT_EQ(parsed_ms("1969-12-31T23:59:59.999Z"), -1);
    EXPECT_EQ(parsed_ms("1900-01-01T00:00:00Z"), -2208988800000);
}

TEST(ParseRfc3339, last_millisecond_of_year_9999) {
    EXPECT_EQ(parsed_ms("9999-12-31T23:59:59.999Z"), 253402300799999);
}

TEST(ParseRfc3339, field_upper_bounds_are_accepted) {
    EXPECT_EQ(parsed_ms("2026-12-31T23:59:59Z"), 1798761599000);
}

// --- rejected forms -------------------------------------------------------------------------

class ParseRfc3339Rejects : public ::testing::TestWithParam<std::string> {};

TEST_P(ParseRfc3339Rejects, input) { EXPECT_EQ(parse_rfc3339(GetParam()), std::nullopt); }

INSTANTIATE_TEST_SUITE_P(
    NonLeapDay, ParseRfc3339Rejects,
    ::testing::Values("2027-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2026-02-30T00:00:00Z",
                      "2026-04-31T00:00:00Z"));

INSTANTIATE_TEST_SUITE_P(
    OutOfRangeFields, ParseRfc3339Rejects,
    ::testing::Values("2026-13-01T00:00:00Z",   // month 13
                      "2026-00-01T00:00:00Z",   // month 0
                      "2026-01-00T00:00:00Z",   // day 0
                      "2026-01-32T00:00:00Z",   // day 32
                      "2026-11-22T24:00:00Z",   // hour 24
                      "2026-11-22T09:60:00Z",   // minute 60
                      "2026-11-22T09:30:60Z",   // leap second
                      "2026-11-22T09:30:00+24:00",
                      "2026-11-22T09:30:00+01:60"));

INSTANTIATE_TEST_SUITE_P(
    MissingOrMalformedOffset, ParseRfc3339Rejects,
    ::testing::Values("2026-11-22T09:30:00",        // no offset
                      "2026-11-22T09:30:00.250",    // no offset after a fraction
                      "2026-11-22T09:30:00+0100",   // offset without colon
                      "2026-11-22T09:30:00+01",     // offset without minutes
                      "2026-11-22T09:30:00+1:00",   // one-digit offset hour
                      "2026-11-22T09:30:00UTC",     // zone name
                      "2026-11-22T09:30:00 Z"));    // space before the offset

INSTANTIATE_TEST_SUITE_P(
    Garbage, ParseRfc3339Rejects,
    ::testing::Values("", "Z", "tomorrow", "1795339800000", "2026-11-22",
                      "2026-11-22T09:30Z",          // seconds are mandatory
                      "2026-11-22X09:30:00Z",       // bad separator
                      "2026-11-22T09:30:00.Z",      // dot without digits
                      "2026-11-22T09:30:00,250Z",   // comma fraction
                      "2026-1-22T09:30:00Z",        // one-digit month
                      "26-11-22T09:30:00Z",         // two-digit year
                      "+2026-11-22T09:30:00Z",      // signed year
                      " 2026-11-22T09:30:00Z",      // leading space
                      "2026-11-22T09:30:00Z ",      // trailing space
                      "2026-11-22T09:30:00ZZ",      // trailing garbage
                      "2026-11-22T09:30:00.25x0Z",  // non-digit in the fraction
                      "２０２６-11-22T09:30:00Z"));  // full-width digits

TEST(ParseRfc3339, embedded_nul_is_rejected) {
    const std::string text("2026-11-22T09:30:00\0Z", 21);
    EXPECT_EQ(parse_rfc3339(text), std::nullopt);
}

TEST(ParseRfc3339, overlong_input_is_rejected) {
    EXPECT_EQ(parse_rfc3339("2026-11-22T09:30:00Z" + std::string(100, ' ')), std::nullopt);
    EXPECT_EQ(parse_rfc3339("2026-11-22T09:30:00." + std::string(1000, '0') + "Z"),
              std::nullopt);
    EXPECT_EQ(parse_rfc3339(std::string(100000, '9')), std::nullopt);
}

// --- formatting -----------------------------------------------------------------------------

TEST(FormatRfc3339Ms, whole_second_gets_three_zero_fraction_digits) {
    EXPECT_EQ(format_rfc3339_ms(from_epoch_ms(kExampleMs)), "2026-11-22T09:30:00.000Z");
}

TEST(FormatRfc3339Ms, spec_example) {
    EXPECT_EQ(format_rfc3339_ms(from_epoch_ms(kExampleMs + 250)), "2026-11-22T09:30:00.250Z");
}

TEST(FormatRfc3339Ms, single_millisecond_is_zero_padded) {
    EXPECT_EQ(format_rfc3339_ms(from_epoch_ms(kExampleMs + 7)), "2026-11-22T09:30:00.007Z");
}

TEST(FormatRfc3339Ms, epoch) {
    EXPECT_EQ(format_rfc3339_ms(from_epoch_ms(0)), "1970-01-01T00:00:00.000Z");
}

TEST(FormatRfc3339Ms, millisecond_before_the_epoch) {
    EXPECT_EQ(format_rfc3339_ms(from_epoch_ms(-1)), "1969-12-31T23:59:59.999Z");
}

TEST(FormatRfc3339Ms, leap_day) {
    EXPECT_EQ(format_rfc3339_ms(from_epoch_ms(1835438400000 + 123)), "2028-02-29T12:00:00.123Z");
}

TEST(FormatRfc3339Ms, last_millisecond_of_year_9999) {
    EXPECT_EQ(format_rfc3339_ms(from_epoch_ms(253402300799999)), "9999-12-31T23:59:59.999Z");
}

// --- round trips and epoch conversions ------------------------------------------------------

TEST(Rfc3339RoundTrip, format_then_parse_gives_the_same_instant) {
    for (const std::int64_t ms :
         {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1}, kExampleMs, kExampleMs + 250,
          std::int64_t{1835438400999}, std::int64_t{-2208988800000}, std::int64_t{951782399999},
          std::int64_t{253402300799999}, std::int64_t{-62135596800000}}) {
        SCOPED_TRACE(ms);
        const auto text = format_rfc3339_ms(from_epoch_ms(ms));
        EXPECT_EQ(parsed_ms(text), ms) << text;
    }
}

TEST(Rfc3339RoundTrip, parse_then_format_normalises_to_utc_milliseconds) {
    EXPECT_EQ(format_rfc3339_ms(*parse_rfc3339("2026-11-22t10:30:00.123456+01:00")),
              "2026-11-22T09:30:00.123Z");
    EXPECT_EQ(format_rfc3339_ms(*parse_rfc3339("2026-11-22 04:00:00.5-05:30")),
              "2026-11-22T09:30:00.500Z");
}

TEST(EpochMs, conversions_are_inverse_including_negative_and_extremes) {
    for (const std::int64_t ms :
         {std::int64_t{0}, std::int64_t{1}, std::int64_t{-1}, kExampleMs, -kExampleMs,
          std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()}) {
        SCOPED_TRACE(ms);
        EXPECT_EQ(to_epoch_ms(from_epoch_ms(ms)), ms);
    }
}

TEST(EpochMs, from_epoch_ms_counts_milliseconds_since_1970) {
    EXPECT_EQ(from_epoch_ms(1500).time_since_epoch(), std::chrono::milliseconds{1500});
    EXPECT_EQ(from_epoch_ms(-1500).time_since_epoch(), std::chrono::milliseconds{-1500});
    EXPECT_EQ(to_epoch_ms(TimePoint{}), 0);
}

TEST(NowMs, lies_between_two_system_clock_readings) {
    const auto before = std::chrono::floor<Milliseconds>(std::chrono::system_clock::now());
    const auto now = now_ms();
    const auto after = std::chrono::system_clock::now();
    EXPECT_LE(before, now);
    EXPECT_LE(now, after);
}

}  // namespace
}  // namespace hourglass
