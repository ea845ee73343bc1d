#include "common/thread_name.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>

namespace hourglass {
namespace {

TEST(ThreadName, names_the_calling_thread_and_keeps_fifteen_bytes) {
    std::string name;
    std::jthread([&] {
        name_this_thread("hg-a-name-longer-than-fifteen-bytes");
        std::ifstream comm("/proc/thread-self/comm");
        std::getline(comm, name);
    }).join();
    EXPECT_EQ(name, "hg-a-name-longe");
}

}  // namespace
}  // namespace hourglass
