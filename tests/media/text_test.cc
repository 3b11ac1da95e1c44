// printable() (media/text.h): what every message passes through before it is shown.
#include "media/text.h"

#include <gtest/gtest.h>

#include "media/status.h"

namespace hdl {
namespace {

TEST(Printable, BytesThatAreNotUtf8AreEscapedAndUtf8IsKept) {
  EXPECT_EQ(printable("plain ascii: fine"), "plain ascii: fine");
  EXPECT_EQ(printable("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(printable("k\xe9y.jpg"), "k\\xe9y.jpg");                  // Latin-1
  EXPECT_EQ(printable("\xc3"), "\\xc3");                              // cut short
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                     // overlong
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");            // a surrogate
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");   // past U+10FFFF
  EXPECT_EQ(printable(std::string("nul\0esc\x1b[31m", 12)), "nul\\x00esc\\x1b[31m");
  EXPECT_EQ(printable("line\nand\ttab"), "line\nand\ttab");
}

TEST(Printable, UrlSecretsAreRedactedWhereverTheUrlIs) {
  EXPECT_EQ(printable("GET https://b.s3.amazonaws.com/k.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F2026"
                      "&X-Amz-Signature=abc123&x-amz-security-token=TOK&partNumber=1 failed"),
            "GET https://b.s3.amazonaws.com/k.tar?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED"
            "&X-Amz-Signature=REDACTED&x-amz-security-token=REDACTED&partNumber=1 failed");
  EXPECT_EQ(printable("shard \"http://user:pa55@host:8080/a.tar\": HTTP 404"), "shard \"http://***@host:8080/a.tar\": HTTP 404");
  EXPECT_EQ(printable("(s3://bucket/key) and (http://u@h/p?sig=x#frag)"), "(s3://bucket/key) and (http://***@h/p?sig=REDACTED#frag)");
  EXPECT_EQ(printable("no url: a://"), "no url: a://");
  EXPECT_EQ(printable("://nothing"), "://nothing");
  EXPECT_EQ(printable("http://h/p?token=&a=b"), "http://h/p?token=&a=b");  // nothing to hide
  const std::string once = printable("s3://b/k\xff?Signature=s \x01");
  EXPECT_EQ(once, "s3://b/k\\xff?Signature=REDACTED \\x01");
  EXPECT_EQ(printable(once), once) << "printable() is idempotent";
}

TEST(Printable, StatusMessagesArePrintable) {
  const Status s = Status::io_error("GET http://a:SECRET@h/x\xfe.tar?X-Amz-Signature=SIG");
  EXPECT_EQ(s.message(), "GET http://***@h/x\\xfe.tar?X-Amz-Signature=REDACTED");
  EXPECT_EQ(s.with_context("tar shard \"k\xe9y\"").message(),
            "tar shard \"k\\xe9y\": GET http://***@h/x\\xfe.tar?X-Amz-Signature=REDACTED");
}

}  // namespace
}  // namespace hdl
