// A port of the braceexpand package's algorithm (the one webdataset calls), on byte strings:
// a pattern is the product of literal runs and brace groups; a group is an integer range, a
// character range, a comma sequence (each part a pattern), or else literal braces around a
// pattern. Escapes are kept while parsing and removed from each finished name.
#include "pipeline/readers/tar/shard_spec.h"

#include <cstdio>
#include <optional>

namespace hdl {
namespace {

using Names = std::vector<std::string>;

struct Expander {
  std::string_view spec;  // for messages
  Status error;
  int recursion = 0;  // depth of pattern() calls: bounded so deep nesting cannot exhaust the stack

  bool fail(const std::string& what) {
    if (error.is_ok())
      error = Status::invalid_argument("shard spec \"" + std::string(spec) + "\": " + what);
    return false;
  }

  // out = out x items (string concatenation), bounded.
  bool product(Names* out, const Names& items) {
    if (int64_t(out->size()) * int64_t(items.size()) > kMaxShardNames)
      return fail("expands to more than " + std::to_string(kMaxShardNames) + " names");
    Names next;
    next.reserve(out->size() * items.size());
    for (const auto& a : *out)
      for (const auto& b : items) next.push_back(a + b);
    *out = std::move(next);
    return true;
  }

  static bool parse_int(std::string_view s, int64_t* v) {
    bool neg = !s.empty() && s[0] == '-';
    if (neg) s.remove_prefix(1);
    if (s.empty() || s.size() > 17) return false;
    int64_t x = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
      x = x * 10 + (c - '0');
    }
    *v = neg ? -x : x;
    return true;
  }

  // `^(-?\d+)\.\.(-?\d+)(?:\.\.-?(\d+))?$` or the same with single ASCII letters.
  std::optional<Names> range(std::string_view e) {
    size_t d1 = e.find("..");
    if (d1 == std::string_view::npos) return std::nullopt;
    std::string_view left = e.substr(0, d1), rest = e.substr(d1 + 2), right = rest, incr;
    if (size_t d2 = rest.find(".."); d2 != std::string_view::npos) {
      right = rest.substr(0, d2);
      incr = rest.substr(d2 + 2);
      if (!incr.empty() && incr[0] == '-') incr.remove_prefix(1);  // a sign on the step is ignored
      if (incr.empty() || incr.find_first_not_of("0123456789") != std::string_view::npos)
        return std::nullopt;
    }
    int64_t step = 1;
    if (!incr.empty()) {
      if (incr.size() > 17) return std::nullopt;
      step = std::stoll(std::string(incr));
      if (step == 0) step = 1;
    }
    int64_t a = 0, b = 0;
    if (parse_int(left, &a) && parse_int(right, &b)) {
      int padding = 0;
      for (std::string_view s : {left, right}) {
        bool zero_lead = (s.size() > 1 && s[0] == '0') || (s.size() > 2 && s[0] == '-' && s[1] == '0');
        if (zero_lead) padding = int(std::max(left.size(), right.size()));
      }
      int64_t count = (a <= b ? b - a : a - b) / step + 1;
      if (count > kMaxShardNames) {
        fail("expands to more than " + std::to_string(kMaxShardNames) + " names");
        return Names{};
      }
      Names out;
      for (int64_t i = 0, v = a; i < count; ++i, v += a <= b ? step : -step) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%0*lld", padding, static_cast<long long>(v));
        out.emplace_back(buf);
      }
      return out;
    }
    static const std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    if (left.size() == 1 && right.size() == 1 && alphabet.find(left[0]) != std::string_view::npos &&
        alphabet.find(right[0]) != std::string_view::npos) {
      int64_t s = int64_t(alphabet.find(left[0])), t = int64_t(alphabet.find(right[0]));
      Names out;
      if (s < t) {
        for (int64_t i = s; i <= t; i += step) out.emplace_back(1, alphabet[size_t(i)]);
      } else {
        for (int64_t i = s; i >= t; i -= step) out.emplace_back(1, alphabet[size_t(i)]);
      }
      return out;
    }
    return std::nullopt;
  }

  // A comma sequence: the chain of its parts' patterns; nullopt when it has no top-level comma.
  std::optional<Names> sequence(std::string_view e) {
    Names out;
    int depth = 0;
    size_t start = 0;
    bool any = false;
    for (size_t i = 0; i < e.size(); ++i) {
      if (e[i] == '\\') {
        ++i;
        continue;
      }
      if (e[i] == '{') ++depth;
      else if (e[i] == '}') --depth;
      else if (e[i] == ',' && depth == 0) {
        Names part;
        if (!pattern(e.substr(start, i - start), &part)) return Names{};
        out.insert(out.end(), part.begin(), part.end());
        start = i + 1;
        any = true;
      }
    }
    if (!any) return std::nullopt;
    Names part;
    if (!pattern(e.substr(start), &part)) return Names{};
    out.insert(out.end(), part.begin(), part.end());
    if (int64_t(out.size()) > kMaxShardNames) {
      fail("expands to more than " + std::to_string(kMaxShardNames) + " names");
      return Names{};
    }
    return out;
  }

  bool pattern(std::string_view p, Names* out) {
    struct Depth {
      int& d;
      explicit Depth(int& x) : d(++x) {}
      ~Depth() { --d; }
    } guard(recursion);
    if (recursion > 64) return fail("braces nested more than 64 deep");
    *out = Names{""};
    int nest = 0;
    size_t start = 0, i = 0;
    for (; i < p.size(); ++i) {
      if (p[i] == '\\') {
        ++i;
        continue;
      }
      if (p[i] == '{') {
        if (nest == 0 && i > start && !product(out, {std::string(p.substr(start, i - start))}))
          return false;
        if (nest == 0) start = i;
        ++nest;
      } else if (p[i] == '}') {
        if (--nest < 0) return fail("unbalanced braces");
        if (nest == 0) {
          std::string_view expr = p.substr(start + 1, i - start - 1);
          std::optional<Names> items = range(expr);
          if (!items && error.is_ok()) items = sequence(expr);
          if (!error.is_ok()) return false;
          if (items) {
            if (!product(out, *items)) return false;
          } else {  // literal braces around a pattern
            Names inner;
            if (!product(out, {"{"}) || !pattern(expr, &inner) || !product(out, inner) ||
                !product(out, {"}"}))
              return false;
          }
          start = i + 1;
        }
      }
    }
    if (nest != 0) return fail("unbalanced braces");
    if (start < p.size() && !product(out, {std::string(p.substr(start))})) return false;
    return true;
  }
};

std::string strip_escapes(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size()) ++i;
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> expand_shard_spec(std::string_view spec) {
  Expander ex{spec, Status::ok()};
  if (spec.empty()) return Status::invalid_argument("shard spec is empty");
  std::vector<std::string> all;
  size_t pos = 0;
  for (;;) {
    size_t sep = spec.find("::", pos);
    std::string_view part = spec.substr(pos, sep == std::string_view::npos ? sep : sep - pos);
    if (part.empty()) return Status::invalid_argument("shard spec \"" + std::string(spec) + "\": empty part");
    Names names;
    if (!ex.pattern(part, &names)) return ex.error;
    if (int64_t(all.size() + names.size()) > kMaxShardNames)
      return Status::invalid_argument("shard spec \"" + std::string(spec) + "\": expands to more than " +
                                      std::to_string(kMaxShardNames) + " names");
    for (auto& n : names) all.push_back(strip_escapes(n));
    if (sep == std::string_view::npos) break;
    pos = sep + 2;
  }
  return all;
}

Result<std::vector<std::string>> expand_shard_specs(const std::vector<std::string>& specs) {
  std::vector<std::string> all;
  for (const auto& s : specs) {
    HDL_ASSIGN_OR_RETURN(auto names, expand_shard_spec(s));
    if (int64_t(all.size() + names.size()) > kMaxShardNames)
      return Status::invalid_argument("shard specs expand to more than " +
                                      std::to_string(kMaxShardNames) + " names");
    all.insert(all.end(), names.begin(), names.end());
  }
  return all;
}

}  // namespace hdl
