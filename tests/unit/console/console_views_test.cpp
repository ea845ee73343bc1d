#include "console/console_views.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "console/console_assets.hpp"

namespace hourglass::console {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(LatenessView, CountsEachReleaseInTheFirstBucketThatHoldsIt) {
    const auto view = lateness_view({0.5, 1.0, 1.5, 7.0, 7.0, 99.0, 101.0, 6000.0});
    EXPECT_EQ(view["releases"], 8);
    std::vector<int> counts;
    for (const auto& bucket : view["buckets"]) counts.push_back(bucket["releases"]);
    //                                   1  2  5 10 20 50 100 200 500 1000 5000 more
    EXPECT_EQ(counts, (std::vector<int>{2, 1, 0, 2, 0, 0, 1, 1, 0, 0, 0, 1}));
    EXPECT_TRUE(view["buckets"].back()["le_ms"].is_null());
    EXPECT_EQ(view["max_ms"], 6000.0);
}

TEST(LatenessView, PercentilesAreNearestRankOfTheSample) {
    std::vector<double> values(1000);
    std::iota(values.begin(), values.end(), 1.0);  // 1 .. 1000, shuffled order does not matter
    std::reverse(values.begin(), values.end());
    const auto view = lateness_view(values);
    EXPECT_EQ(view["p50_ms"], 500.0);
    EXPECT_EQ(view["p99_ms"], 990.0);
    EXPECT_EQ(view["max_ms"], 1000.0);
}

TEST(LatenessView, NoReleaseGivesNullFiguresAndEmptyBuckets) {
    const auto view = lateness_view({});
    EXPECT_EQ(view["releases"], 0);
    EXPECT_TRUE(view["p50_ms"].is_null());
    EXPECT_TRUE(view["p99_ms"].is_null());
    EXPECT_TRUE(view["max_ms"].is_null());
    for (const auto& bucket : view["buckets"]) EXPECT_EQ(bucket["releases"], 0);
}

TEST(UpcomingView, FillsEverySlotAndPlacesCountsByTheirSlot) {
    const auto from = from_epoch_ms(1'700'000'040'000);
    const auto view = upcoming_view(from, std::chrono::minutes{1}, 60, {{0, 3}, {59, 2}}, 5, 100);
    ASSERT_EQ(view["slots"].size(), 60u);
    EXPECT_EQ(view["slots"][0]["jobs"], 3);
    EXPECT_EQ(view["slots"][1]["jobs"], 0);
    EXPECT_EQ(view["slots"][59]["jobs"], 2);
    EXPECT_EQ(view["slots"][1]["start"], format_rfc3339_ms(from + std::chrono::minutes{1}));
    EXPECT_EQ(view["capped"], false);
    EXPECT_EQ(view["exact_until"], format_rfc3339_ms(from + std::chrono::hours{1}));
}

TEST(UpcomingView, ACappedCountIsExactOnlyBeforeItsLastSlot) {
    const auto from = from_epoch_ms(0);
    // The cap (10 rows) was reached in slot 4: slot 4 may hold more, later slots are unknown.
    const auto view = upcoming_view(from, std::chrono::minutes{1}, 60, {{1, 6}, {4, 4}}, 10, 10);
    EXPECT_EQ(view["capped"], true);
    EXPECT_EQ(view["exact_until"], format_rfc3339_ms(from + std::chrono::minutes{4}));
}

TEST(UpcomingView, IgnoresSlotsOutsideTheChart) {
    const auto view = upcoming_view(from_epoch_ms(0), std::chrono::hours{1}, 24, {{-1, 5}, {24, 5}}, 10, 100);
    for (const auto& slot : view["slots"]) EXPECT_EQ(slot["jobs"], 0);
}

TEST(BodyView, ShowsUtf8TextAndOnlyTheSizeOfOtherBytes) {
    const auto text = body_view("h\xc3\xa9llo", 100);
    EXPECT_EQ(text["text"], "h\xc3\xa9llo");
    EXPECT_EQ(text["bytes"], 6);
    EXPECT_EQ(text["truncated"], false);
    const auto binary = body_view(std::string("\xff\x00\x01", 3), 100);
    EXPECT_TRUE(binary["text"].is_null());
    EXPECT_EQ(binary["bytes"], 3);
}

TEST(BodyView, CutsLongTextAtACharacterBoundary) {
    // "é" is two bytes: a cut after 2 bytes of "aé" would split it.
    const auto view = body_view("a\xc3\xa9z", 2);
    EXPECT_EQ(view["text"], "a");
    EXPECT_EQ(view["truncated"], true);
    EXPECT_EQ(view["bytes"], 4);
    EXPECT_NO_THROW((void)dump(view));
}

TEST(PrefixUpperBound, IsTheNextStringAfterEveryExtensionInByteOrder) {
    EXPECT_EQ(prefix_upper_bound("orders."), "orders/");
    EXPECT_EQ(prefix_upper_bound("a\x7f"), "a\xc2\x80");           // U+007F -> U+0080
    EXPECT_EQ(prefix_upper_bound("\xc3\xa9"), "\xc3\xaa");         // é -> ê
    EXPECT_EQ(prefix_upper_bound("x\xed\x9f\xbf"), "x\xee\x80\x80");  // U+D7FF skips surrogates
    EXPECT_EQ(prefix_upper_bound("a\xf4\x8f\xbf\xbf"), "b");          // U+10FFFF: carry over
    EXPECT_EQ(prefix_upper_bound("\xf4\x8f\xbf\xbf"), std::nullopt);
    EXPECT_EQ(prefix_upper_bound(""), std::nullopt);
}

TEST(PrefixUpperBound, EveryExtensionSortsBelowTheBoundAndTheBoundDoesNotStartWithThePrefix) {
    for (const std::string prefix : {"a", "orders.eu", "\xc3\xbf", "\xef\xbf\xbf"}) {
        const auto bound = prefix_upper_bound(prefix);
        ASSERT_TRUE(bound);
        for (const std::string tail : {"", "\x01", "zzz", "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf"}) {
            EXPECT_LT(prefix + tail, *bound) << prefix << tail;
        }
        EXPECT_NE(bound->rfind(prefix, 0), 0u);
    }
}

TEST(TokenMatches, OnlyTheExactToken) {
    EXPECT_TRUE(token_matches("0123456789abcdef", "0123456789abcdef"));
    EXPECT_FALSE(token_matches("0123456789abcdeF", "0123456789abcdef"));
    EXPECT_FALSE(token_matches("0123456789abcde", "0123456789abcdef"));
    EXPECT_FALSE(token_matches("", "0123456789abcdef"));
    EXPECT_FALSE(token_matches(std::string(65536, 'x'), "0123456789abcdef"));
}

TEST(Dump, ReplacesInvalidUtf8InsteadOfThrowing) {
    const json view = {{"id", std::string("bad\xff")}};
    EXPECT_THAT(dump(view), HasSubstr("bad\xef\xbf\xbd"));
}

TEST(ConsoleAssets, ThePageItsScriptAndStyleAreEmbedded) {
    std::map<std::string, std::string> served;
    for (const auto& asset : console_assets()) {
        served[std::string(asset.path)] = std::string(asset.content_type);
        EXPECT_FALSE(asset.body.empty()) << asset.path;
    }
    EXPECT_EQ(served["/"], "text/html; charset=utf-8");
    EXPECT_EQ(served["/app.js"], "text/javascript; charset=utf-8");
    EXPECT_EQ(served["/style.css"], "text/css; charset=utf-8");
}

TEST(ConsoleAssets, TheScriptNeverWritesHtml) {
    // User text (job ids, routing keys, reasons) is only ever set as textContent.
    for (const auto& asset : console_assets()) {
        if (asset.path != "/app.js") continue;
        EXPECT_THAT(std::string(asset.body), Not(HasSubstr("innerHTML")));
        EXPECT_THAT(std::string(asset.body), Not(HasSubstr("outerHTML")));
        EXPECT_THAT(std::string(asset.body), Not(HasSubstr("insertAdjacentHTML")));
        EXPECT_THAT(std::string(asset.body), Not(HasSubstr("document.write")));
    }
}

}  // namespace
}  // namespace hourglass::console
