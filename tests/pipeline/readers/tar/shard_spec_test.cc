// Shard specs expand as webdataset's expand_urls (braceexpand) does; the expected lists are
// braceexpand's documented outputs.
#include "pipeline/readers/tar/shard_spec.h"

#include <gtest/gtest.h>

namespace hdl {
namespace {

using V = std::vector<std::string>;

V expand(const std::string& spec) {
  auto r = expand_shard_spec(spec);
  EXPECT_TRUE(r.is_ok()) << spec << ": " << r.status().to_string();
  return r.is_ok() ? *r : V{};
}

TEST(ShardSpecTest, Ranges) {
  auto big = expand("train-{000000..001023}.tar");
  ASSERT_EQ(big.size(), 1024u);
  EXPECT_EQ(big.front(), "train-000000.tar");
  EXPECT_EQ(big.back(), "train-001023.tar");
  EXPECT_EQ(expand("{1..3}"), (V{"1", "2", "3"}));
  EXPECT_EQ(expand("{3..1}"), (V{"3", "2", "1"}));
  EXPECT_EQ(expand("{01..3}"), (V{"01", "02", "03"}));      // a leading zero pads both
  EXPECT_EQ(expand("{8..010}"), (V{"008", "009", "010"}));
  EXPECT_EQ(expand("{0..9..3}"), (V{"0", "3", "6", "9"}));  // with a step
  EXPECT_EQ(expand("{-1..1}"), (V{"-1", "0", "1"}));
  EXPECT_EQ(expand("{a..c}"), (V{"a", "b", "c"}));
  EXPECT_EQ(expand("{Y..b}"), (V{"Y", "Z", "a", "b"}));
  EXPECT_EQ(expand("{c..a}"), (V{"c", "b", "a"}));
}

TEST(ShardSpecTest, ListsProductsNestingEscapes) {
  EXPECT_EQ(expand("{a,b}/x-{0..1}.tar"), (V{"a/x-0.tar", "a/x-1.tar", "b/x-0.tar", "b/x-1.tar"}));
  EXPECT_EQ(expand("{a,b{1..2}}"), (V{"a", "b1", "b2"}));
  EXPECT_EQ(expand("x{,y}"), (V{"x", "xy"}));
  EXPECT_EQ(expand("{abc}"), (V{"{abc}"}));  // neither a list nor a range: literal
  EXPECT_EQ(expand("{}"), (V{"{}"}));
  EXPECT_EQ(expand("a\\{1..2\\}.tar"), (V{"a{1..2}.tar"}));
  EXPECT_EQ(expand("{a\\,b,c}"), (V{"a,b", "c"}));
  EXPECT_EQ(expand("s3://bucket/plain.tar"), (V{"s3://bucket/plain.tar"}));
}

TEST(ShardSpecTest, DoubleColonJoinsSpecs) {
  EXPECT_EQ(expand("a-{1..2}.tar::b.tar"), (V{"a-1.tar", "a-2.tar", "b.tar"}));
  auto list = expand_shard_specs({"x{1,2}", "y"});
  ASSERT_TRUE(list.is_ok());
  EXPECT_EQ(*list, (V{"x1", "x2", "y"}));
}

TEST(ShardSpecTest, Errors) {
  for (std::string bad : {"", "a{1..2", "a}b", "a::", "::b", "{0..99999999}", "{0..9999}{0..9999}"}) {
    auto r = expand_shard_spec(bad);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_NE(expand_shard_spec("a{1..2").status().message().find("unbalanced"), std::string::npos);
  std::string deep = std::string(100000, '{') + std::string(100000, '}');
  EXPECT_EQ(expand_shard_spec(deep).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl
