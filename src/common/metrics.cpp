#include "hourglass/metrics.hpp"

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

std::string_view to_string(Component component) noexcept {
    switch (component) {
        case Component::ingest:
            return "ingest";
        case Component::loader:
            return "loader";
        case Component::audit:
            return "audit";
        case Component::forward:
            return "forward";
    }
    return "unknown";
}

std::string_view to_string(Peer peer) noexcept {
    return peer == Peer::rabbitmq ? "rabbitmq" : "postgresql";
}

const std::vector<std::string_view>& rejection_reasons() {
    // The fields command errors name (src/ingest/command_parser.cpp), then the few errors that
    // name no single field, then the catch-all.
    static const std::vector<std::string_view> reasons = {
        "x-delay",        "x-schedule-at",
        "x-cron",         "x-cron-tz",
        "x-cron-until",   "x-cron-limit",
        "x-replace",      "x-cancel",
        "x-reply-to",     "x-hourglass-exchange",
        "headers",        "message_id",
        "body",           "routing_key",
        "no_time_header", "conflicting_time_headers",
        "unreadable",     "other"};
    return reasons;
}

std::string_view rejection_reason(std::string_view error) noexcept {
    // Errors read "<field>: <what is wrong>".
    const auto field = error.substr(0, error.find(':'));
    if (field == "routing key") return "routing_key";
    if (field == "no time header") return "no_time_header";
    if (field == "command could not be read") return "unreadable";
    if (field.ends_with(" are set together")) return "conflicting_time_headers";
    for (const auto reason : rejection_reasons()) {
        if (field == reason) return reason;
    }
    return "other";
}

namespace {

constexpr std::array kStatuses = {CommandStatus::scheduled, CommandStatus::duplicate,
                                  CommandStatus::replaced,  CommandStatus::cancelled,
                                  CommandStatus::too_late,  CommandStatus::not_found,
                                  CommandStatus::rejected};

template <std::size_t N>
std::array<Counter*, N> add_status_counters(Registry& registry) {
    static_assert(N == kStatuses.size());
    std::array<Counter*, N> counters{};
    for (const auto status : kStatuses) {
        counters[static_cast<std::size_t>(status)] = &registry.add_counter(
            "hourglass_commands_total",
            "Commands acked, by outcome: the receipt status (scheduled = accepted as a new job).",
            {{"status", std::string(to_string(status))}});
    }
    return counters;
}

std::vector<std::pair<std::string_view, Counter*>> add_reason_counters(Registry& registry) {
    std::vector<std::pair<std::string_view, Counter*>> counters;
    for (const auto reason : rejection_reasons()) {
        counters.emplace_back(reason,
                              &registry.add_counter("hourglass_commands_rejected_total",
                                                    "Rejected commands, by the field at fault.",
                                                    {{"reason", std::string(reason)}}));
    }
    return counters;
}

template <typename Table>
Table add_connection_gauges(Registry& registry) {
    Table gauges{};
    for (const auto component : kComponents) {
        for (const auto peer : kPeers) {
            if (!connects(component, peer)) continue;
            gauges[static_cast<std::size_t>(component)][static_cast<std::size_t>(peer)] =
                &registry.add_gauge("hourglass_connected",
                                    "Open connections of each component to RabbitMQ and "
                                    "PostgreSQL: 1 connected, 0 not.",
                                    {{"component", std::string(to_string(component))},
                                     {"peer", std::string(to_string(peer))}});
        }
    }
    return gauges;
}

// Seconds, Prometheus's base unit; the buckets span 1 ms to 1 s.
const std::vector<double> kLatenessBuckets{0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1};

Gauge& add_jobs_gauge(Registry& registry, const std::string& state) {
    return registry.add_gauge("hourglass_jobs",
                              "Jobs per state, from the stats view (refreshed every few seconds).",
                              {{"state", state}});
}

}  // namespace

ServiceMetrics::ServiceMetrics()
    : commands_received_(registry_.add_counter(
          "hourglass_commands_received_total",
          "Commands taken from the input queue (<prefix>.in), redeliveries included.")),
      commands_by_status_(add_status_counters<kStatusCount>(registry_)),
      commands_rejected_by_reason_(add_reason_counters(registry_)),
      runs_enqueued_(registry_.add_counter(
          "hourglass_runs_enqueued_total",
          "Runs handed over to the delay queues (confirmed by the broker and recorded).")),
      runs_resent_(registry_.add_counter(
          "hourglass_runs_resent_total",
          "Runs published again because their release was not observed (see --resend-after).")),
      releases_observed_(registry_.add_counter("hourglass_releases_observed_total",
                                               "Releases observed by the audit consumer.")),
      releases_forwarded_(registry_.add_counter(
          "hourglass_releases_forwarded_total",
          "Released runs with a target exchange (x-hourglass-exchange) published to it and "
          "confirmed.")),
      releases_forwarded_unroutable_(registry_.add_counter(
          "hourglass_releases_forwarded_unroutable_total",
          "Released runs with a target exchange that could not route them or no longer existed, "
          "published to <prefix>.unroutable instead.")),
      release_lateness_seconds_(registry_.add_histogram(
          "hourglass_release_lateness_seconds",
          "Observed release time minus the due time (or the time the command was accepted, if "
          "later).",
          kLatenessBuckets)),
      handover_lateness_seconds_(registry_.add_histogram(
          "hourglass_handover_lateness_seconds",
          "Publish time of a run into its delay queue minus the instant that releases it on time "
          "(due minus the queue's TTL); the release is late by at least this.",
          kLatenessBuckets)),
      jobs_pending_(add_jobs_gauge(registry_, "pending")),
      jobs_enqueued_(add_jobs_gauge(registry_, "enqueued")),
      jobs_done_(add_jobs_gauge(registry_, "done")),
      jobs_cancelled_(add_jobs_gauge(registry_, "cancelled")),
      oldest_pending_lag_seconds_(registry_.add_gauge(
          "hourglass_oldest_pending_lag_seconds",
          "How overdue the oldest overdue pending job is (0 if none), from the stats view.")),
      unconfirmed_publishes_(registry_.add_gauge(
          "hourglass_unconfirmed_publishes",
          "Runs published to the delay queues and not yet confirmed by the broker.")),
      migrations_current_(registry_.add_gauge(
          "hourglass_migrations_current",
          "1 if every migration this binary knows is applied to the schema, else 0.")),
      topology_declared_(registry_.add_gauge("hourglass_topology_declared",
                                             "1 once the broker topology is declared, else 0.")),
      open_connections_(add_connection_gauges<decltype(open_connections_)>(registry_)) {
    registry_
        .add_gauge("hourglass_build_info", "Always 1; the label is the hourglass version.",
                   {{"version", HOURGLASS_VERSION}})
        .set(1);
}

void ServiceMetrics::count_outcomes(const std::vector<CommandOutcome>& outcomes) noexcept {
    for (const auto& outcome : outcomes) {
        commands_by_status_[static_cast<std::size_t>(outcome.status)]->increment();
        if (outcome.status != CommandStatus::rejected) continue;
        const auto reason = rejection_reason(outcome.error);
        for (const auto& [code, counter] : commands_rejected_by_reason_) {
            if (code == reason) counter->increment();
        }
    }
}

void ServiceMetrics::count_releases(std::size_t observed,
                                    const std::vector<double>& lateness_ms) noexcept {
    releases_observed_.increment(observed);
    for (const double ms : lateness_ms) release_lateness_seconds_.observe(ms / 1000.0);
}

void ServiceMetrics::observe_handover_lateness(std::chrono::microseconds lateness) noexcept {
    handover_lateness_seconds_.observe(std::chrono::duration<double>(lateness).count());
}

void ServiceMetrics::set_job_counts(std::int64_t pending, std::int64_t enqueued, std::int64_t done,
                                    std::int64_t cancelled) noexcept {
    jobs_pending_.set(static_cast<double>(pending));
    jobs_enqueued_.set(static_cast<double>(enqueued));
    jobs_done_.set(static_cast<double>(done));
    jobs_cancelled_.set(static_cast<double>(cancelled));
}

void ServiceMetrics::set_oldest_pending_lag_ms(std::int64_t lag_ms) noexcept {
    oldest_pending_lag_seconds_.set(static_cast<double>(lag_ms) / 1000.0);
}

Gauge* ServiceMetrics::open_connections(Component component, Peer peer) noexcept {
    return open_connections_[static_cast<std::size_t>(component)][static_cast<std::size_t>(peer)];
}

bool ServiceMetrics::connected(Component component, Peer peer) const noexcept {
    const auto* gauge =
        open_connections_[static_cast<std::size_t>(component)][static_cast<std::size_t>(peer)];
    return gauge != nullptr && gauge->value() >= 1;
}

}  // namespace hourglass::metrics
