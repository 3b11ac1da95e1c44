// The hybrid JPEG decode's host twin (decoders/jpeg/hybrid_jpeg.h, hybrid_batch.h, decoders/kernels/jpeg_hybrid.h)
// against libjpeg-turbo (JpegDecoder, the CPU path), bit for bit: every JPEG of the corpus
// (imagenet/train and val, tests/jpeg/ok and exotic) and Pillow re-encodes of corpus photos
// (quality 75-85, 4:2:0, made at test time: "holdout-style" photos), whole images at scale 1,
// 1/2, 1/4 and 1/8 and random windows at each scale, coefficients from libjpeg
// (jpeg_read_coefficients) and from the entry-point index (JpegWindowEntropy). Files the
// hybrid path does not decode are counted by reason and printed; files libjpeg cannot decode
// are not compared. Under AddressSanitizer the sweep takes every 12th file of the corpus
// (HDL_HYBRID_SWEEP_STEP overrides the step; 1: every file).
#include <gtest/gtest.h>

// clang-format off
#include <cstdio>
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "decoders/jpeg/hybrid_batch.h"
#include "decoders/jpeg/hybrid_jpeg.h"
#include "decoders/jpeg/index_cache.h"
#include "decoders/jpeg/jpeg_decoder.h"
#include "decoders/kernels/jpeg_hybrid.h"
#include "tests/decoders/decoder_test_util.h"

namespace hdl {
namespace {

using testing::corpus_dir;
using testing::Image8;
using testing::read_file;
namespace fs = std::filesystem;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kDefaultStep = 12;
#else
constexpr int kDefaultStep = 1;
#endif

int sweep_step() {
  const char* v = std::getenv("HDL_HYBRID_SWEEP_STEP");
  return v && std::atoi(v) > 0 ? std::atoi(v) : kDefaultStep;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::vector<fs::path> jpeg_files(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
    if (ext == ".jpeg" || ext == ".jpg") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The hybrid decode of `req` on the CPU.
Result<Image8> hybrid_decode(HybridJpegDecoder& dec, std::span<const uint8_t> bytes, const DecodeRequest& req,
                             DecodeReport* report = nullptr) {
  HDL_ASSIGN_OR_RETURN(HybridJpegPlan plan, dec.plan(bytes, req));
  Image8 img{plan.shape[1], plan.shape[0], int(plan.shape[2]), std::vector<uint8_t>(size_t(plan.shape.num_elements()))};
  HDL_ASSIGN_OR_RETURN(DecodeReport r, dec.decode_host(bytes, req, TensorView(img.px.data(), plan.shape, DType::kU8, Layout::kHWC)));
  if (report) *report = r;
  return img;
}

int64_t differing_pixels(const Image8& a, const Image8& b) {
  if (a.w != b.w || a.h != b.h || a.c != b.c) return std::max<int64_t>(1, a.w * a.h);
  int64_t n = 0;
  for (size_t i = 0; i < a.px.size(); i += size_t(a.c))
    n += !std::equal(a.px.begin() + ptrdiff_t(i), a.px.begin() + ptrdiff_t(i) + a.c, b.px.begin() + ptrdiff_t(i));
  return n;
}

// libjpeg's own per-component choices at scale 1/d (jpeg_calc_output_dimensions), to check the
// plan's replay of them.
struct LibjpegGeometry {
  int scaled_size[3] = {};
  int64_t samples_w[3] = {}, samples_h[3] = {};
  bool ok = false;
};
LibjpegGeometry libjpeg_geometry(std::span<const uint8_t> bytes, int d) {
  LibjpegGeometry g;
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  err.error_exit = [](j_common_ptr) { throw 1; };
  err.output_message = [](j_common_ptr) {};
  jpeg_create_decompress(&cinfo);
  try {
    jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&cinfo, TRUE);
    cinfo.scale_num = 1;
    cinfo.scale_denom = unsigned(d);
    cinfo.out_color_space = cinfo.num_components == 1 ? JCS_GRAYSCALE : JCS_EXT_RGB;
    jpeg_calc_output_dimensions(&cinfo);
    for (int c = 0; c < std::min(cinfo.num_components, 3); ++c) {
      g.scaled_size[c] = cinfo.comp_info[c].DCT_scaled_size;
      g.samples_w[c] = cinfo.comp_info[c].downsampled_width;
      g.samples_h[c] = cinfo.comp_info[c].downsampled_height;
    }
    g.ok = true;
  } catch (int) {
  }
  jpeg_destroy_decompress(&cinfo);
  return g;
}

// What the sweep counted.
struct Tally {
  int64_t files = 0, compared_files = 0, images = 0, windows = 0, indexed_windows = 0, pixels = 0, differing = 0;
  std::map<std::string, int64_t> skipped;  // reason -> files
  std::map<std::string, int64_t> layouts;  // compared files by layout
  std::map<int, int64_t> per_scale;        // images + windows compared at each scale
  std::vector<std::string> failures;

  void merge(const Tally& o) {
    files += o.files, compared_files += o.compared_files, images += o.images, windows += o.windows;
    indexed_windows += o.indexed_windows, pixels += o.pixels, differing += o.differing;
    for (auto& [k, v] : o.skipped) skipped[k] += v;
    for (auto& [k, v] : o.layouts) layouts[k] += v;
    for (auto& [k, v] : o.per_scale) per_scale[k] += v;
    failures.insert(failures.end(), o.failures.begin(), o.failures.end());
  }
};

// One worker's decoders.
struct Worker {
  std::unique_ptr<ImageDecoder> ref = make_jpeg_decoder();
  HybridJpegDecoder hybrid;
  JpegIndexCache cache{size_t(256) << 20};
  std::mt19937_64 rng;
};

std::string short_reason(const Status& s) {
  std::string m = s.message();
  return std::string(s.code() == StatusCode::kUnsupported ? "unsupported: " : "error: ") + m;
}

// How much of the matrix a sweep checks per file.
struct Coverage {
  bool every_scale = true;  // every file at 1, 1/2, 1/4, 1/8; else one scale per file, in turn
  int windows = 1;          // random windows per file and scale (one on images over 4 MP)
};

// Every check on one file at its scales: the whole image against JpegDecoder's full decode,
// the plan against libjpeg's own per-component choices, random windows (alternately through
// libjpeg's coefficients and through the entry-point index) against the full decode's crop.
void sweep_file(const fs::path& path, uint64_t key, Worker& w, const Coverage& cov, Tally& t) {
  const std::vector<uint8_t> bytes = read_file(path);
  const std::string name = fs::relative(path, corpus_dir()).string();
  ++t.files;
  auto info = w.ref->read_info(bytes);
  if (!info.is_ok()) {
    ++t.skipped["libjpeg cannot read it (" + std::string(status_code_name(info.status().code())) + ")"];
    return;
  }
  const std::string layout = info->color_space + " " + info->subsampling + (info->progressive ? " progressive" : "");
  // The full decode at scale 1/d (as the request asks for it: the whole image, at least
  // ceil(W/d) x ceil(H/d)), made once per scale.
  std::map<int, Image8> refs;
  std::string ref_error;
  auto ref_at = [&](int d) -> const Image8* {
    if (auto it = refs.find(d); it != refs.end()) return &it->second;
    DecodeRequest req;
    req.min_width = ceil_div(info->width, d);
    req.min_height = ceil_div(info->height, d);
    DecodeReport rep;
    auto img = testing::decode_with(*w.ref, bytes, req, &rep);
    if (!img.is_ok()) {
      ref_error = img.status().message();
      return nullptr;
    }
    return &refs.emplace(rep.scale_denom, std::move(*img)).first->second;
  };
  // Images over 4 MP (the phone photos of tests/jpeg/ok/large) take one scale and one window,
  // as the corpus photos do: the host twin is scalar (about 30 ns a pixel).
  const bool large = info->width * info->height > (4 << 20);
  std::vector<int> scales = {1, 2, 4, 8};
  if (!cov.every_scale || large) scales = {scales[key % 4]};
  const int windows = large ? std::min(cov.windows, 1) : cov.windows;
  for (int d : scales) {
    const Image8* ref = ref_at(d);
    if (!ref) {
      ++t.skipped["libjpeg does not decode it (" + ref_error + ")"];
      return;
    }
    DecodeRequest req;
    req.min_width = ceil_div(info->width, d);
    req.min_height = ceil_div(info->height, d);
    DecodeReport rep;
    auto hyb = hybrid_decode(w.hybrid, bytes, req, &rep);
    if (!hyb.is_ok()) {
      if (hyb.status().code() != StatusCode::kUnsupported)
        t.failures.push_back(name + ": hybrid failed where libjpeg decodes: " + hyb.status().to_string());
      ++t.skipped[short_reason(hyb.status())];
      return;
    }
    // The plan replays libjpeg's choices.
    auto plan = w.hybrid.plan(bytes, req);
    const LibjpegGeometry lg = libjpeg_geometry(bytes, rep.scale_denom);
    if (plan.is_ok() && lg.ok) {
      for (int c = 0; c < plan->components; ++c) {
        const auto& k = plan->geometry.comp[c];
        if (k.scaled_size != lg.scaled_size[c] || k.samples_w != lg.samples_w[c] || k.samples_h != lg.samples_h[c])
          t.failures.push_back(name + ": component " + std::to_string(c) + " at 1/" + std::to_string(d) +
                               " differs from libjpeg's geometry");
      }
    }
    const int64_t bad = differing_pixels(*hyb, *ref);
    if (bad) t.failures.push_back(name + " at 1/" + std::to_string(d) + ": " + std::to_string(bad) + " pixels differ");
    ++t.images;
    ++t.per_scale[rep.scale_denom];
    t.pixels += ref->w * ref->h;
    t.differing += bad;
    // Random windows at this scale (requests whose scale comes out as d, or coarser for small
    // windows), alternately through the index.
    for (int k = 0; k < windows; ++k) {
      std::uniform_int_distribution<int64_t> xw(1, info->width), yh(1, info->height);
      Roi roi;
      roi.w = xw(w.rng), roi.h = yh(w.rng);
      roi.x = std::uniform_int_distribution<int64_t>(0, info->width - roi.w)(w.rng);
      roi.y = std::uniform_int_distribution<int64_t>(0, info->height - roi.h)(w.rng);
      DecodeRequest wreq;
      wreq.roi = roi;
      wreq.min_width = ceil_div(roi.w, d);
      wreq.min_height = ceil_div(roi.h, d);
      const bool indexed = (key / 4 + uint64_t(k)) % 2 == 1;
      if (indexed) {
        wreq.index_cache = &w.cache;
        wreq.index_key = key;
        wreq.index_every_file = true;
      }
      const auto before = w.hybrid.stats();
      DecodeReport wrep;
      auto win = hybrid_decode(w.hybrid, bytes, wreq, &wrep);
      if (!win.is_ok()) {
        t.failures.push_back(name + ": window failed: " + win.status().to_string());
        continue;
      }
      const int64_t sd = wrep.scale_denom;
      const Image8* full = ref_at(int(sd));
      if (!full) {
        t.failures.push_back(name + ": no full decode at 1/" + std::to_string(sd) + ": " + ref_error);
        continue;
      }
      const Image8 crop = full->crop(roi.x / sd, roi.y / sd, ceil_div(roi.w, sd), ceil_div(roi.h, sd));
      const int64_t wbad = differing_pixels(*win, crop);
      if (wbad)
        t.failures.push_back(name + " window (" + std::to_string(roi.x) + "," + std::to_string(roi.y) + " " +
                             std::to_string(roi.w) + "x" + std::to_string(roi.h) + ") at 1/" + std::to_string(sd) +
                             (indexed ? " indexed" : "") + ": " + std::to_string(wbad) + " pixels differ");
      ++t.windows;
      ++t.per_scale[int(sd)];
      t.indexed_windows += w.hybrid.stats().indexed - before.indexed;
      t.pixels += crop.w * crop.h;
      t.differing += wbad;
    }
  }
  ++t.compared_files;
  ++t.layouts[layout];
}

Tally sweep(const std::vector<fs::path>& files, const Coverage& cov, uint64_t seed) {
  Tally total;
  std::mutex mu;
  std::atomic<size_t> next{0};
  const unsigned threads = std::max(1u, std::min(2u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      Worker w;
      w.rng.seed(seed + i);
      Tally t;
      for (size_t f; (f = next.fetch_add(1)) < files.size();) sweep_file(files[f], f, w, cov, t);
      std::lock_guard<std::mutex> lock(mu);
      total.merge(t);
    });
  }
  for (auto& th : pool) th.join();
  return total;
}

void report(const char* what, const Tally& t) {
  std::cout << what << ": " << t.files << " files, " << t.compared_files << " compared (" << t.images
            << " whole images, " << t.windows << " windows of which " << t.indexed_windows << " through the index; "
            << t.pixels << " pixels), " << t.differing << " pixels differ\n  per scale:";
  for (auto& [d, n] : t.per_scale) std::cout << " 1/" << d << ": " << n;
  std::cout << "\n  layouts compared:";
  for (auto& [k, n] : t.layouts) std::cout << " [" << k << "] " << n << ";";
  std::cout << "\n";
  for (auto& [k, n] : t.skipped) std::cout << "  skipped " << n << ": " << k << "\n";
  for (size_t i = 0; i < t.failures.size() && i < 20; ++i) ADD_FAILURE() << t.failures[i];
  EXPECT_TRUE(t.failures.empty()) << t.failures.size() << " failures";
  EXPECT_EQ(t.differing, 0);
}

std::vector<fs::path> every(const std::vector<fs::path>& v, int step) {
  std::vector<fs::path> out;
  for (size_t i = 0; i < v.size(); i += size_t(step)) out.push_back(v[i]);
  return out;
}

// --- The corpus ----------------------------------------------------------------------------------

TEST(HybridJpeg, HostTwinEqualsLibjpegOnTheCorpusPhotos) {
  HDL_REQUIRE_CORPUS();
  std::vector<fs::path> files = jpeg_files(corpus_dir() / "imagenet");
  ASSERT_GT(files.size(), 100u);
  const int step = sweep_step();
  files = every(files, step);
  // Every file once: the whole image and a random window at one scale per file (1, 1/2, 1/4,
  // 1/8 in turn, so each scale meets a quarter of the photos); HDL_HYBRID_SWEEP_FULL=1 checks
  // every file at every scale with two windows each (minutes).
  const char* full = std::getenv("HDL_HYBRID_SWEEP_FULL");
  const bool every_scale = full && std::string(full) == "1";
  const Tally t = sweep(files, Coverage{every_scale, every_scale ? 2 : 1}, 1);
  std::cout << "(every " << step << ". file of imagenet/train and val, " << (every_scale ? "every scale" : "one scale per file")
            << ")\n";
  report("corpus photos", t);
  EXPECT_GT(t.compared_files, int64_t(files.size() * 9 / 10));
  EXPECT_GT(t.indexed_windows, 0);
}

TEST(HybridJpeg, HostTwinEqualsLibjpegOnTheTestJpegs) {
  HDL_REQUIRE_CORPUS();
  std::vector<fs::path> files = jpeg_files(corpus_dir() / "tests" / "jpeg" / "ok");
  for (auto& f : jpeg_files(corpus_dir() / "tests" / "jpeg" / "exotic")) files.push_back(f);
  ASSERT_GT(files.size(), 20u);
  const Tally t = sweep(files, Coverage{true, 1}, 2);
  report("tests/jpeg/ok and exotic", t);
  // Every layout of the test files: 4:4:4, 4:2:2, 4:2:0, 4:4:0, 4:1:1, 4:1:0, gray, RGB, ...
  EXPECT_GE(t.layouts.size(), 10u);
}

// Photos as a camera or a web pipeline writes them (Pillow's libjpeg at quality 75-85, 4:2:0,
// optimised or not, progressive or not): made from corpus photos at test time.
TEST(HybridJpeg, HostTwinEqualsLibjpegOnHoldoutStylePhotos) {
  HDL_REQUIRE_CORPUS();
  std::vector<fs::path> sources = jpeg_files(corpus_dir() / "imagenet" / "val");
  ASSERT_GT(sources.size(), 24u);
  testing::PillowRefs pillow;
  std::vector<fs::path> files;
  for (int i = 0; i < 24; ++i) {
    const int quality = 75 + (i * 37) % 11;
    std::string args = "JPEG;RGB;quality=" + std::to_string(quality) + ";subsampling=2";
    if (i % 3 == 1) args += ";optimize=1";
    if (i % 3 == 2) args += ";progressive=1";
    files.push_back(pillow.add("encode", sources[size_t(i) * sources.size() / 24], args, ".jpg"));
  }
  pillow.run();
  const Tally t = sweep(files, Coverage{true, 2}, 3);
  report("Pillow re-encodes (q75-85, 4:2:0)", t);
  EXPECT_EQ(t.compared_files, 24);
}

// --- Requests: orientation, colour, windows at MCU edges ----------------------------------------

TEST(HybridJpeg, EqualsJpegDecoderForOrientationColourAndMcuEdges) {
  HDL_REQUIRE_CORPUS();
  const fs::path dir = corpus_dir() / "tests" / "jpeg" / "ok";
  std::vector<fs::path> files;
  for (int o = 1; o <= 8; ++o) files.push_back(dir / ("imaging_orientation_" + std::to_string(o) + ".jpg"));
  for (const char* f : {"go_video001_q50_420.jpg", "go_video001_q50_422_prog.jpg", "go_video001_q50_411.jpg",
                        "go_video001_q50_440.jpg", "go_video005_gray.jpg", "go_video001_rgb_adobe.jpg"})
    files.push_back(dir / f);
  auto ref = make_jpeg_decoder();
  HybridJpegDecoder hybrid;
  JpegIndexCache cache(size_t(64) << 20);
  int64_t compared = 0;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    ASSERT_TRUE(fs::exists(files[fi])) << files[fi];
    const std::vector<uint8_t> bytes = read_file(files[fi]);
    auto info = ref->read_info(bytes);
    ASSERT_TRUE(info.is_ok());
    const int64_t ow = info->oriented_width(true), oh = info->oriented_height(true);
    for (ColorFormat color : {ColorFormat::kRGB, ColorFormat::kBGR, ColorFormat::kGray}) {
      for (int d : {1, 2, 4, 8}) {
        // Windows whose edges fall on, and one pixel beside, MCU boundaries (16-pixel MCUs at
        // most, times the scale), and the whole image.
        const int64_t m = 16 * d;
        const Roi rois[] = {{}, {m, m, std::min(ow - m, 2 * m), std::min(oh - m, 2 * m)},
                            {m - 1, m + 1, std::min(ow - m + 1, 2 * m + 2), std::min(oh - m - 1, m)},
                            {m + 1, m - 1, std::min(ow - m - 1, 3 * m - 1), std::min(oh - m + 1, 2 * m + 1)},
                            {0, oh / 2, ow, oh - oh / 2}};
        for (const Roi& roi : rois) {
          if (!roi.empty() && (roi.w <= 0 || roi.h <= 0)) continue;
          for (bool indexed : {false, true}) {
            DecodeRequest req;
            req.color = color;
            req.apply_orientation = true;
            req.roi = roi;
            const int64_t rw = roi.empty() ? ow : roi.w, rh = roi.empty() ? oh : roi.h;
            req.min_width = ceil_div(rw, d);
            req.min_height = ceil_div(rh, d);
            if (indexed) req.index_cache = &cache, req.index_key = fi, req.index_every_file = true;
            DecodeReport want_rep, got_rep;
            auto want = testing::decode_with(*ref, bytes, req, &want_rep);
            ASSERT_TRUE(want.is_ok()) << files[fi] << ": " << want.status().to_string();
            auto got = hybrid_decode(hybrid, bytes, req, &got_rep);
            ASSERT_TRUE(got.is_ok()) << files[fi] << ": " << got.status().to_string();
            EXPECT_EQ(got_rep.scale_denom, want_rep.scale_denom);
            EXPECT_EQ(differing_pixels(*got, *want), 0)
                << files[fi].filename() << " colour " << color_format_name(color) << " 1/" << d << " roi " << roi.x
                << "," << roi.y << " " << roi.w << "x" << roi.h << (indexed ? " indexed" : "");
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(hybrid.stats().indexed, 0);
  std::cout << compared << " decodes equal JpegDecoder's\n";
}

// --- Synthetic blocks: the IDCTs' range ------------------------------------------------------

// A JPEG written from coefficients (jpeg_write_coefficients): every block random, a `density`
// share of its AC coefficients up to `cmax` in magnitude (DC always), every table entry `q`;
// gray or YCbCr with luma sampled h x v.
std::vector<uint8_t> synthetic_jpeg(int W, int H, int ncomp, int h, int v, int q, int cmax, double density,
                                    uint32_t seed) {
  jpeg_compress_struct c{};
  jpeg_error_mgr e{};
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = JDIMENSION(W);
  c.image_height = JDIMENSION(H);
  c.input_components = ncomp;
  c.in_color_space = ncomp == 1 ? JCS_GRAYSCALE : JCS_YCbCr;
  jpeg_set_defaults(&c);
  c.optimize_coding = TRUE;
  if (ncomp == 3) c.comp_info[0].h_samp_factor = h, c.comp_info[0].v_samp_factor = v;
  unsigned int table[64];
  std::fill(table, table + 64, unsigned(q));
  jpeg_add_quant_table(&c, 0, table, 100, TRUE);
  jpeg_add_quant_table(&c, 1, table, 100, TRUE);
  std::vector<jvirt_barray_ptr> arrays(size_t(ncomp), nullptr);
  const int max_h = ncomp == 3 ? h : 1, max_v = ncomp == 3 ? v : 1;
  for (int k = 0; k < ncomp; ++k) {
    const int kh = k == 0 ? max_h : 1, kv = k == 0 ? max_v : 1;
    const int64_t wb = ceil_div(ceil_div(int64_t(W) * kh, 8 * max_h), kh) * kh;
    const int64_t hb = ceil_div(ceil_div(int64_t(H) * kv, 8 * max_v), kv) * kv;
    arrays[size_t(k)] = (*c.mem->request_virt_barray)(reinterpret_cast<j_common_ptr>(&c), JPOOL_IMAGE, TRUE,
                                                       JDIMENSION(wb), JDIMENSION(hb), JDIMENSION(kv));
  }
  jpeg_write_coefficients(&c, arrays.data());
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> coin(0, 1);
  std::uniform_int_distribution<int> value(-cmax, cmax), dc(-std::min(cmax, 1023), std::min(cmax, 1023));
  for (int k = 0; k < ncomp; ++k) {
    const jpeg_component_info& ci = c.comp_info[k];
    const JDIMENSION rows = JDIMENSION(ceil_div(ci.height_in_blocks, ci.v_samp_factor) * ci.v_samp_factor);
    const JDIMENSION cols = JDIMENSION(ceil_div(ci.width_in_blocks, ci.h_samp_factor) * ci.h_samp_factor);
    for (JDIMENSION y = 0; y < rows; ++y) {
      JBLOCKARRAY row = (*c.mem->access_virt_barray)(reinterpret_cast<j_common_ptr>(&c), arrays[size_t(k)], y, 1, TRUE);
      for (JDIMENSION x = 0; x < cols; ++x)
        for (int i = 0; i < 64; ++i) row[0][x][i] = JCOEF(i == 0 ? dc(rng) : coin(rng) < density ? value(rng) : 0);
    }
  }
  jpeg_finish_compress(&c);
  std::vector<uint8_t> out(buf, buf + size);
  std::free(buf);
  jpeg_destroy_compress(&c);
  return out;
}

// Blocks far from a photo's (noise at every frequency, values clipped to 0 and 255 everywhere)
// with dequantised coefficients up to 1024 on 30% of the positions: the host twin equals the
// CPU path (libjpeg-turbo's SIMD IDCTs, whose range limit saturates) at every scale and in
// every layout here. Past that, libjpeg-turbo's 16-bit SIMD arithmetic saturates and wraps
// where its C code (and the twin) does not: measured first differences at 2048 (docs/CUDA.md).
TEST(HybridJpeg, SyntheticBlocksEqualLibjpegUpToItsSimdRange) {
  if (const char* v = std::getenv("JSIMD_FORCENONE"); v && std::string(v) == "1")
    GTEST_SKIP() << "JSIMD_FORCENONE=1: libjpeg-turbo's C IDCTs wrap out-of-range values where its SIMD ones (the twin's model) saturate";
  auto ref = make_jpeg_decoder();
  HybridJpegDecoder hybrid;
  struct Layout {
    int ncomp, h, v;
  } layouts[] = {{1, 1, 1}, {3, 2, 2}, {3, 2, 1}, {3, 1, 2}, {3, 1, 1}, {3, 4, 1}};
  int64_t values = 0, differing = 0;
  uint32_t seed = 0;
  for (const Layout& l : layouts)
    for (int q : {1, 4, 16, 64, 255})
      for (int cmax : {8, 64, 1023}) {
        if (int64_t(q) * std::min(cmax, 1023) > 1024) continue;
        const std::vector<uint8_t> bytes = synthetic_jpeg(61, 45, l.ncomp, l.h, l.v, q, cmax, 0.3, ++seed);
        for (int d : {1, 2, 4, 8}) {
          DecodeRequest req;
          req.min_width = ceil_div(61, d);
          req.min_height = ceil_div(45, d);
          auto want = testing::decode_with(*ref, bytes, req);
          ASSERT_TRUE(want.is_ok()) << want.status().to_string();
          auto got = hybrid_decode(hybrid, bytes, req);
          ASSERT_TRUE(got.is_ok()) << got.status().to_string();
          const int64_t bad = differing_pixels(*got, *want);
          EXPECT_EQ(bad, 0) << "layout " << l.ncomp << " " << l.h << "x" << l.v << " q " << q << " cmax " << cmax
                            << " at 1/" << d;
          values += int64_t(want->px.size());
          differing += bad;
        }
      }
  std::cout << values << " values of synthetic blocks compared, " << differing << " pixels differ\n";
}

// --- The batch: layout, numbering, one host twin call for many images ---------------------------

TEST(HybridJpeg, ABatchOfManyImagesEqualsTheirSingleDecodes) {
  HDL_REQUIRE_CORPUS();
  std::vector<fs::path> files = every(jpeg_files(corpus_dir() / "imagenet" / "train"), 97);
  files.resize(std::min<size_t>(files.size(), 24));
  auto ref = make_jpeg_decoder();
  HybridJpegDecoder hybrid;
  HybridJpegBatch batch;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<DecodeRequest> reqs;
  std::vector<HybridJpegPlan> plans;
  std::vector<int64_t> offsets;
  int64_t out_bytes = 0;
  std::mt19937 rng(7);
  for (size_t i = 0; i < files.size(); ++i) {
    bytes.push_back(read_file(files[i]));
    auto info = ref->read_info(bytes.back());
    ASSERT_TRUE(info.is_ok());
    DecodeRequest req;
    req.color = i % 5 == 4 ? ColorFormat::kGray : ColorFormat::kRGB;
    if (i % 2) {  // a random crop scaled toward 112 x 112, as a training pipeline asks
      req.roi.w = std::uniform_int_distribution<int64_t>(info->width / 3, info->width)(rng);
      req.roi.h = std::uniform_int_distribution<int64_t>(info->height / 3, info->height)(rng);
      req.roi.x = std::uniform_int_distribution<int64_t>(0, info->width - req.roi.w)(rng);
      req.roi.y = std::uniform_int_distribution<int64_t>(0, info->height - req.roi.h)(rng);
      req.min_width = req.min_height = 112;
    }
    auto plan = hybrid.plan(bytes.back(), req);
    if (!plan.is_ok()) continue;
    const Shape s = plan->shape;
    // Slots with a row stride wider than the image (a batch tensor's padded rows).
    offsets.push_back(out_bytes);
    batch.add(*plan, out_bytes, (s[1] + 3) * s[2], s[2]);
    out_bytes += s[0] * (s[1] + 3) * s[2];
    reqs.push_back(req);
    plans.push_back(*plan);
  }
  ASSERT_GE(batch.size(), 20);
  std::vector<uint8_t> upload(batch.upload_bytes());
  batch.write_geometry(upload.data());
  for (int i = 0; i < batch.size(); ++i) {
    ASSERT_EQ(batch.blocks(i), plans[size_t(i)].blocks);
    auto coefs = std::span<int16_t>(batch.coefficients(upload.data(), i), size_t(batch.blocks(i)) * 64);
    auto quant = std::span<uint16_t>(batch.quant(upload.data(), i), 64 * kernels::kJpegMaxComponents);
    ASSERT_TRUE(hybrid.decode_coefficients(bytes[size_t(i)], plans[size_t(i)], reqs[size_t(i)], coefs, quant).is_ok());
  }
  // The device kernels' block and pixel lookups find every block's and pixel's image.
  const auto& images = batch.images();
  for (int64_t n = 0; n < batch.blocks(); n += 37) {
    const int32_t i = kernels::jpeg_image_of(images.data(), batch.size(), n, false);
    const kernels::JpegBlockRef b = kernels::jpeg_block(images[size_t(i)], n);
    ASSERT_GE(n, b.comp->block_begin);
    ASSERT_LT(n, b.comp->block_begin + int64_t(b.comp->blocks_w) * b.comp->blocks_h);
  }
  for (int64_t p = 0; p < batch.pixels(); p += 101) {
    const int32_t i = kernels::jpeg_image_of(images.data(), batch.size(), p, true);
    ASSERT_GE(p, images[size_t(i)].pixel_begin);
    ASSERT_LT(p, images[size_t(i)].pixel_begin + int64_t(images[size_t(i)].width) * images[size_t(i)].height);
  }
  std::vector<uint8_t> out(size_t(out_bytes), 0xAA), scratch;
  ASSERT_TRUE(decode_batch_host(batch, upload.data(), out.data(), out_bytes, scratch).is_ok());
  for (int i = 0; i < batch.size(); ++i) {
    auto want = testing::decode_with(*ref, bytes[size_t(i)], reqs[size_t(i)]);
    ASSERT_TRUE(want.is_ok());
    const Shape s = plans[size_t(i)].shape;
    for (int64_t y = 0; y < s[0]; ++y) {
      const uint8_t* row = out.data() + offsets[size_t(i)] + y * (s[1] + 3) * s[2];
      ASSERT_TRUE(std::equal(row, row + s[1] * s[2], want->px.data() + y * s[1] * s[2])) << "image " << i << " row " << y;
      // The padding after the row is untouched.
      ASSERT_EQ(row[s[1] * s[2]], 0xAA);
    }
  }
  // A batch that does not fit its buffers is refused before anything is written.
  const Shape last = plans.back().shape;
  const int64_t end = offsets.back() + (last[0] - 1) * (last[1] + 3) * last[2] + last[1] * last[2];
  EXPECT_TRUE(decode_batch_host(batch, upload.data(), out.data(), end, scratch).is_ok());
  EXPECT_EQ(decode_batch_host(batch, upload.data(), out.data(), end - 1, scratch).code(), StatusCode::kInvalidArgument);
}

TEST(HybridJpeg, RefusesWhatItDoesNotDecode) {
  HDL_REQUIRE_CORPUS();
  HybridJpegDecoder hybrid;
  const fs::path dir = corpus_dir() / "tests" / "jpeg";
  struct Case {
    const char* file;
    StatusCode code;
  } cases[] = {{"ok/go_video001_cmyk.jpg", StatusCode::kUnsupported},
               {"ok/wx_ycck_adobe.jpg", StatusCode::kUnsupported},
               {"exotic/dicom_ct_12bit_extended_sof1.jpg", StatusCode::kUnsupported},
               {"exotic/dicom_rgb_lossless_sof3.jpg", StatusCode::kUnsupported}};
  for (const Case& c : cases) {
    const std::vector<uint8_t> bytes = read_file(dir / c.file);
    auto plan = hybrid.plan(bytes, DecodeRequest{});
    EXPECT_EQ(plan.status().code(), c.code) << c.file << ": " << plan.status().to_string();
  }
  // Requests are checked as JpegDecoder checks them.
  const std::vector<uint8_t> bytes = read_file(dir / "ok" / "go_video001_q50_420.jpg");
  DecodeRequest req;
  req.roi = {0, 0, 100000, 10};
  EXPECT_EQ(hybrid.plan(bytes, req).status().code(), StatusCode::kInvalidArgument);
  req = DecodeRequest{};
  req.max_pixels = 100;
  EXPECT_EQ(hybrid.plan(bytes, req).status().code(), StatusCode::kResourceExhausted);
  // Truncated data: an error, or with allow_partial kUnsupported (JpegDecoder decodes the
  // partial image).
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + ptrdiff_t(bytes.size() / 2));
  Image8 img;
  req = DecodeRequest{};
  EXPECT_EQ(hybrid_decode(hybrid, cut, req).status().code(), StatusCode::kInvalidData);
  req.allow_partial = true;
  EXPECT_EQ(hybrid_decode(hybrid, cut, req).status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace hdl
