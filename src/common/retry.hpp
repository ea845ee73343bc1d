// Runs a component's connect-and-work loop forever, reconnecting with exponential backoff
// (reference §9: survives restarts of RabbitMQ and PostgreSQL). The body returns normally only when
// the component is asked to stop; an exception means a lost connection: log, wait, start again.
#pragma once

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

namespace hourglass {

struct Backoff {
    std::chrono::milliseconds initial{100};
    std::chrono::milliseconds max{10000};
};

// Sleeps up to `duration`, waking early when a stop is requested. Returns false on stop.
bool sleep_unless_stopped(std::stop_token stop, std::chrono::milliseconds duration);

void run_with_reconnect(const std::string& component, std::stop_token stop,
                        const std::function<void()>& body, Backoff backoff = {});

}  // namespace hourglass
