#include "pipeline/operators/timm_augment_policy.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "pipeline/errors.h"
#include "pipeline/kernels/augment.h"
#include "pipeline/kernels/color.h"

namespace hdl {
namespace {

using O = TimmOp;
constexpr double kLevelDenom = 10.0;  // timm's _LEVEL_DENOM

constexpr std::array<const char*, 27> kNames = {
    "AutoContrast", "Equalize", "Invert", "Rotate", "Posterize", "PosterizeIncreasing", "PosterizeOriginal",
    "Solarize", "SolarizeIncreasing", "SolarizeAdd", "Color", "ColorIncreasing", "Contrast", "ContrastIncreasing",
    "Brightness", "BrightnessIncreasing", "Sharpness", "SharpnessIncreasing", "ShearX", "ShearY", "TranslateX",
    "TranslateY", "TranslateXRel", "TranslateYRel", "Desaturate", "GaussianBlur", "GaussianBlurRand",
};
static_assert(kNames.size() == static_cast<size_t>(O::kGaussianBlurRand) + 1);

// _randomly_negate: -v when the draw says so.
double signed_by(double v, bool negate) { return negate ? -v : v; }

// _minmax_level_to_arg(level, min_val, max_val, clamp=True).
double minmax(double level, double lo, double hi) {
  const double v = lo + (hi - lo) * (level / kLevelDenom);
  return std::max(lo, std::min(hi, v));
}

// Python's int() of a non-negative double.
double py_int(double v) { return std::trunc(v); }

bool takes_sign(O op) {
  switch (op) {
    case O::kRotate: case O::kColorIncreasing: case O::kContrastIncreasing: case O::kBrightnessIncreasing:
    case O::kSharpnessIncreasing: case O::kShearX: case O::kShearY: case O::kTranslateX: case O::kTranslateY:
    case O::kTranslateXRel: case O::kTranslateYRel:
      return true;
    default: return false;
  }
}

bool has_level(O op) { return op != O::kAutoContrast && op != O::kEqualize && op != O::kInvert; }

[[noreturn]] void bad(const std::string& what) { throw ConfigError(what); }

}  // namespace

const char* timm_op_name(TimmOp op) { return kNames[static_cast<size_t>(op)]; }

TimmOp parse_timm_op(const std::string& name, const char* arg) {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (name == kNames[i]) return static_cast<TimmOp>(i);
  std::string known;
  for (const char* n : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  bad(std::string("argument \"") + arg + "\": unknown timm op \"" + name + "\" (known: " + known + ")");
}

bool timm_op_geometric(TimmOp op) {
  switch (op) {
    case O::kRotate: case O::kShearX: case O::kShearY: case O::kTranslateX: case O::kTranslateY:
    case O::kTranslateXRel: case O::kTranslateYRel:
      return true;
    default: return false;
  }
}

void validate(const TimmAugmentParams& p) {
  const size_t n = p.ops.size();
  if (p.probabilities.size() != n || p.magnitudes.size() != n)
    bad("arguments \"probabilities\" and \"magnitudes\" must have one value per op (" + std::to_string(n) +
        "), got " + std::to_string(p.probabilities.size()) + " and " + std::to_string(p.magnitudes.size()));
  for (size_t i = 0; i < n; ++i) {
    if (!(p.probabilities[i] >= 0 && p.probabilities[i] <= 1))
      bad("argument \"probabilities\": value " + std::to_string(i) + " must be in [0, 1]");
    if (!std::isfinite(p.magnitudes[i])) bad("argument \"magnitudes\": value " + std::to_string(i) + " is not finite");
  }
  if (!(p.magnitude_std >= 0) || !std::isfinite(p.magnitude_std)) bad("argument \"magnitude_std\" must be finite and >= 0");
  if (!(p.magnitude_max >= 0) || !std::isfinite(p.magnitude_max)) bad("argument \"magnitude_max\" must be finite and >= 0");
  if (!std::isfinite(p.translate_pct) || !std::isfinite(p.translate_const))
    bad("arguments \"translate_pct\" and \"translate_const\" must be finite");
  if (p.filters.empty()) bad("argument \"interpolation\" needs at least one filter");
  if (p.policy == TimmAugmentParams::Policy::kAugMix) {
    if (n == 0) bad("argument \"ops\": augmix needs at least one op");
    if (p.width < 1 || p.width > 64) bad("argument \"width\" must be in [1, 64]");
    if (p.depth > 64) bad("argument \"depth\" must be at most 64");
    if (!(p.alpha > 0) || !std::isfinite(p.alpha)) bad("argument \"alpha\" must be finite and > 0");
    return;
  }
  if (p.policy == TimmAugmentParams::Policy::kAutoAugment) {
    if (p.groups.empty()) bad("argument \"groups\": an auto_augment policy needs at least one sub-policy");
    int64_t sum = 0;
    for (int g : p.groups) {
      if (g < 1) bad("argument \"groups\": every sub-policy needs at least one op");
      sum += g;
    }
    if (sum != static_cast<int64_t>(n))
      bad("argument \"groups\": sub-policy sizes sum to " + std::to_string(sum) + ", not the " + std::to_string(n) + " ops");
    return;
  }
  if (p.num_layers < 0) bad("argument \"num_layers\" must be >= 0");
  if (n == 0 && p.num_layers > 0) bad("argument \"ops\": rand_augment needs at least one op");
  if (!p.weights.empty()) {
    if (p.weights.size() != n) bad("argument \"weights\" must have one value per op or none");
    size_t positive = 0;
    for (double w : p.weights) {
      if (!(w >= 0) || !std::isfinite(w)) bad("argument \"weights\": weights must be finite and >= 0");
      positive += w > 0;
    }
    if (positive < static_cast<size_t>(p.num_layers))
      bad("argument \"weights\": " + std::to_string(positive) + " non-zero weights for " + std::to_string(p.num_layers) +
          " ops drawn without replacement (numpy raises too)");
  }
}

double timm_level_arg(const TimmAugmentParams& p, TimmOp op, double level, bool negate, int64_t width,
                      int64_t height) {
  const double l = level / kLevelDenom;
  switch (op) {
    case O::kAutoContrast: case O::kEqualize: case O::kInvert: return 0;
    case O::kRotate: return signed_by(l * 30., negate);
    case O::kPosterize: return py_int(l * 4);
    case O::kPosterizeIncreasing: return 4 - py_int(l * 4);
    case O::kPosterizeOriginal: return py_int(l * 4) + 4;
    case O::kSolarize: return std::min(256.0, py_int(l * 256));
    case O::kSolarizeIncreasing: return 256 - std::min(256.0, py_int(l * 256));
    case O::kSolarizeAdd: return std::min(128.0, py_int(l * 110));
    case O::kColor: case O::kContrast: case O::kBrightness: case O::kSharpness: return l * 1.8 + 0.1;
    case O::kColorIncreasing: case O::kContrastIncreasing: case O::kBrightnessIncreasing: case O::kSharpnessIncreasing:
      return std::max(0.1, 1.0 + signed_by(l * .9, negate));
    case O::kShearX: case O::kShearY: return signed_by(l * 0.3, negate);
    case O::kTranslateX: case O::kTranslateY: return signed_by(l * p.translate_const, negate);
    case O::kTranslateXRel: return signed_by(l * p.translate_pct, negate) * static_cast<double>(width);
    case O::kTranslateYRel: return signed_by(l * p.translate_pct, negate) * static_cast<double>(height);
    case O::kDesaturate: return std::min(1., std::max(0., 1. - minmax(level, 0.5, 1.0)));
    case O::kGaussianBlur: return minmax(level, 0.1, 2.0);
    case O::kGaussianBlurRand: return minmax(level, 0.0, 1.0);
  }
  return 0;
}

namespace {

// Each chosen op's draws, in order: skipped when u > probability, the level (noise, clamped to
// [0, magnitude_max or 10]), the sign, the filter, the blur radius.
std::vector<TimmStep> draw_steps(const TimmAugmentParams& p, const std::vector<size_t>& chosen, int64_t height,
                                 int64_t width, RandomStream& rng) {
  std::vector<TimmStep> steps;
  const double upper = p.magnitude_max > 0 ? p.magnitude_max : kLevelDenom;
  for (size_t i : chosen) {
    const double prob = p.probabilities[i];
    if (prob < 1.0 && rng.uniform_double() > prob) continue;
    double level = p.magnitudes[i];
    if (p.magnitude_uniform)
      level = rng.uniform(0.0, level);
    else if (p.magnitude_std > 0)
      level = level + p.magnitude_std * rng.normal();
    level = std::max(0., std::min(level, upper));
    TimmStep s;
    s.op = p.ops[i];
    const bool negate = has_level(s.op) && takes_sign(s.op) && rng.uniform_double() > 0.5;
    s.arg = timm_level_arg(p, s.op, level, negate, width, height);
    if (timm_op_geometric(s.op))
      s.filter = p.filters.size() == 1 ? p.filters[0] : p.filters[rng.below(p.filters.size())];
    if (s.op == O::kGaussianBlurRand) s.arg = rng.uniform(0.1, 2.0 * s.arg);  // the radius
    steps.push_back(s);
  }
  return steps;
}

}  // namespace

TimmAugMixDraw draw_timm_augmix(const TimmAugmentParams& p, int64_t height, int64_t width, RandomStream& rng) {
  TimmAugMixDraw d;
  d.weights.resize(static_cast<size_t>(p.width));
  rng.dirichlet(p.alpha, d.weights);
  d.blend = static_cast<float>(rng.beta(p.alpha, p.alpha));
  std::vector<size_t> chosen;
  for (int c = 0; c < p.width; ++c) {
    const int depth = p.depth > 0 ? p.depth : 1 + static_cast<int>(rng.below(3));
    chosen.clear();
    for (int k = 0; k < depth; ++k) chosen.push_back(static_cast<size_t>(rng.below(p.ops.size())));
    d.chains.push_back(draw_steps(p, chosen, height, width, rng));
  }
  return d;
}

std::vector<TimmStep> draw_timm_augment(const TimmAugmentParams& p, int64_t height, int64_t width,
                                        RandomStream& rng) {
  // Which ops, in the order they apply.
  std::vector<size_t> chosen;
  if (p.policy == TimmAugmentParams::Policy::kAutoAugment) {
    const size_t g = static_cast<size_t>(rng.below(p.groups.size()));
    const size_t first = static_cast<size_t>(std::accumulate(p.groups.begin(), p.groups.begin() + g, 0));
    for (int i = 0; i < p.groups[g]; ++i) chosen.push_back(first + i);
  } else if (p.weights.empty()) {
    for (int i = 0; i < p.num_layers; ++i) chosen.push_back(static_cast<size_t>(rng.below(p.ops.size())));
  } else {
    // numpy's choice(replace=False, p): the law of drawing one at a time from what is left,
    // renormalised.
    std::vector<double> w = p.weights;
    for (int i = 0; i < p.num_layers; ++i) {
      const double total = std::accumulate(w.begin(), w.end(), 0.0);
      const double u = rng.uniform_double() * total;
      double acc = 0;
      size_t k = 0, last = 0;
      for (; k < w.size(); ++k) {
        if (w[k] <= 0) continue;
        last = k;
        acc += w[k];
        if (u < acc) break;
      }
      if (k == w.size()) k = last;  // u at the top of the last interval by rounding
      chosen.push_back(k);
      w[k] = 0;
    }
  }
  return draw_steps(p, chosen, height, width, rng);
}

Status apply_timm_step(const TimmStep& step, const ConstTensorView& src, const TensorView& dst,
                       std::span<const uint8_t> fill, kernels::PilBlurWorkspace& ws) {
  const double a = step.arg;
  switch (step.op) {
    case O::kAutoContrast: return kernels::autocontrast(src, dst);
    case O::kEqualize: return kernels::equalize(src, dst);
    case O::kInvert: return kernels::invert(src, dst);
    case O::kRotate: return kernels::rotate(src, dst, a, step.filter, fill);
    case O::kPosterize: case O::kPosterizeIncreasing: case O::kPosterizeOriginal:
      if (a >= 8) {  // timm's posterize returns the image; fewer than 0 bits keep nothing, as 0
        copy(src, dst);
        return Status::ok();
      }
      return kernels::posterize(src, dst, static_cast<int>(std::max(0.0, a)));
    case O::kSolarize: case O::kSolarizeIncreasing: return kernels::solarize(src, dst, a);
    case O::kSolarizeAdd: return kernels::solarize_add(src, dst, static_cast<int>(a), 128);
    case O::kColor: case O::kColorIncreasing: case O::kDesaturate: return kernels::enhance_color(src, dst, a);
    case O::kContrast: case O::kContrastIncreasing: return kernels::enhance_contrast(src, dst, a);
    case O::kBrightness: case O::kBrightnessIncreasing: return kernels::enhance_brightness(src, dst, a);
    case O::kSharpness: case O::kSharpnessIncreasing: return kernels::enhance_sharpness(src, dst, a);
    case O::kShearX: return kernels::affine_transform(src, dst, {1, a, 0, 0, 1, 0}, step.filter, fill);
    case O::kShearY: return kernels::affine_transform(src, dst, {1, 0, 0, a, 1, 0}, step.filter, fill);
    case O::kTranslateX: case O::kTranslateXRel:
      return kernels::affine_transform(src, dst, {1, 0, a, 0, 1, 0}, step.filter, fill);
    case O::kTranslateY: case O::kTranslateYRel:
      return kernels::affine_transform(src, dst, {1, 0, 0, 0, 1, a}, step.filter, fill);
    case O::kGaussianBlur: case O::kGaussianBlurRand:
      return kernels::pil_gaussian_blur(src, dst, static_cast<float>(a), ws);
  }
  return Status::internal("unknown timm op");
}

}  // namespace hdl
