// Names the calling thread, so that `top -H`, `perf` and /proc/<pid>/task/*/comm tell the
// pipeline's threads apart (Linux keeps 15 bytes of a name).
#pragma once

#include <pthread.h>

#include <string>
#include <string_view>

namespace hourglass {

inline void name_this_thread(std::string_view name) {
    const std::string kept(name.substr(0, 15));
    pthread_setname_np(pthread_self(), kept.c_str());
}

}  // namespace hourglass
