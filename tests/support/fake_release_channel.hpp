// The broker as the loader's publisher sees it, for unit tests: FakeBroker decides how each
// publish is answered (ack, nack, a lost connection), records what was published and when,
// and models the forward ladder's exchanges; FakeChannel is the publisher's ReleaseChannel
// over it, confirming publishes in order when asked for its next event.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "amqp/connection.hpp"
#include "delay/topology.hpp"
#include "hourglass/message.hpp"
#include "loader/release_channel.hpp"

namespace hourglass::testing {

using Micros = std::chrono::sys_time<std::chrono::microseconds>;

// The broker as the loader's channel sees it: each publish is acked, nacked or fails.
struct FakeBroker {
    enum class Answer { ack, nack, fail };
    struct Published {
        Message message;
        Micros at;
        bool held = false;  // published while the channel held its sends
    };
    std::mutex mutex;
    std::deque<Answer> next_answers;  // then ack
    std::vector<Published> published;
    int channels_opened = 0;
    bool hold_confirms = false;  // true: publishes are confirmed only once it is false again
    int empty_polls_without_wait = 0;  // next_event(0) calls that found nothing
    bool sends_held = false;
    int waits_while_held = 0;  // next_event calls while sends were held: publishes stuck unsent
    // The forward ladder: a publish into it fails while it does not exist, as the broker closes
    // the channel of a publish to an exchange that does not exist (404).
    bool forward_ladder_exists = true;
    int forward_ladder_declarations = 0;  // declare_forward_ladder calls, failed ones included
    int forward_ladder_failures = 0;      // declarations left to fail
    bool forward_ladder_stalls = false;   // declarations wait until it is false again
    std::condition_variable forward_ladder_unstalled;
    void unstall_forward_ladder() {
        {
            std::lock_guard lock(mutex);
            forward_ladder_stalls = false;
        }
        forward_ladder_unstalled.notify_all();
    }
    int publishes_to_missing_exchanges = 0;
    // Runs before each publish, outside the broker's lock (a publish held up by flow control).
    std::function<void()> before_publish;

    void answer_next(std::initializer_list<Answer> answers) {
        std::lock_guard lock(mutex);
        next_answers.insert(next_answers.end(), answers);
    }
    std::vector<Published> publishes() {
        std::lock_guard lock(mutex);
        return published;
    }
};

class FakeChannel final : public loader::ReleaseChannel {
public:
    FakeChannel(FakeBroker& broker, std::function<Micros()> now) : broker_(broker), now_(std::move(now)) {}
    std::uint64_t publish(const Message& message) override {
        if (broker_.before_publish) broker_.before_publish();
        std::lock_guard lock(broker_.mutex);
        auto answer = FakeBroker::Answer::ack;
        if (!broker_.next_answers.empty()) {
            answer = broker_.next_answers.front();
            broker_.next_answers.pop_front();
        }
        if (answer == FakeBroker::Answer::fail) throw std::runtime_error("fake broker: connection lost");
        if (message.exchange.starts_with(delay::TopologyNames().forward + ".") &&
            !broker_.forward_ladder_exists) {
            ++broker_.publishes_to_missing_exchanges;
            throw std::runtime_error("fake broker: 404 NOT_FOUND - no exchange " +
                                     message.exchange);
        }
        broker_.published.push_back({message, now_(), broker_.sends_held});
        confirms_.push_back(amqp::Confirm{1, ++sequence_, false, answer == FakeBroker::Answer::ack});
        return sequence_;
    }
    std::optional<amqp::Event> next_event(std::chrono::microseconds timeout) override {
        {
            std::lock_guard lock(broker_.mutex);
            if (broker_.sends_held) ++broker_.waits_while_held;
            if (!confirms_.empty() && !broker_.hold_confirms) {
                const auto confirm = confirms_.front();
                confirms_.pop_front();
                return amqp::Event{confirm};
            }
            if (timeout.count() == 0) ++broker_.empty_polls_without_wait;
        }
        std::this_thread::sleep_for(std::min(timeout, std::chrono::microseconds{1000}));
        return std::nullopt;
    }
    std::size_t frame_max() const override { return 131072; }
    void hold_sends(bool hold) noexcept override {
        std::lock_guard lock(broker_.mutex);
        broker_.sends_held = hold;
    }

private:
    FakeBroker& broker_;
    std::function<Micros()> now_;
    std::deque<amqp::Confirm> confirms_;
    std::uint64_t sequence_ = 0;
};

}  // namespace hourglass::testing
