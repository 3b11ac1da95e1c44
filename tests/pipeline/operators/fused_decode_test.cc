// image_decoder's fused crop/resize on real photos (ImageNet corpus plus a few odd JPEGs: large,
// progressive, gray, CMYK, 4:1:0, and a PNG):
//   eval chain resize [256] + center_crop [224] == full decode + resize + center crop, bit for
//   bit, and within 1 grey level (mean) of torchvision's own Resize(256) + CenterCrop(224);
//   random_crop="resized" without DCT scaling == full decode + crop + resize of the same window;
//   with DCT scaling: right shape, close (mean <= 1 grey level for the eval chain at 1/2, <= 2
//   for 64x64 random crops), and the decoder did reduce.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "decoders/decoder_set.h"
#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/crop.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/pipeline.h"
#include "tests/pipeline/test_ops.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

namespace fs = std::filesystem;
using testing::TempImageFolder;

// Image folder of 12 ImageNet photos plus odd files (added to class_1).
struct Photos {
  TempImageFolder folder{2, 6};
  Photos() {
    const fs::path t = testing::corpus_dir() / "tests";
    for (const char* f : {"jpeg/ok/jxl_flower_420.jpg", "jpeg/ok/forensics_canon_prog444.jpg",
                          "jpeg/ok/gdk_cat_gray_512.jpg", "jpeg/ok/go_video001_cmyk.jpg",
                          "jpeg/ok/go_video001_q50_410_prog.jpg", "png/ok/skimage_chelsea.png"})
      folder.add_link("class_1", "z_" + fs::path(f).filename().string(), t / f);
  }
};

Tensor decode_full(const std::vector<uint8_t>& bytes) {
  DecoderSet decoders;
  auto shape = decoders.output_shape(bytes, DecodeRequest{});
  EXPECT_TRUE(shape.is_ok()) << shape.status().to_string();
  Tensor t = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
  EXPECT_TRUE(decoders.decode(bytes, DecodeRequest{}, t.view()).is_ok());
  return t;
}

// Full decode + Resize(size) + CenterCrop(crop) with the kernels, one step at a time.
Tensor separate_eval(const Tensor& full, std::vector<int64_t> size, SizeHW crop) {
  kernels::ResizeWorkspace ws;
  const SizeHW r = kernels::resize_output_size({full.shape()[0], full.shape()[1]}, size);
  Tensor resized = Tensor::empty({r.h, r.w, 3}, DType::kU8, Layout::kHWC);
  EXPECT_TRUE(kernels::resize(full.view(), resized.view(), {}, ws).is_ok());
  const CropWindow w = center_crop_window(r, crop);
  Tensor out = Tensor::empty({crop.h, crop.w, 3}, DType::kU8, Layout::kHWC);
  EXPECT_TRUE(kernels::crop(resized.view(), w.top, w.left, out.view()).is_ok());
  return out;
}

// Full decode + crop(window) + resize to `size`.
Tensor separate_crop_resize(const Tensor& full, const CropWindow& w, SizeHW size) {
  kernels::ResizeWorkspace ws;
  Tensor out = Tensor::empty({size.h, size.w, 3}, DType::kU8, Layout::kHWC);
  const ConstTensorView win = ConstTensorView(full.view()).crop_hw(w.top, w.left, w.height, w.width);
  EXPECT_TRUE(kernels::resize(win, out.view(), {}, ws).is_ok());
  return out;
}

struct Sample {
  std::string path;
  Tensor pixels;
  int64_t epoch, position;
};

// Runs file_reader -> image_decoder("decode", args) for one epoch; every sample with its file.
std::vector<Sample> run_decoder(const fs::path& root, PipelineSpec::Args args, uint64_t seed = 7) {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", root.string()}}, {}, "reader");
  auto images = spec.add("image_decoder", {files[0]}, std::move(args), {}, "decode");
  spec.set_outputs({images[0]});
  Pipeline pipe(spec, {.batch_size = 4, .num_threads = 2, .seed = seed});
  std::vector<Sample> out;
  for (const auto& b : pipe.epoch_batches()) {
    for (int64_t i = 0; i < b.outputs[0].size(); ++i)
      out.push_back({pipe.dataset().path(b.dataset_indices[i]), b.outputs[0].sample(i), b.epoch, b.batch_index * 4 + i});
  }
  return out;
}

bool same_pixels(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.num_bytes()) == 0;
}

struct Diff {
  int max = 0;
  double sum = 0;
  int64_t n = 0;
  void add(const Tensor& a, const Tensor& b) {
    for (int64_t k = 0; k < a.num_elements(); ++k) {
      const int d = std::abs(int(a.typed<uint8_t>()[k]) - int(b.typed<uint8_t>()[k]));
      max = std::max(max, d), sum += d, ++n;
    }
  }
  double mean() const { return n ? sum / static_cast<double>(n) : 0; }
};

class FusedDecodeTest : public ::testing::Test {
 protected:
  void SetUp() override { HDL_REQUIRE_CORPUS(); }
};

TEST_F(FusedDecodeTest, EvalChainEqualsSeparateDecodeResizeCenterCrop) {
  Photos photos;
  for (bool dct : {false, true}) {
    const auto samples = run_decoder(photos.folder.root(), {{"resize", {256}}, {"center_crop", {224}}, {"dct_scaling", dct}});
    ASSERT_EQ(samples.size(), 18u);
    Diff d;
    for (const Sample& s : samples) {
      ASSERT_EQ(s.pixels.shape(), (Shape{224, 224, 3}));
      const Tensor want = separate_eval(decode_full(testing::read_file(s.path)), {256}, {224, 224});
      const bool large = s.path.find("jxl_flower_420") != std::string::npos;  // 1512 >= 2 x 256: DCT 1/2
      if (!dct || !large) EXPECT_TRUE(same_pixels(s.pixels, want)) << s.path << " dct " << dct;
      if (dct && large) d.add(s.pixels, want);
    }
    if (dct) {
      std::cout << "[ fused eval, DCT 1/2 ] vs exact: max " << d.max << " mean " << d.mean() << "\n";
      EXPECT_GT(d.max, 0);  // it did decode at reduced scale
      EXPECT_LE(d.mean(), 1.0);  // measured: max 3, mean 0.25
    }
  }
}

TEST_F(FusedDecodeTest, EvalChainIsWithinOneGreyLevelOfTorchvision) {
  TempImageFolder folder(4, 6);
  const auto samples = run_decoder(folder.root(), {{"resize", {256}}, {"center_crop", {224}}, {"dct_scaling", false}});
  const fs::path out = fs::path(HDL_BINARY_DIR) / "tmp" / ("tv_eval_" + std::to_string(::getpid()) + ".bin");
  std::string cmd = "/usr/bin/python3 " HDL_SOURCE_DIR "/tests/pipeline/operators/torchvision_eval.py '" + out.string() + "' 256 224";
  for (const Sample& s : samples) cmd += " '" + s.path + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "torchvision reference failed: " << cmd;
  const auto ref = testing::read_file(out);
  fs::remove(out);
  ASSERT_EQ(ref.size(), samples.size() * 224 * 224 * 3);
  Diff d;
  for (size_t i = 0; i < samples.size(); ++i) {
    Tensor want = Tensor::empty({224, 224, 3}, DType::kU8);
    std::memcpy(want.data(), ref.data() + i * want.num_bytes(), want.num_bytes());
    d.add(samples[i].pixels, want);
  }
  std::cout << "[ fused eval ] vs torchvision Resize(256)+CenterCrop(224): max " << d.max << " mean " << d.mean() << "\n";
  EXPECT_LE(d.max, 1);
  EXPECT_LE(d.mean(), 0.01);
}

TEST_F(FusedDecodeTest, CenterCropLargerThanTheImageIsZeroPadded) {
  Photos photos;
  for (const Sample& s : run_decoder(photos.folder.root(), {{"resize", {32}}, {"center_crop", {40, 60}}, {"dct_scaling", false}})) {
    const Tensor want = separate_eval(decode_full(testing::read_file(s.path)), {32}, {40, 60});
    EXPECT_TRUE(same_pixels(s.pixels, want)) << s.path;
  }
}

// The window the operator drew for a sample: its random stream replayed.
CropWindow window_of(const Sample& s, SizeHW image, uint64_t seed = 7) {
  RandomStream rng(RandomStream::key_for(seed, "decode"), s.epoch, s.position);
  StreamDraws draws(rng);
  return random_resized_crop_window(image, {}, draws);
}

TEST_F(FusedDecodeTest, RandomCropWithoutDctEqualsDecodeCropResize) {
  Photos photos;
  const auto samples = run_decoder(photos.folder.root(), {{"random_crop", "resized"}, {"resize", {224, 224}}, {"dct_scaling", false}});
  ASSERT_EQ(samples.size(), 18u);
  for (const Sample& s : samples) {
    const Tensor full = decode_full(testing::read_file(s.path));
    const CropWindow w = window_of(s, {full.shape()[0], full.shape()[1]});
    EXPECT_TRUE(same_pixels(s.pixels, separate_crop_resize(full, w, {224, 224}))) << s.path;
  }
}

// random_interpolation: each sample's filter drawn after its window from the same stream (timm's
// RandomResizedCropAndInterpolation(interpolation='random')), with Pillow's arithmetic; both
// filters turn up, and each sample equals decode + crop + resize with its own.
TEST_F(FusedDecodeTest, RandomInterpolationDrawsEachSamplesFilterAfterItsWindow) {
  Photos photos;
  const std::vector<std::string> names = {"bilinear", "bicubic"};
  const auto samples = run_decoder(photos.folder.root(), {{"random_crop", "resized"}, {"resize", {96, 96}},
                                                          {"dct_scaling", false}, {"pillow", true},
                                                          {"random_interpolation", names}});
  ASSERT_EQ(samples.size(), 18u);
  int drawn[2] = {0, 0};
  for (const Sample& s : samples) {
    const Tensor full = decode_full(testing::read_file(s.path));
    RandomStream rng(RandomStream::key_for(7, "decode"), s.epoch, s.position);
    StreamDraws draws(rng);
    const CropWindow w = random_resized_crop_window({full.shape()[0], full.shape()[1]}, {}, draws);
    const uint64_t k = rng.below(2);
    ++drawn[k];
    kernels::ResizeOptions o;
    o.filter = kernels::parse_resize_filter(names[k].c_str());
    o.pillow = true;
    kernels::ResizeWorkspace ws;
    Tensor want = Tensor::empty({96, 96, 3}, DType::kU8, Layout::kHWC);
    ASSERT_TRUE(kernels::resize(ConstTensorView(full.view()).crop_hw(w.top, w.left, w.height, w.width), want.view(), o, ws).is_ok());
    EXPECT_TRUE(same_pixels(s.pixels, want)) << s.path << " with " << names[k];
  }
  EXPECT_GT(drawn[0], 0);
  EXPECT_GT(drawn[1], 0);
}

// The JPEG entry-point index (built on a file's first decode, used from then on) changes no
// pixel: three epochs of random crops with it equal those without it, sample for sample.
TEST_F(FusedDecodeTest, JpegIndexChangesNoPixelOverEpochs) {
  Photos photos;
  auto run = [&](int64_t index_mb) {
    PipelineSpec spec;
    auto files = spec.add("file_reader", {}, {{"file_root", photos.folder.root().string()}, {"shuffle", true}}, {}, "reader");
    auto images = spec.add("image_decoder", {files[0]},
                           {{"random_crop", "resized"}, {"scale", {0.05, 0.5}}, {"resize", {96, 96}}, {"dct_scaling", false},
                            {"index_cache_mb", index_mb}}, {}, "decode");
    spec.set_outputs({images[0]});
    Pipeline pipe(spec, {.batch_size = 4, .num_threads = 2, .seed = 5});
    std::vector<Tensor> out;
    for (int epoch = 0; epoch < 3; ++epoch)
      for (const auto& b : pipe.epoch_batches())
        for (int64_t i = 0; i < b.outputs[0].size(); ++i) out.push_back(b.outputs[0].sample(i));  // keeps its buffer
    int64_t hits = 0;
    const PipelineStats stats = pipe.stats();  // (a temporary's member would not outlive the loop's start)
    for (const auto& [name, value] : stats.operators[1].counters)
      if (name == "jpeg_index_hits") hits = value;
    EXPECT_EQ(hits > 0, index_mb > 0) << "index " << index_mb << " MB: " << hits << " hits";
    return out;
  };
  const auto with = run(64), without = run(0);
  ASSERT_EQ(with.size(), 54u);
  ASSERT_EQ(with.size(), without.size());
  for (size_t i = 0; i < with.size(); ++i) EXPECT_TRUE(same_pixels(with[i], without[i])) << "sample " << i;
}

// Streamed shard samples have no stable index (a position holds another sample each epoch),
// but their shard and key name them: the JPEG index is keyed by that, and is used from the
// second epoch on, with the pixels of decodes without it.
TEST_F(FusedDecodeTest, StreamedShardSamplesUseTheJpegIndexWithTheSamePixels) {
  const fs::path dir = fs::temp_directory_path() / ("hdl_fused_stream_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  const fs::path t = testing::corpus_dir() / "tests/jpeg/ok";
  std::string members;
  int k = 0;
  for (const char* f : {"jxl_flower_420.jpg", "forensics_canon_prog444.jpg", "gdk_cat_gray_512.jpg",
                        "go_video001_q50_410_prog.jpg"}) {
    const std::string key = "k" + std::to_string(k);
    fs::copy_file(t / f, dir / "src" / (key + ".jpg"));
    std::ofstream(dir / "src" / (key + ".cls")) << k++ << "\n";
    members += " " + key + ".cls " + key + ".jpg";
  }
  ASSERT_EQ(std::system(("tar --format=gnu -cf " + (dir / "s.tar").string() + " -C " + (dir / "src").string() + members).c_str()), 0);
  auto run = [&](int64_t index_mb, int64_t* hits) {
    PipelineSpec spec;
    auto r = spec.add("webdataset_reader", {},
                      {{"urls", std::vector<std::string>{(dir / "s.tar").string()}}, {"mode", "streaming"},
                       {"shuffle", true}, {"shuffle_buffer", int64_t{3}}},
                      {}, "reader");
    auto images = spec.add("image_decoder", {r[0]},
                           {{"random_crop", "resized"}, {"scale", {0.05, 0.5}}, {"resize", {64, 64}}, {"dct_scaling", false},
                            {"index_cache_mb", index_mb}}, {}, "decode");
    spec.set_outputs({images[0], r[1]});
    Pipeline pipe(spec, {.batch_size = 2, .num_threads = 2, .seed = 9});
    std::vector<std::pair<int64_t, Tensor>> out;
    for (int epoch = 0; epoch < 3; ++epoch)
      for (const auto& b : pipe.epoch_batches())
        for (int64_t i = 0; i < b.outputs[0].size(); ++i)
          out.emplace_back(*b.outputs[1].sample(i).typed<int64_t>(), b.outputs[0].sample(i));
    const PipelineStats stats = pipe.stats();
    for (const auto& [name, value] : stats.operators[1].counters)
      if (name == "jpeg_index_hits") *hits = value;
    return out;
  };
  int64_t hits_with = 0, hits_without = 0;
  const auto with = run(64, &hits_with), without = run(0, &hits_without);
  ASSERT_EQ(with.size(), 12u);
  ASSERT_EQ(with.size(), without.size());
  // The gray and the 4:1:0 progressive files are not indexable (the index covers baseline
  // colour scans); the other two are hit in epochs 2 and 3.
  EXPECT_GE(hits_with, 4);
  EXPECT_EQ(hits_without, 0);
  for (size_t i = 0; i < with.size(); ++i) {
    EXPECT_EQ(with[i].first, without[i].first) << "position " << i;
    EXPECT_TRUE(same_pixels(with[i].second, without[i].second)) << "position " << i << ", sample k" << with[i].first;
  }
  fs::remove_all(dir);
}

// A streaming reader's dataset lists shards, not samples; the JPEG index budget is shared out
// over the samples in them (SourceOperator::distinct_samples). 1 MB for 150 photos in one
// shard: shared out over the one shard, the first photos' full indexes would fill it and the
// rest would go unindexed (over budget); shared over the 150 samples, every photo gets a
// coarser index within its share, shuffled or not.
TEST_F(FusedDecodeTest, StreamedShardsShareTheJpegIndexBudgetOverTheirSamples) {
  const fs::path dir = fs::temp_directory_path() / ("hdl_fused_stream_budget_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "src");
  std::vector<fs::path> photos;
  for (const auto& e : fs::recursive_directory_iterator(testing::corpus_dir() / "imagenet/train"))
    if (e.is_regular_file() && e.path().extension() == ".JPEG") photos.push_back(e.path());
  std::sort(photos.begin(), photos.end());
  ASSERT_GE(photos.size(), 150u);
  photos.resize(150);
  std::string members;
  int64_t photo_bytes = 0;
  for (size_t k = 0; k < photos.size(); ++k) {
    const std::string key = "k" + std::to_string(k);
    fs::copy_file(photos[k], dir / "src" / (key + ".jpg"));
    photo_bytes += int64_t(fs::file_size(photos[k]));
    std::ofstream(dir / "src" / (key + ".cls")) << k << "\n";
    members += " " + key + ".cls " + key + ".jpg";
  }
  // Full indexes (about a tenth of a file) would need more than the 1 MB budget.
  ASSERT_GT(photo_bytes / 10, int64_t(1) << 20);
  ASSERT_EQ(std::system(("tar --format=gnu -cf " + (dir / "s.tar").string() + " -C " + (dir / "src").string() + members).c_str()), 0);
  for (const bool shuffle : {true, false}) {
    SCOPED_TRACE(shuffle ? "shuffled" : "in order");
    PipelineSpec spec;
    auto r = spec.add("webdataset_reader", {},
                      {{"urls", std::vector<std::string>{(dir / "s.tar").string()}}, {"mode", "streaming"},
                       {"shuffle", shuffle}},
                      {}, "reader");
    auto images = spec.add("image_decoder", {r[0]},
                           {{"random_crop", "resized"}, {"resize", {64, 64}}, {"dct_scaling", false}, {"index_cache_mb", int64_t{1}}}, {},
                           "decode");
    spec.set_outputs({images[0], r[1]});
    Pipeline pipe(spec, {.batch_size = 10, .num_threads = 2, .seed = 3});
    int64_t samples = 0;
    for (const auto& b : pipe.epoch_batches()) samples += b.outputs[0].size();
    ASSERT_EQ(samples, 150);
    std::map<std::string, int64_t> c;
    const PipelineStats stats = pipe.stats();
    for (const auto& [name, value] : stats.operators[1].counters) c[name] = value;
    EXPECT_EQ(c["jpeg_index_over_budget"], 0);
    // (Progressive photos are not indexed and not counted.)
    EXPECT_GT(c["jpeg_index_files"], 120);
    EXPECT_LE(c["jpeg_index_bytes"], int64_t(1) << 20);
  }
  fs::remove_all(dir);
}

TEST_F(FusedDecodeTest, RandomCropWithoutResizeIsTheDecodedWindow) {
  Photos photos;
  for (const Sample& s : run_decoder(photos.folder.root(), {{"random_crop", "resized"}})) {
    const Tensor full = decode_full(testing::read_file(s.path));
    const CropWindow w = window_of(s, {full.shape()[0], full.shape()[1]});
    Tensor want = Tensor::empty({w.height, w.width, 3}, DType::kU8);
    copy(ConstTensorView(full.view()).crop_hw(w.top, w.left, w.height, w.width), want.view());
    EXPECT_TRUE(same_pixels(s.pixels, want)) << s.path;
  }
}

TEST_F(FusedDecodeTest, RandomCropWithDctScalingIsCloseToExact) {
  Photos photos;
  const PipelineSpec::Args base = {{"random_crop", "resized"}, {"resize", {64, 64}}};
  auto with = [&](bool dct) {
    PipelineSpec::Args a = base;
    a.push_back({"dct_scaling", dct});
    return run_decoder(photos.folder.root(), a);
  };
  const auto exact = with(false), scaled = with(true);
  ASSERT_EQ(exact.size(), scaled.size());
  Diff d;
  int reduced = 0;
  for (size_t i = 0; i < exact.size(); ++i) {
    ASSERT_EQ(scaled[i].pixels.shape(), (Shape{64, 64, 3}));
    reduced += !same_pixels(exact[i].pixels, scaled[i].pixels);
    d.add(exact[i].pixels, scaled[i].pixels);
  }
  std::cout << "[ fused random crop 64x64, DCT ] vs exact: max " << d.max << " mean " << d.mean()
            << " (" << reduced << " of " << exact.size() << " samples reduced)\n";
  EXPECT_GT(reduced, 3);
  // Measured: mean 0.93, max 42 (the window snaps to the 1/d pixel grid, so high-contrast edges
  // can move by up to d/2 source pixels).
  EXPECT_LE(d.mean(), 2.0);
}

TEST_F(FusedDecodeTest, BadArgumentsNameTheArgument) {
  TempImageFolder folder(1, 2);
  auto build = [&](PipelineSpec::Args args) {
    PipelineSpec spec;
    auto files = spec.add("file_reader", {}, {{"file_root", folder.root().string()}});
    auto images = spec.add("image_decoder", {files[0]}, std::move(args), {}, "decode");
    spec.set_outputs({images[0]});
    Pipeline p(spec, {});
  };
  auto message = [&](PipelineSpec::Args args) {
    try {
      build(std::move(args));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"center_crop", {1, 2, 3}}}).find("argument \"center_crop\" must have 0 or 1 or 2 elements"), std::string::npos);
  EXPECT_NE(message({{"random_crop", "yes"}}).find("argument \"random_crop\" must be one of"), std::string::npos);
  EXPECT_NE(message({{"scale", {0.9, 0.1}}}).find("argument \"scale\""), std::string::npos);
  EXPECT_NE(message({{"max_size", 300}}).find("argument \"max_size\""), std::string::npos);
  EXPECT_NE(message({{"resize", {256}}, {"max_size", 100}}).find("argument \"resize\""), std::string::npos);
  EXPECT_NE(message({{"random_interpolation", std::vector<std::string>{"bilinear", "area"}}})
                .find("argument \"random_interpolation\" each element must be one of"),
            std::string::npos)
      << message({{"random_interpolation", std::vector<std::string>{"bilinear", "area"}}});
}

}  // namespace
}  // namespace hdl
