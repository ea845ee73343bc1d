// A strict parser of the Prometheus text exposition format 0.0.4, for tests of /metrics.
//
// Stricter than Prometheus itself where hourglass has no reason to differ: every sample
// belongs to a family announced by # TYPE (and at most one # HELP) before its first sample,
// a family's lines are contiguous, no series repeats, counters are never negative, and each
// histogram has increasing `le` buckets with non-decreasing counts, a +Inf bucket equal to
// _count, and a _sum. Anything else (a stray comment, a blank line, an unknown escape, a
// trailing comma, a missing final newline) is an error naming the line.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace hourglass::testing::prometheus {

using LabelSet = std::map<std::string, std::string>;

struct Sample {
    std::string name;
    LabelSet labels;
    double value = 0;
};

struct Family {
    std::string name;
    std::string help;
    std::string type;  // counter, gauge, histogram, summary, untyped
    std::vector<Sample> samples;
};

struct Exposition {
    std::vector<Family> families;

    const Family* family(const std::string& name) const {
        for (const auto& f : families) {
            if (f.name == name) return &f;
        }
        return nullptr;
    }
    std::optional<double> find(const std::string& sample_name, const LabelSet& labels = {}) const {
        for (const auto& f : families) {
            for (const auto& s : f.samples) {
                if (s.name == sample_name && s.labels == labels) return s.value;
            }
        }
        return std::nullopt;
    }
    // The value of one series; throws if it is absent.
    double value(const std::string& sample_name, const LabelSet& labels = {}) const {
        if (auto found = find(sample_name, labels)) return *found;
        std::string text = sample_name + "{";
        for (const auto& [k, v] : labels) text += k + "=\"" + v + "\",";
        throw std::runtime_error("no series " + text + "}");
    }
};

namespace detail {

inline bool is_metric_name(std::string_view name) {
    static const std::regex pattern("[a-zA-Z_:][a-zA-Z0-9_:]*");
    return std::regex_match(name.begin(), name.end(), pattern);
}

inline bool is_label_name(std::string_view name) {
    static const std::regex pattern("[a-zA-Z_][a-zA-Z0-9_]*");
    return std::regex_match(name.begin(), name.end(), pattern) && !name.starts_with("__");
}

inline double parse_value(std::string_view text) {
    if (text == "NaN") return std::nan("");
    if (text == "+Inf") return INFINITY;
    if (text == "-Inf") return -INFINITY;
    static const std::regex number(R"([-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?)");
    if (!std::regex_match(text.begin(), text.end(), number)) {
        throw std::runtime_error("'" + std::string(text) + "' is not a sample value");
    }
    return std::stod(std::string(text));
}

// Unescapes \\, \n and (in label values) \"; anything else after a backslash is an error.
inline std::string unescape(std::string_view text, bool allow_quote) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\\') {
            out += text[i];
            continue;
        }
        if (i + 1 == text.size()) throw std::runtime_error("dangling backslash");
        const char next = text[++i];
        if (next == '\\')
            out += '\\';
        else if (next == 'n')
            out += '\n';
        else if (next == '"' && allow_quote)
            out += '"';
        else
            throw std::runtime_error(std::string("unknown escape \\") + next);
    }
    return out;
}

// name{label="value",...} value [timestamp]
inline Sample parse_sample(std::string_view line) {
    Sample sample;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    sample.name = std::string(line.substr(0, i));
    if (!is_metric_name(sample.name))
        throw std::runtime_error("invalid metric name '" + sample.name + "'");
    if (i < line.size() && line[i] == '{') {
        ++i;
        while (true) {
            const auto equals = line.find('=', i);
            if (equals == std::string_view::npos) throw std::runtime_error("label without '='");
            const auto name = std::string(line.substr(i, equals - i));
            if (!is_label_name(name)) throw std::runtime_error("invalid label name '" + name + "'");
            if (equals + 1 >= line.size() || line[equals + 1] != '"') {
                throw std::runtime_error("label value of " + name + " is not quoted");
            }
            std::size_t end = equals + 2;
            while (end < line.size() && line[end] != '"') end += line[end] == '\\' ? 2 : 1;
            if (end >= line.size()) throw std::runtime_error("unterminated label value");
            const auto value = unescape(line.substr(equals + 2, end - equals - 2), true);
            if (!sample.labels.emplace(name, value).second) {
                throw std::runtime_error("label " + name + " repeated");
            }
            i = end + 1;
            if (i < line.size() && line[i] == ',') {
                ++i;
                if (i < line.size() && line[i] == '}') throw std::runtime_error("trailing comma");
                continue;
            }
            if (i < line.size() && line[i] == '}') {
                ++i;
                break;
            }
            throw std::runtime_error("expected ',' or '}' after a label");
        }
    }
    if (i >= line.size() || line[i] != ' ')
        throw std::runtime_error("expected one space before the value");
    const auto rest = line.substr(i + 1);
    const auto space = rest.find(' ');
    sample.value = parse_value(rest.substr(0, space));
    if (space != std::string_view::npos) {
        static const std::regex timestamp(R"(-?\d+)");
        const auto ts = rest.substr(space + 1);
        if (!std::regex_match(ts.begin(), ts.end(), timestamp)) {
            throw std::runtime_error("'" + std::string(ts) + "' is not a timestamp");
        }
    }
    return sample;
}

inline bool sample_belongs_to(const Family& family, const std::string& sample_name) {
    if (family.type == "histogram") {
        return sample_name == family.name + "_bucket" || sample_name == family.name + "_sum" ||
               sample_name == family.name + "_count";
    }
    if (family.type == "summary") {
        return sample_name == family.name || sample_name == family.name + "_sum" ||
               sample_name == family.name + "_count";
    }
    return sample_name == family.name;
}

inline void check_histogram(const Family& family) {
    struct Series {
        std::vector<std::pair<double, double>> buckets;  // le, count
        std::optional<double> sum, count;
    };
    std::map<LabelSet, Series> series;
    for (const auto& sample : family.samples) {
        auto labels = sample.labels;
        if (sample.name == family.name + "_bucket") {
            const auto le = labels.find("le");
            if (le == labels.end()) throw std::runtime_error(family.name + ": bucket without le");
            const double bound = parse_value(le->second);
            labels.erase(le);
            series[labels].buckets.emplace_back(bound, sample.value);
        } else if (labels.count("le")) {
            throw std::runtime_error(family.name + ": le on a non-bucket sample");
        } else if (sample.name == family.name + "_sum") {
            series[labels].sum = sample.value;
        } else {
            series[labels].count = sample.value;
        }
    }
    for (const auto& [labels, s] : series) {
        if (s.buckets.empty() || !std::isinf(s.buckets.back().first)) {
            throw std::runtime_error(family.name + ": the last bucket must be le=\"+Inf\"");
        }
        for (std::size_t i = 1; i < s.buckets.size(); ++i) {
            if (!(s.buckets[i].first > s.buckets[i - 1].first)) {
                throw std::runtime_error(family.name + ": le not increasing");
            }
            if (s.buckets[i].second < s.buckets[i - 1].second) {
                throw std::runtime_error(family.name + ": bucket counts decrease");
            }
        }
        if (!s.sum || !s.count) throw std::runtime_error(family.name + ": _sum or _count missing");
        if (*s.count != s.buckets.back().second) {
            throw std::runtime_error(family.name + ": _count differs from the +Inf bucket");
        }
    }
}

}  // namespace detail

inline Exposition parse(std::string_view text) {
    static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                 "untyped"};
    if (!text.empty() && text.back() != '\n')
        throw std::runtime_error("text does not end with a newline");
    if (text.find('\r') != std::string_view::npos)
        throw std::runtime_error("carriage return in text");
    Exposition exposition;
    std::set<std::string> closed;  // families whose lines are over
    std::set<std::pair<std::string, LabelSet>> seen;
    Family* current = nullptr;  // the last family; families is only appended to after it
    const auto family_named = [&](const std::string& name) -> Family& {
        if (current && current->name == name) return *current;
        if (current) closed.insert(current->name);
        if (closed.count(name) || exposition.family(name)) {
            throw std::runtime_error("family " + name + " is not contiguous");
        }
        exposition.families.push_back(Family{name, {}, {}, {}});
        current = &exposition.families.back();  // re-taken after every push_back
        return *current;
    };
    std::size_t number = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        const auto end = text.find('\n', start);
        const auto line = text.substr(start, end - start);
        start = end + 1;
        ++number;
        try {
            if (line.empty()) throw std::runtime_error("blank line");
            if (line.starts_with("# HELP ") || line.starts_with("# TYPE ")) {
                const auto rest = line.substr(7);
                const auto space = rest.find(' ');
                if (space == std::string_view::npos)
                    throw std::runtime_error("comment without a value");
                const auto name = std::string(rest.substr(0, space));
                if (!detail::is_metric_name(name))
                    throw std::runtime_error("invalid metric name '" + name + "'");
                auto& family = family_named(name);
                const auto value = rest.substr(space + 1);
                if (line[2] == 'H') {
                    if (!family.help.empty()) throw std::runtime_error("second HELP for " + name);
                    family.help = detail::unescape(value, false);
                    if (family.help.empty()) throw std::runtime_error("empty HELP for " + name);
                } else {
                    if (!family.type.empty()) throw std::runtime_error("second TYPE for " + name);
                    if (!family.samples.empty())
                        throw std::runtime_error("TYPE after samples of " + name);
                    if (!kTypes.count(std::string(value)))
                        throw std::runtime_error("unknown type " + std::string(value));
                    family.type = std::string(value);
                }
                continue;
            }
            if (line.front() == '#') throw std::runtime_error("unexpected comment");
            auto sample = detail::parse_sample(line);
            if (!current || current->type.empty() ||
                !detail::sample_belongs_to(*current, sample.name)) {
                throw std::runtime_error("sample " + sample.name + " outside its # TYPE family");
            }
            if (!seen.emplace(sample.name, sample.labels).second) {
                throw std::runtime_error("series " + sample.name + " repeated");
            }
            if (current->type == "counter" && !(sample.value >= 0)) {
                throw std::runtime_error("counter " + sample.name + " is negative or NaN");
            }
            current->samples.push_back(std::move(sample));
        } catch (const std::runtime_error& error) {
            throw std::runtime_error("line " + std::to_string(number) + " (" + std::string(line) +
                                     "): " + error.what());
        }
    }
    for (const auto& family : exposition.families) {
        if (family.type.empty())
            throw std::runtime_error("family " + family.name + " has no # TYPE");
        if (family.type == "histogram") detail::check_histogram(family);
    }
    return exposition;
}

// `promtool check metrics` (syntax and Prometheus's naming lint) on the text, when promtool is
// installed ($HOURGLASS_PROMTOOL or the PATH; Debian's `prometheus` package has it). Returns its
// complaint, or nothing when it accepts the text or is not installed.
inline std::optional<std::string> promtool_complaint(const std::string& text) {
    std::string tool;
    if (const char* path = std::getenv("HOURGLASS_PROMTOOL"); path && *path) {
        tool = path;
    } else if (std::system("command -v promtool >/dev/null 2>&1") == 0) {
        tool = "promtool";
    } else {
        return std::nullopt;
    }
    char path[] = "/tmp/hourglass-metrics-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return "cannot create a temporary file";
    close(fd);
    std::ofstream(path) << text;
    const std::string report_path = std::string(path) + ".out";
    const auto command = tool + " check metrics < " + path + " > " + report_path + " 2>&1";
    const int status = std::system(command.c_str());
    std::ifstream in(report_path);
    const std::string report((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
    std::remove(path);
    std::remove(report_path.c_str());
    if (status == 0) return std::nullopt;
    return "promtool check metrics: " + report;
}

}  // namespace hourglass::testing::prometheus
