// Secrets are never logged (reference §9): amqp::mask_url_password and store::mask_pg_url hide the
// password of every URL and conninfo form and leave everything else readable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "amqp/connection.hpp"
#include "common/mask.hpp"
#include "store/job_store.hpp"

namespace hourglass {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// --- AMQP URLs ------------------------------------------------------------------------------

TEST(MaskUrlPassword, amqp_password_is_replaced) {
    EXPECT_EQ(amqp::mask_url_password("amqp://guest:guest@127.0.0.1:5672/%2f"),
              "amqp://guest:***@127.0.0.1:5672/%2f");
}

TEST(MaskUrlPassword, amqps_password_is_replaced) {
    EXPECT_EQ(amqp::mask_url_password("amqps://hourglass:s3cr3t@broker.example:5671/prod"),
              "amqps://hourglass:***@broker.example:5671/prod");
}

TEST(MaskUrlPassword, password_with_special_characters_is_replaced) {
    for (const std::string password : {"p%40ss%2Fword", "pa:ss", "p?a#s=s", "p;a&s!s", "'a b'"}) {
        SCOPED_TRACE(password);
        const auto masked = amqp::mask_url_password("amqp://user:" + password + "@host:5672/v");
        EXPECT_EQ(masked, "amqp://user:***@host:5672/v");
        EXPECT_THAT(masked, Not(HasSubstr(password)));
    }
}

TEST(MaskUrlPassword, every_url_of_a_list_is_masked) {
    EXPECT_EQ(amqp::mask_url_password("amqp://u:one@n1:5672/%2f  amqps://v:two@n2/prod"),
              "amqp://u:***@n1:5672/%2f amqps://v:***@n2/prod");
}

TEST(SplitUrls, splits_only_lists_of_amqp_urls) {
    EXPECT_THAT(amqp::split_urls("amqp://a@n1/ amqps://b@n2/\tamqp://c@n3/"),
                ::testing::ElementsAre("amqp://a@n1/", "amqps://b@n2/", "amqp://c@n3/"));
    EXPECT_THAT(amqp::split_urls("amqp://user:'a b'@host/v"),
                ::testing::ElementsAre("amqp://user:'a b'@host/v"));
    EXPECT_THAT(amqp::split_urls("amqp://h/"), ::testing::ElementsAre("amqp://h/"));
    EXPECT_THAT(amqp::split_urls(""), ::testing::ElementsAre(""));
}

TEST(MaskUrlPassword, empty_user_with_password_is_masked) {
    EXPECT_EQ(amqp::mask_url_password("amqp://:secret@host/"), "amqp://:***@host/");
}

TEST(MaskUrlPassword, url_without_password_is_unchanged) {
    for (const std::string url :
         {"amqp://host", "amqp://host:5672/vhost", "amqp://user@host:5672/vhost",
          "amqps://broker.example:5671/%2f", "amqp://[::1]:5672/", "", "not a url"}) {
        EXPECT_EQ(amqp::mask_url_password(url), url);
    }
}

TEST(MaskUrlPassword, host_port_and_vhost_stay_readable) {
    const auto masked = amqp::mask_url_password("amqp://u:secret@rabbit-1.internal:5673/orders");
    EXPECT_THAT(masked, HasSubstr("rabbit-1.internal:5673/orders"));
    EXPECT_THAT(masked, HasSubstr("u:"));
    EXPECT_THAT(masked, Not(HasSubstr("secret")));
}

TEST(MaskUrlPassword, unencoded_slash_or_at_in_the_password_is_still_hidden) {
    const auto slash = amqp::mask_url_password("amqp://user:pa/ss@host/");
    EXPECT_THAT(slash, Not(HasSubstr("pa/ss")));
    EXPECT_THAT(slash, Not(HasSubstr("ss@")));
    const auto at = amqp::mask_url_password("amqp://user:p@ss@host/");
    EXPECT_THAT(at, Not(HasSubstr("ss@")));
}

// --- PostgreSQL URIs and conninfo -----------------------------------------------------------

TEST(MaskPgUrl, postgresql_uri_password_is_replaced) {
    EXPECT_EQ(store::mask_pg_url("postgresql://hourglass:secret@db:5432/hourglass"),
              "postgresql://hourglass:***@db:5432/hourglass");
    EXPECT_EQ(store::mask_pg_url("postgres://u:secret@db/x?sslmode=require"),
              "postgres://u:***@db/x?sslmode=require");
}

TEST(MaskPgUrl, conninfo_password_is_replaced) {
    EXPECT_EQ(store::mask_pg_url("host=db user=hg password=secret dbname=hg"),
              "host=db user=hg password=*** dbname=hg");
    EXPECT_EQ(store::mask_pg_url("password=secret"), "password=***");
}

TEST(MaskPgUrl, quoted_conninfo_password_with_spaces_is_replaced) {
    EXPECT_EQ(store::mask_pg_url("host=db password='a b' dbname=hg"),
              "host=db password=*** dbname=hg");
}

TEST(MaskPgUrl, conninfo_password_with_spaces_around_the_equals_sign_is_replaced) {
    const auto masked = store::mask_pg_url("host=db password = secret dbname=hg");
    EXPECT_THAT(masked, Not(HasSubstr("secret")));
    EXPECT_THAT(masked, HasSubstr("dbname=hg"));
}

TEST(MaskPgUrl, password_in_the_uri_query_is_hidden) {
    const auto masked = store::mask_pg_url("postgresql://db/hg?password=secret&sslmode=require");
    EXPECT_THAT(masked, Not(HasSubstr("secret")));
    EXPECT_THAT(masked, HasSubstr("postgresql://db/hg?"));
}

TEST(MaskPgUrl, url_without_password_is_unchanged) {
    for (const std::string url :
         {"postgresql://127.0.0.1:5432/hourglass", "postgresql://user@db/x", "postgres://db",
          "host=db user=hg dbname=hg", "", "dbname=hourglass"}) {
        EXPECT_EQ(store::mask_pg_url(url), url);
    }
}

TEST(MaskPgUrl, escaped_quote_inside_a_quoted_password_is_still_hidden) {
    const auto masked = store::mask_pg_url(R"(password='se\'cret' host=db)");
    EXPECT_THAT(masked, Not(HasSubstr("cret")));
    EXPECT_THAT(masked, HasSubstr("host=db"));
}

TEST(MaskPgUrl, unencoded_slash_in_the_uri_password_is_still_hidden) {
    EXPECT_THAT(store::mask_pg_url("postgresql://u:pa/ss@db/x"), Not(HasSubstr("pa/ss")));
}

}  // namespace
}  // namespace hourglass

namespace hourglass {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

// --- mistyped URLs, which libraries quote back in their errors --------------------------------

TEST(MaskSecrets, a_scheme_with_one_slash_still_hides_the_password) {
    EXPECT_EQ(mask_secrets("postgresql:/hourglass:secret@db:5432/hg"),
              "postgresql:/hourglass:***@db:5432/hg");
}

TEST(MaskSecrets, a_url_without_scheme_separator_still_hides_the_password) {
    EXPECT_EQ(mask_secrets("amqp//user:secret@host"), "amqp//user:***@host");
    EXPECT_EQ(mask_secrets("user:secret@host:5672"), "user:***@host:5672");
}

// --- the passwords themselves -----------------------------------------------------------------

TEST(SecretsIn, uri_password_as_written_and_percent_decoded) {
    EXPECT_THAT(secrets_in("amqp://u:p%40ss@host/"), UnorderedElementsAre("p%40ss", "p@ss"));
    EXPECT_THAT(secrets_in("postgresql://u:plain@db/x"), ElementsAre("plain"));
}

TEST(SecretsIn, conninfo_password_quoted_and_unquoted) {
    EXPECT_THAT(secrets_in("host=db password='a \\' b' user=u"),
                UnorderedElementsAre("'a \\' b'", "a ' b"));
    EXPECT_THAT(secrets_in("postgresql://db/x?password=q%20r&sslmode=require"),
                UnorderedElementsAre("q%20r", "q r"));
}

TEST(SecretsIn, nothing_without_a_password) {
    EXPECT_TRUE(secrets_in("amqp://host:5672/%2f").empty());
    EXPECT_TRUE(secrets_in("host=db user=u").empty());
    EXPECT_TRUE(secrets_in("amqp://:@host/").empty());
}

TEST(HideSecrets, every_occurrence_is_replaced_longest_first) {
    EXPECT_EQ(hide_secrets("token abc and abcdef and abc", {"abc", "abcdef"}),
              "token *** and *** and ***");
    EXPECT_EQ(hide_secrets("nothing here", {}), "nothing here");
    EXPECT_EQ(hide_secrets("a**b", {"*"}), "a******b") << "a secret inside the mask terminates";
}

TEST(HideSecrets, a_percent_encoding_error_quoting_the_password_is_hidden) {
    // libpq: invalid percent-encoded token: "sec%zzret"
    const auto secrets = secrets_in("postgresql://u:sec%zzret@db/x");
    EXPECT_THAT(hide_secrets("invalid percent-encoded token: \"sec%zzret\"", secrets),
                Not(HasSubstr("sec")));
}

}  // namespace
}  // namespace hourglass
