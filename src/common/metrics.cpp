#include "common/metrics.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>

namespace hourglass::metrics {

namespace {

bool is_metric_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':';
    });
}

bool is_label_name(std::string_view name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) ||
        name.starts_with("__")) {
        return false;
    }
    return std::all_of(name.begin(), name.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

// HELP text escapes backslash and newline; label values also escape the double quote.
void append_escaped(std::string& out, std::string_view text, bool escape_quote) {
    for (const char c : text) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else if (c == '"' && escape_quote)
            out += "\\\"";
        else
            out += c;
    }
}

std::string format_number(double value) {
    if (std::isnan(value)) return "NaN";
    if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
    char text[32];
    const auto [end, error] = std::to_chars(text, text + sizeof text, value);
    return error == std::errc{} ? std::string(text, end) : "NaN";
}

// name{label="value",...} value
void append_sample(std::string& out, std::string_view name, const Labels& labels,
                   const std::pair<std::string, std::string>* extra_label, std::string_view value) {
    out += name;
    if (!labels.empty() || extra_label) {
        out += '{';
        bool first = true;
        auto append_label = [&](const std::pair<std::string, std::string>& label) {
            if (!first) out += ',';
            first = false;
            out += label.first;
            out += "=\"";
            append_escaped(out, label.second, /*escape_quote=*/true);
            out += '"';
        };
        for (const auto& label : labels) append_label(label);
        if (extra_label) append_label(*extra_label);
        out += '}';
    }
    out += ' ';
    out += value;
    out += '\n';
}

}  // namespace

// --- Histogram --------------------------------------------------------------------------------

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)),
      bucket_counts_(new std::atomic<std::uint64_t>[upper_bounds_.size() + 1]) {
    for (std::size_t i = 0; i < upper_bounds_.size(); ++i) {
        if (!std::isfinite(upper_bounds_[i]) ||
            (i > 0 && upper_bounds_[i] <= upper_bounds_[i - 1])) {
            throw std::invalid_argument("histogram bounds must be finite and strictly increasing");
        }
    }
    for (std::size_t i = 0; i <= upper_bounds_.size(); ++i) bucket_counts_[i].store(0);
}

void Histogram::observe(double value) noexcept {
    if (std::isnan(value)) return;
    // Buckets are "less than or equal": the first bound not below the value.
    const auto bucket =
        std::lower_bound(upper_bounds_.begin(), upper_bounds_.end(), value) - upper_bounds_.begin();
    bucket_counts_[bucket].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::snapshot() const {
    Snapshot snapshot;
    snapshot.upper_bounds = upper_bounds_;
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i <= upper_bounds_.size(); ++i) {
        cumulative += bucket_counts_[i].load(std::memory_order_relaxed);
        snapshot.cumulative_counts.push_back(cumulative);
    }
    snapshot.sum = sum_.load(std::memory_order_relaxed);
    return snapshot;
}

// --- ScopedGaugeIncrement ---------------------------------------------------------------------

ScopedGaugeIncrement::ScopedGaugeIncrement(Gauge* gauge) noexcept : gauge_(gauge) {
    if (gauge_) gauge_->add(1);
}

ScopedGaugeIncrement::~ScopedGaugeIncrement() {
    if (gauge_) gauge_->add(-1);
}

ScopedGaugeIncrement::ScopedGaugeIncrement(ScopedGaugeIncrement&& other) noexcept
    : gauge_(std::exchange(other.gauge_, nullptr)) {}

ScopedGaugeIncrement& ScopedGaugeIncrement::operator=(ScopedGaugeIncrement&& other) noexcept {
    if (this != &other) {
        if (gauge_) gauge_->add(-1);
        gauge_ = std::exchange(other.gauge_, nullptr);
    }
    return *this;
}

// --- Registry ---------------------------------------------------------------------------------

void Registry::add_series(const std::string& name, const std::string& help, Labels labels,
                          Metric metric) {
    if (!is_metric_name(name)) throw std::invalid_argument("invalid metric name '" + name + "'");
    const bool histogram = std::holds_alternative<const Histogram*>(metric);
    for (std::size_t i = 0; i < labels.size(); ++i) {
        const auto& label = labels[i].first;
        if (!is_label_name(label) || (histogram && label == "le")) {
            throw std::invalid_argument("invalid label name '" + label + "' on " + name);
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (labels[j].first == label) {
                throw std::invalid_argument("label '" + label + "' repeated on " + name);
            }
        }
    }
    auto family = std::find_if(families_.begin(), families_.end(),
                               [&](const Family& f) { return f.name == name; });
    if (family == families_.end()) {
        families_.push_back(Family{name, help, metric.index(), {}});
        family = std::prev(families_.end());
    } else if (family->type != metric.index() || family->help != help) {
        throw std::invalid_argument("metric " + name + " registered with another type or help");
    }
    for (const auto& series : family->series) {
        if (series.labels == labels) {
            throw std::invalid_argument("metric " + name +
                                        " registered twice with the same labels");
        }
    }
    family->series.push_back(Series{std::move(labels), metric});
}

// Registration adds the metric first (so the reference is stable), then takes it back out if
// the series is refused: nothing half-registered is ever rendered.
template <typename T, typename... Arguments>
T& Registry::add(std::deque<T>& storage, const std::string& name, const std::string& help,
                 Labels labels, Arguments&&... arguments) {
    std::lock_guard lock(mutex_);
    auto& metric = storage.emplace_back(std::forward<Arguments>(arguments)...);
    try {
        add_series(name, help, std::move(labels), &metric);
    } catch (...) {
        storage.pop_back();
        throw;
    }
    return metric;
}

Counter& Registry::add_counter(const std::string& name, const std::string& help, Labels labels) {
    return add(counters_, name, help, std::move(labels));
}

Gauge& Registry::add_gauge(const std::string& name, const std::string& help, Labels labels) {
    return add(gauges_, name, help, std::move(labels));
}

Histogram& Registry::add_histogram(const std::string& name, const std::string& help,
                                   std::vector<double> upper_bounds, Labels labels) {
    return add(histograms_, name, help, std::move(labels), std::move(upper_bounds));
}

std::string Registry::render_prometheus() const {
    static constexpr std::string_view kTypeNames[] = {"counter", "gauge", "histogram"};
    std::lock_guard lock(mutex_);
    std::string out;
    for (const auto& family : families_) {
        out += "# HELP " + family.name + " ";
        append_escaped(out, family.help, /*escape_quote=*/false);
        out += "\n# TYPE " + family.name + " ";
        out += kTypeNames[family.type];
        out += '\n';
        for (const auto& series : family.series) {
            const auto& labels = series.labels;
            if (const auto* counter = std::get_if<const Counter*>(&series.metric)) {
                append_sample(out, family.name, labels, nullptr,
                              std::to_string((*counter)->value()));
            } else if (const auto* gauge = std::get_if<const Gauge*>(&series.metric)) {
                append_sample(out, family.name, labels, nullptr, format_number((*gauge)->value()));
            } else {
                const auto snapshot = std::get<const Histogram*>(series.metric)->snapshot();
                for (std::size_t i = 0; i < snapshot.cumulative_counts.size(); ++i) {
                    const std::pair<std::string, std::string> le{
                        "le", i < snapshot.upper_bounds.size()
                                  ? format_number(snapshot.upper_bounds[i])
                                  : "+Inf"};
                    append_sample(out, family.name + "_bucket", labels, &le,
                                  std::to_string(snapshot.cumulative_counts[i]));
                }
                append_sample(out, family.name + "_sum", labels, nullptr,
                              format_number(snapshot.sum));
                // The +Inf bucket and the count come from one snapshot, so they always agree.
                append_sample(out, family.name + "_count", labels, nullptr,
                              std::to_string(snapshot.cumulative_counts.back()));
            }
        }
    }
    return out;
}

// --- hourglass metrics ------------------------------------------------------------------------

ServiceMetrics::ServiceMetrics() {
    registry_
        .add_gauge("hourglass_build_info", "Always 1; the label is the hourglass version.",
                   {{"version", HOURGLASS_VERSION}})
        .set(1);
}

}  // namespace hourglass::metrics
