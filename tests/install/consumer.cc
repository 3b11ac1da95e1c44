// Builds against the installed headers only, and runs a pipeline when given a folder.
#include <cstdio>

#include "decoders/decoder.h"
#include "media/tensor.h"
#include "pipeline/pipeline.h"

int main(int argc, char** argv) {
  hdl::PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", argc > 1 ? argv[1] : "."}});
  auto images = spec.add("image_decoder", {files[0]});
  auto small = spec.add("resize", {images[0]}, {{"size", {32, 32}}});
  spec.set_outputs({small[0], files[1]});
  hdl::Pipeline pipe(spec, {.batch_size = 4, .num_threads = 2});
  auto batch = pipe.next();
  if (!batch) return 1;
  std::printf("consumer: %s\n", batch->outputs[0].as_tensor().shape().to_string().c_str());
  return 0;
}
