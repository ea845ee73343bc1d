#include "common/log_budget.hpp"

#include <spdlog/fmt/fmt.h>

namespace hourglass {

LogBudget::Grant LogBudget::take(Clock::time_point now) {
    if (!started_ || now - window_start_ >= window_) {
        started_ = true;
        window_start_ = now;
        logged_ = 0;
    }
    if (logged_ >= lines_) {
        ++left_out_;
        return {};
    }
    ++logged_;
    const Grant grant{true, left_out_};
    left_out_ = 0;
    return grant;
}

std::string left_out_note(std::size_t left_out, std::string_view what) {
    if (left_out == 0) return {};
    return fmt::format(" ({} earlier {} not logged)", left_out, what);
}

}  // namespace hourglass
