// Cron expression parser (reference §5). Every problem with the user's text becomes a ParseError
// whose message names the field and the offending token; nothing here throws on bad input.
#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "common/text.hpp"
#include "hourglass/cron.hpp"

namespace hourglass::cron {
namespace {

constexpr std::array<std::string_view, 12> month_names{"jan", "feb", "mar", "apr", "may", "jun",
                                                       "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<std::string_view, 7> weekday_names{"sun", "mon", "tue", "wed",
                                                        "thu", "fri", "sat"};

// How one field is written and which values it accepts.
struct FieldSyntax {
    std::string_view name;  // as error messages call it
    int min;
    int max;  // the largest value accepted; also where `*` and `a/n` end
    std::span<const std::string_view> names = {};  // names[i] means the value first_named + i
    int first_named = 0;
    bool is_day_of_week = false;
};

constexpr FieldSyntax second_field{"second", 0, 59};
constexpr FieldSyntax minute_field{"minute", 0, 59};
constexpr FieldSyntax hour_field{"hour", 0, 23};
constexpr FieldSyntax day_of_month_field{"day-of-month", 1, 31};
constexpr FieldSyntax month_field{"month", 1, 12, month_names, 1};
// 0 and 7 are both Sunday, as in Vixie cron and cronie; 7 is folded into 0 after parsing.
constexpr FieldSyntax day_of_week_field{"day-of-week", 0, 7, weekday_names, 0, true};
constexpr int sunday_as_seven = 7;

struct Macro {
    std::string_view name;
    std::string_view expansion;
};

constexpr std::array<Macro, 7> macros{{
    {"@yearly", "0 0 1 1 *"},
    {"@annually", "0 0 1 1 *"},
    {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},
    {"@daily", "0 0 * * *"},
    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
}};

// Why a token is malformed, for the message; empty means it is fine.
using Reason = std::string;

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_all_digits(std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}
char to_lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (to_lower(a[i]) != to_lower(b[i])) return false;
    }
    return true;
}

std::string_view trim(std::string_view text) {
    while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
    while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
    return text;
}

ParseError bad_token(const FieldSyntax& field, std::string_view token, std::string_view reason) {
    return ParseError{std::string{field.name} + ": bad token " + quote_value(token) + " (" +
                      std::string{reason} + ")"};
}

// Splits at the first `separator`: "10-40" -> {"10", "40"}; "10" -> {"10", nullopt}.
std::pair<std::string_view, std::optional<std::string_view>> split_once(std::string_view text,
                                                                        char separator) {
    const auto at = text.find(separator);
    if (at == std::string_view::npos) return {text, std::nullopt};
    return {text.substr(0, at), text.substr(at + 1)};
}

// Parses a whole token of decimal digits; nothing if it is anything else or overflows.
std::optional<int> parse_number(std::string_view text) {
    if (!is_all_digits(text)) return std::nullopt;
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::string range_text(const FieldSyntax& field) {
    return std::to_string(field.min) + "-" + std::to_string(field.max);
}

// A number or (month and day-of-week only) a name, within the field's range.
std::variant<int, Reason> parse_value(const FieldSyntax& field, std::string_view text) {
    if (text.empty()) return Reason{"expected a value"};
    if (is_digit(text.front())) {
        if (!is_all_digits(text)) return Reason{quote_value(text) + " is not a number"};
        const auto number = parse_number(text);
        if (!number || *number < field.min || *number > field.max) {
            return Reason{printable(text, kMaxQuotedBytes) + " is out of range " + range_text(field)};
        }
        return *number;
    }
    for (std::size_t i = 0; i < field.names.size(); ++i) {
        if (equals_ignoring_case(text, field.names[i]))
            return field.first_named + static_cast<int>(i);
    }
    if (field.names.empty()) return Reason{quote_value(text) + " is not a number"};
    return Reason{quote_value(text) + " is neither a number nor a name like " +
                  std::string(field.names.front())};
}

bool is_name(std::string_view text) {
    return !text.empty() && !is_digit(text.front());
}

// Adds the values of one list element ("5", "1-5", "*/15", "10-40/7", "MON-FRI", "5/15") to
// `bits`. Returns why the element is malformed, or an empty reason.
Reason add_list_element(const FieldSyntax& field, std::string_view element, std::uint64_t& bits) {
    const auto [range, step_text] = split_once(element, '/');
    int step = 1;
    if (step_text) {
        const int widest_step = field.max - field.min + 1;
        if (step_text->empty()) return "missing step after '/'";
        if (!is_all_digits(*step_text))
            return "step " + quote_value(*step_text) + " is not a number";
        const auto number = parse_number(*step_text);
        if (!number || *number < 1 || *number > widest_step) {
            return "step must be between 1 and " + std::to_string(widest_step);
        }
        step = *number;
    }

    int first = field.min;
    int last = field.max;
    if (range != "*") {
        const auto [first_text, last_text] = split_once(range, '-');
        const auto first_value = parse_value(field, first_text);
        if (const auto* reason = std::get_if<Reason>(&first_value)) return *reason;
        first = std::get<int>(first_value);
        if (last_text) {
            const auto last_value = parse_value(field, *last_text);
            if (const auto* reason = std::get_if<Reason>(&last_value)) return *reason;
            last = std::get<int>(last_value);
            // `FRI-SUN` reads as Friday to Sunday, so SUN ends a range as 7.
            if (field.is_day_of_week && last == 0 && first > 0 && is_name(*last_text)) {
                last = sunday_as_seven;
            }
            if (last < first) return "ranges must not wrap";
        } else if (!step_text) {
            last = first;  // a single value; `a/n` keeps last = max
        }
    }
    for (int value = first; value <= last; value += step) bits |= std::uint64_t{1} << value;
    return {};
}

// One whole field: a comma-separated list of elements.
std::variant<ValueSet, ParseError> parse_field(const FieldSyntax& field, std::string_view text) {
    ValueSet values;
    std::string_view rest = text;
    while (true) {
        const auto [element, after_comma] = split_once(rest, ',');
        if (element.empty()) return bad_token(field, text, "empty list element");
        if (const Reason reason = add_list_element(field, element, values.bits); !reason.empty()) {
            return bad_token(field, element, reason);
        }
        if (!after_comma) return values;
        rest = *after_comma;
    }
}

ValueSet fold_sunday_as_seven(ValueSet days_of_week) {
    const std::uint64_t seven = std::uint64_t{1} << sunday_as_seven;
    if ((days_of_week.bits & seven) != 0) days_of_week.bits = (days_of_week.bits & ~seven) | 1U;
    return days_of_week;
}

constexpr std::size_t five_fields = 5;
constexpr std::size_t six_fields = 6;

std::variant<CronExpression, ParseError> parse_fields(std::string_view text) {
    // Collects up to six fields, counting any beyond for the error message.
    std::array<std::string_view, six_fields> fields;
    std::size_t count = 0;
    for (std::string_view rest = text; !rest.empty(); rest = trim(rest)) {
        std::size_t length = 0;
        while (length < rest.size() && !is_space(rest[length])) ++length;
        if (count < fields.size()) fields[count] = rest.substr(0, length);
        ++count;
        rest.remove_prefix(length);
    }
    if (count != five_fields && count != six_fields) {
        return ParseError{
            "expression: expected 5 fields (minute hour day-of-month month day-of-week) or 6 "
            "(seconds first), got " +
            std::to_string(count)};
    }

    CronExpression expression;
    expression.has_seconds = count == six_fields;
    const std::size_t minute_at = expression.has_seconds ? 1 : 0;
    struct Target {
        const FieldSyntax& syntax;
        std::string_view text;
        ValueSet& values;
    };
    const std::array<Target, 5> targets{{
        {minute_field, fields[minute_at], expression.minutes},
        {hour_field, fields[minute_at + 1], expression.hours},
        {day_of_month_field, fields[minute_at + 2], expression.days_of_month},
        {month_field, fields[minute_at + 3], expression.months},
        {day_of_week_field, fields[minute_at + 4], expression.days_of_week},
    }};
    expression.seconds.bits = 1;  // five fields: at second 0
    if (expression.has_seconds) {
        auto parsed = parse_field(second_field, fields[0]);
        if (auto* error = std::get_if<ParseError>(&parsed)) return std::move(*error);
        expression.seconds = std::get<ValueSet>(parsed);
    }
    for (const Target& target : targets) {
        auto parsed = parse_field(target.syntax, target.text);
        if (auto* error = std::get_if<ParseError>(&parsed)) return std::move(*error);
        target.values = std::get<ValueSet>(parsed);
    }
    expression.days_of_week = fold_sunday_as_seven(expression.days_of_week);
    expression.hour_starts_with_star = targets[1].text.front() == '*';
    expression.day_of_month_restricted = targets[2].text.front() != '*';
    expression.day_of_week_restricted = targets[4].text.front() != '*';
    return expression;
}

std::variant<CronExpression, ParseError> parse_macro(std::string_view text) {
    const auto name_end = std::min(text.size(), text.find_first_of(" \t\n\r\f\v"));
    const std::string_view name = text.substr(0, name_end);
    if (equals_ignoring_case(name, "@reboot")) {
        return ParseError{"expression: " + quote_value(name) + " is not supported (jobs run at times, not at service start)"};
    }
    for (const Macro& macro : macros) {
        if (!equals_ignoring_case(name, macro.name)) continue;
        if (name_end != text.size()) {
            return ParseError{"expression: macro " + quote_value(name) + " must be the whole expression"};
        }
        return parse_fields(macro.expansion);
    }
    return ParseError{"expression: unknown macro " + quote_value(name) + " (expected @yearly, @annually, @monthly, @weekly, @daily, @midnight or "
                      "@hourly)"};
}

}  // namespace

std::variant<CronExpression, ParseError> parse(std::string_view text) {
    if (text.size() > max_expression_length) {
        return ParseError{"expression: too long (" + std::to_string(text.size()) +
                          " characters, at most " + std::to_string(max_expression_length) + ")"};
    }
    const std::string_view trimmed = trim(text);
    if (trimmed.empty()) return ParseError{"expression: empty"};
    if (trimmed.front() == '@') return parse_macro(trimmed);
    return parse_fields(trimmed);
}

}  // namespace hourglass::cron
