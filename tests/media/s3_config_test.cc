// s3_config_from_environment() (media/remote_file_system.h): the AWS CLI's credential, region
// and endpoint chain, and the credentials it does not follow (a process to run, a role to
// assume, a token service), which are an error naming the profile and what to do, never
// anonymous requests in their place.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "media/s3_file_system.h"

namespace hdl {
namespace {

// Every variable the chain reads, cleared for the test and put back after; HOME points at an
// empty folder, so ~/.aws of the machine running the test is never read.
class S3ConfigTest : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {
      "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_SHARED_CREDENTIALS_FILE",
      "AWS_CONFIG_FILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "HOME",
      "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"};
  void SetUp() override {
    for (const char* v : kVars) {
      if (const char* x = std::getenv(v)) saved_[v] = x;
      ::unsetenv(v);
    }
    dir_ = std::filesystem::temp_directory_path() / ("hdl_s3_config_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_ / ".aws");
    ::setenv("HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    for (const char* v : kVars) ::unsetenv(v);
    for (const auto& [k, v] : saved_) ::setenv(k.c_str(), v.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  void write(const std::string& rel, const std::string& text) { std::ofstream(dir_ / rel) << text; }

  std::filesystem::path dir_;
  std::map<std::string, std::string> saved_;
};

TEST_F(S3ConfigTest, TheChainIsTheAwsClis) {
  // Nothing anywhere: anonymous, us-east-1, AWS.
  Result<S3Config> c = s3_config_from_environment();
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_TRUE(c->access_key_id.empty());
  EXPECT_EQ(c->region, "us-east-1");
  EXPECT_TRUE(c->endpoint.empty());
  // Profiles: the credentials file first, then keys in the config file; the region from the config.
  write(".aws/credentials", "[default]\naws_access_key_id = AKIDDEFAULT\naws_secret_access_key = s1\n");
  write(".aws/config", "[default]\nregion = eu-west-1\n[profile other]\naws_access_key_id=AKIDOTHER\n"
                       "aws_secret_access_key=s2\naws_session_token = t2\nregion=ap-south-1\n");
  c = s3_config_from_environment();
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->access_key_id, "AKIDDEFAULT");
  EXPECT_EQ(c->region, "eu-west-1");
  EXPECT_NE(c->credentials_source.find("profile \"default\""), std::string::npos) << c->credentials_source;
  ::setenv("AWS_PROFILE", "other", 1);
  c = s3_config_from_environment();
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->access_key_id, "AKIDOTHER");
  EXPECT_EQ(c->session_token, "t2");
  EXPECT_EQ(c->region, "ap-south-1");
  // The environment comes first, for keys, region and endpoint.
  ::setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "s3", 1);
  ::setenv("AWS_DEFAULT_REGION", "us-west-1", 1);
  ::setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9", 1);
  c = s3_config_from_environment();
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->access_key_id, "AKIDENV");
  EXPECT_EQ(c->region, "us-west-1");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:9");
  ::setenv("AWS_REGION", "us-west-2", 1);
  ::setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:10", 1);
  c = s3_config_from_environment();
  ASSERT_TRUE(c.is_ok()) << c.status().message();
  EXPECT_EQ(c->region, "us-west-2");
  EXPECT_EQ(c->endpoint, "http://127.0.0.1:10");
  // Half a key pair, and a profile nowhere: errors naming them.
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  c = s3_config_from_environment();
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("AWS_SECRET_ACCESS_KEY"), std::string::npos) << c.status().message();
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::setenv("AWS_PROFILE", "nowhere", 1);
  c = s3_config_from_environment();
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("\"nowhere\" is in neither"), std::string::npos) << c.status().message();
}

TEST_F(S3ConfigTest, CredentialsItDoesNotFollowAreAnErrorNotAnonymous) {
  write(".aws/config", "[profile proc]\ncredential_process = /usr/bin/get-creds --x\n"
                       "[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = default\n"
                       "[profile sso]\nsso_session = corp\nsso_account_id = 1\n");
  for (const auto& [profile, how] : {std::pair{"proc", "credential_process"}, std::pair{"role", "role_arn"},
                                     std::pair{"sso", "sso_session"}}) {
    ::setenv("AWS_PROFILE", profile, 1);
    Result<S3Config> c = s3_config_from_environment();
    ASSERT_FALSE(c.is_ok()) << profile << " became anonymous";
    EXPECT_EQ(c.status().code(), StatusCode::kUnsupported);
    const std::string m = c.status().message();
    EXPECT_NE(m.find(std::string("profile \"") + profile + "\""), std::string::npos) << m;
    EXPECT_NE(m.find(how), std::string::npos) << m;
    EXPECT_NE(m.find("export-credentials"), std::string::npos) << m;
  }
  ::unsetenv("AWS_PROFILE");
  ::setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token", 1);
  Result<S3Config> c = s3_config_from_environment();
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("AWS_WEB_IDENTITY_TOKEN_FILE"), std::string::npos) << c.status().message();
  // Keys given beside it win, as with the AWS CLI.
  ::setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", "s", 1);
  EXPECT_TRUE(s3_config_from_environment().is_ok());
}

}  // namespace
}  // namespace hdl
