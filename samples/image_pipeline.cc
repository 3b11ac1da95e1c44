// image_pipeline: the C++ API end to end. Reads an ImageFolder tree, decodes every JPEG,
// resizes it to 224x224 (torchvision-style antialiased bilinear) and batches it, then prints
// throughput and the per-operator time breakdown.
//
//   image_pipeline DATA_DIR [--batch-size 64] [--threads N] [--epochs 2] [--seed 0] [--skip-errors]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "pipeline/pipeline.h"

namespace {

struct Args {
  std::string root;
  int64_t batch_size = 64;
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  int epochs = 2;
  uint64_t seed = 0;
  bool skip_errors = false;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "image_pipeline: %s\nusage: image_pipeline DATA_DIR [--batch-size N] [--threads N] "
                       "[--epochs N] [--seed N] [--skip-errors]\n", why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> long long {
      if (i + 1 >= argc) usage(("missing value after " + arg).c_str());
      char* end = nullptr;
      const long long v = std::strtoll(argv[++i], &end, 10);
      if (*end != '\0' || v < 0) usage(("bad value for " + arg + ": " + argv[i]).c_str());
      return v;
    };
    if (arg == "--batch-size") a.batch_size = value();
    else if (arg == "--threads") a.threads = static_cast<int>(value());
    else if (arg == "--epochs") a.epochs = static_cast<int>(value());
    else if (arg == "--seed") a.seed = static_cast<uint64_t>(value());
    else if (arg == "--skip-errors") a.skip_errors = true;
    else if (!arg.empty() && arg[0] == '-') usage(("unknown option " + arg).c_str());
    else if (a.root.empty()) a.root = arg;
    else usage("more than one DATA_DIR");
  }
  if (a.root.empty()) usage("DATA_DIR is required");
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  try {
    // The pipeline: read -> decode -> resize, batched as [N, 224, 224, 3] uint8 plus labels.
    hdl::PipelineSpec spec;
    auto files = spec.add("file_reader", {}, {{"file_root", args.root}, {"shuffle", true}}, {}, "reader");
    auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}}, {}, "decode");
    auto resized = spec.add("resize", {images[0]}, {{"size", {224, 224}}}, {}, "resize");
    spec.set_outputs({resized[0], files[1]});

    hdl::PipelineOptions options;
    options.batch_size = args.batch_size;
    options.num_threads = args.threads;
    options.seed = args.seed;
    options.on_error = args.skip_errors ? hdl::ErrorPolicy::kSkip : hdl::ErrorPolicy::kRaise;
    const auto t_build = std::chrono::steady_clock::now();
    hdl::Pipeline pipe(spec, options);
    std::printf("%lld images in %zu classes under %s; %lld batches of %lld per epoch; %d threads\n",
                static_cast<long long>(pipe.dataset().size()), pipe.dataset().classes().size(), args.root.c_str(),
                static_cast<long long>(pipe.batches_per_epoch()), static_cast<long long>(args.batch_size), args.threads);

    double first_batch_s = -1;
    for (int epoch = 0; epoch < args.epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      int64_t images_seen = 0, batches = 0;
      for (const hdl::PipelineOutput& out : pipe.epoch_batches()) {
        if (first_batch_s < 0)
          first_batch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_build).count();
        if (batches == 0 && epoch == 0) {
          const hdl::Tensor& t = out.outputs[0].as_tensor();
          std::printf("first batch: images %s %s, labels %s %s\n", t.shape().to_string().c_str(),
                      hdl::dtype_name(t.dtype()), out.outputs[1].as_tensor().shape().to_string().c_str(),
                      hdl::dtype_name(out.outputs[1].dtype()));
        }
        images_seen += out.outputs[0].size();
        ++batches;
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("epoch %d: %lld images, %lld batches in %.2f s: %.1f batches/s, %.0f images/s\n", epoch,
                  static_cast<long long>(images_seen), static_cast<long long>(batches), s, batches / s, images_seen / s);
    }
    const hdl::PipelineStats st = pipe.stats();
    std::printf("time to first batch: %.3f s; consumer waited %.2f s; failures: %llu\n", first_batch_s,
                st.consumer_wait_seconds, static_cast<unsigned long long>(st.failures));
    for (const auto& op : st.operators)
      std::printf("  %-8s %-14s %8llu samples %8.1f us/sample\n", op.name.c_str(), op.op.c_str(),
                  static_cast<unsigned long long>(op.samples), op.samples ? op.seconds * 1e6 / op.samples : 0.0);
    for (const auto& e : st.recent_errors) std::printf("  error: %s\n", e.c_str());
  } catch (const hdl::ConfigError& e) {
    std::fprintf(stderr, "image_pipeline: configuration error: %s\n", e.what());
    return 2;
  } catch (const hdl::DataError& e) {
    std::fprintf(stderr, "image_pipeline: %s\n(use --skip-errors to replace unreadable samples)\n", e.what());
    return 1;
  }
  return 0;
}
