#!/usr/bin/env bash
# The GPU checks of the device stage, in one go, on a machine with a CUDA device (the lent GPU
# machine: see ../shared/device/README.md; build-device built and its env.sh sourced).
#   bash tests/cuda/gpu_checks.sh BUILD_DIR CORPUS_TRAIN_DIR LOG_DIR
# Logs: ctest_gpu.log (CTest label gpu), memcheck.log / racecheck.log / synccheck.log
# (compute-sanitizer over the pipeline's gpu-stage tests), pytest_gpu.log (the Python gpu
# tests), bench_gpu.log (tests/python/bench_gpu.py), hdl_bench.log (hdl-bench cpu vs cuda, with
# JPEG decode on CPU threads and on the hardware engines: the mixed stage).
set -uo pipefail
build=${1:?usage: gpu_checks.sh BUILD_DIR CORPUS_TRAIN_DIR LOG_DIR}; train=${2:?}; logs=${3:?}
mkdir -p "$logs"
export PYTHONUNBUFFERED=1
ctest --test-dir "$build" -L gpu --output-on-failure > "$logs/ctest_gpu.log" 2>&1
echo "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$logs/ctest_gpu.log")"
for tool in memcheck racecheck synccheck; do
  compute-sanitizer --tool $tool --error-exitcode 3 "$build/tests/cuda/cuda_gpu_test" \
    --gtest_filter='PipelineGpuTest.GpuStage*:PipelineGpuTest.Released*:NvjpegHardwareGpuTest.*:VideoGpuTest.*' > "$logs/$tool.log" 2>&1
  echo "compute-sanitizer $tool: rc $? $(grep -E 'ERROR SUMMARY' "$logs/$tool.log" | tail -1)"
done
timeout 400 python3 -m pytest $(ls tests/python/test_gpu_*.py) -q > "$logs/pytest_gpu.log" 2>&1
echo "pytest gpu: $(tail -1 "$logs/pytest_gpu.log")"
timeout 300 python3 tests/python/bench_gpu.py --root "$train" --files 7200 --epochs 5 > "$logs/bench_gpu.log" 2>&1
tail -4 "$logs/bench_gpu.log"
# hdl-bench over the same kind of tree (photos repeated through symlinks).
tree=$(mktemp -d)
python3 - "$train" "$tree" <<'PY'
import os, sys
src, out = sys.argv[1:]
photos = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.lower().endswith((".jpeg", ".jpg")))
for i in range(7200):
    c = os.path.join(out, f"c{i % 10:02d}"); os.makedirs(c, exist_ok=True)
    os.symlink(os.path.abspath(photos[i % len(photos)]), os.path.join(c, f"{i:06d}.jpg"))
PY
for args in "--device cpu" "--device cuda --decoder cpu" "--device cuda --decoder hardware" \
            "--device cpu --no-dct-scaling" "--device cuda --decoder cpu --no-dct-scaling"; do
  echo "== hdl-bench resnet-train $args" >> "$logs/hdl_bench.log"
  "$build/bin/hdl-bench" resnet-train "$tree" --epochs 3 --no-progress $args >> "$logs/hdl_bench.log" 2>&1
  echo "hdl-bench $args: $(grep -E '^throughput|^CPU util' "$logs/hdl_bench.log" | tail -2 | tr '\n' ' ')"
done
rm -rf "$tree"
# NVDEC against CPU threads (the video issue's target: >= 3x on 1080p H.264).
if [ -f "${HDL_CORPUS_DIR:-build/corpus}/video/original/dog_phone_h264_1920x1080.mp4" ]; then
  timeout 400 python3 samples/benchmark/nvdec_bench.py --build "$build" --threads "$(nproc)" --rounds 3 \
    --json "$logs/nvdec_bench.json" > "$logs/nvdec_bench.log" 2>&1
  tail -6 "$logs/nvdec_bench.log"
fi
