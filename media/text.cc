#include "media/text.h"

#include <array>
#include <cctype>

namespace hdl {
namespace {

// The length of the valid UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF); 0 when it is not one.
size_t utf8_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

void append_escaped_byte(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

// `text` as valid UTF-8, other bytes and control characters (but newline and tab) as \xNN.
std::string escape_bytes(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_length(text, i);
    if (n == 0 || (c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      append_escaped_byte(out, c);
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

bool url_char(char c) {
  constexpr std::string_view kEnds = " \t\n\r\"'<>`)]}";
  return kEnds.find(c) == std::string_view::npos;
}

// The URL text[begin, end) with its user part and its secret query values redacted.
std::string redact_url(std::string_view url) {
  const size_t scheme_end = url.find("://");
  const size_t authority = scheme_end + 3;
  size_t path = url.find_first_of("/?#", authority);
  if (path == std::string_view::npos) path = url.size();
  std::string out(url.substr(0, authority));
  const std::string_view auth = url.substr(authority, path - authority);
  if (const size_t at = auth.rfind('@'); at != std::string_view::npos) {
    out += "***";
    out += auth.substr(at);
  } else {
    out += auth;
  }
  size_t query = url.find('?', path);
  if (query == std::string_view::npos) return out += url.substr(path);
  size_t fragment = url.find('#', query);
  if (fragment == std::string_view::npos) fragment = url.size();
  out += url.substr(path, query + 1 - path);
  for (size_t p = query + 1; p < fragment;) {
    size_t amp = url.find('&', p);
    if (amp == std::string_view::npos || amp > fragment) amp = fragment;
    const std::string_view param = url.substr(p, amp - p);
    const size_t eq = param.find('=');
    if (eq != std::string_view::npos && eq + 1 < param.size() && is_secret_query_parameter(param.substr(0, eq))) {
      out += param.substr(0, eq + 1);
      out += "REDACTED";
    } else {
      out += param;
    }
    if (amp < fragment) out += '&';
    p = amp + 1;
  }
  return out += url.substr(fragment);
}

}  // namespace

bool is_secret_query_parameter(std::string_view name) {
  static constexpr std::array<std::string_view, 14> kSecret = {
      "x-amz-signature", "x-amz-security-token", "x-amz-credential", "x-goog-signature", "x-goog-credential",
      "signature", "sig", "token", "access_token", "awsaccesskeyid", "password", "passwd", "secret", "x-amz-s3session-token"};
  for (std::string_view s : kSecret) {
    if (s.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < s.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(name[i])) == s[i];
    if (same) return true;
  }
  return false;
}

std::string printable(std::string_view text) {
  const std::string escaped = escape_bytes(text);
  std::string out;
  out.reserve(escaped.size());
  size_t done = 0;
  for (size_t at = escaped.find("://"); at != std::string::npos; at = escaped.find("://", at + 3)) {
    size_t begin = at;
    while (begin > done && (std::isalnum(static_cast<unsigned char>(escaped[begin - 1])) || escaped[begin - 1] == '+' ||
                            escaped[begin - 1] == '.' || escaped[begin - 1] == '-'))
      --begin;
    if (begin == at) continue;  // no scheme
    size_t end = at + 3;
    while (end < escaped.size() && url_char(escaped[end])) ++end;
    out.append(escaped, done, begin - done);
    out += redact_url(std::string_view(escaped).substr(begin, end - begin));
    done = end;
    at = end - 3;  // the next search starts at end
  }
  out.append(escaped, done, std::string::npos);
  return out;
}

}  // namespace hdl
