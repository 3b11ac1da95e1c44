#!/usr/bin/env bash
# The GPU checks and benchmarks, in one go, on a machine with a CUDA device (the lent GPU
# machine: see ../shared/device/README.md; build-device built and its env.sh sourced).
#   bash tests/cuda/gpu_checks.sh BUILD_DIR CORPUS_DIR LOG_DIR [STEPS]
# The call that ran it on an H200 (docs/CUDA.md), after make_sysroot.sh, tests/cuda/slim_sysroot.sh,
# make_corpus_subset.sh ... 48 and tests/cuda/video_subset.sh into .device (carried), with a copy
# of ../shared/device/build_on_device.sh whose ninja line builds ${HDL_TARGETS:-} (34 s, not all):
#   HDL_TARGETS="hdl _C hdl-bench cuda_gpu_test" bash .device/build_on_device.sh .device && . .device/env.sh &&
#     HDL_GPU_DEADLINE=380 bash tests/cuda/gpu_checks.sh build-device $PWD/.device/corpus /tmp/logs
# CORPUS_DIR is a corpus (tests/corpus/make_corpus.sh) or a slice of one (make_corpus_subset.sh,
# tests/cuda/video_subset.sh); its imagenet/train photos are repeated through symlinks for the
# benchmarks.
# STEPS (default all): a comma-separated subset of
#   correctness, in parallel:  ctest (CTest label gpu), memcheck, racecheck, synccheck
#                              (compute-sanitizer over the mixed stage, the gpu stage, NVDEC and
#                              the hybrid JPEG kernels),
#                              pytest (the Python gpu tests)
#   benchmarks, one at a time: hybrid (the hybrid JPEG kernels vs their host twin, batch times),
#                              bench (samples/benchmark/gpu_bench.py: the JPEG targets), train
#                              (samples/train_resnet.py, ResNet-50 and -18, four inputs), hdlbench
#                              (hdl-bench resnet-train cpu / cuda (CPU decode) / cuda with the
#                              hardware JPEG engines),
#                              nvdec (samples/benchmark/nvdec_bench.py), epochs (10 epochs of
#                              device="cuda": pools flat, first batch)
# Each step has a time limit (HDL_GPU_LIMIT_<STEP> seconds overrides it), and no step runs past
# HDL_GPU_DEADLINE seconds from the start (default 3600: a lent machine's call is short); LOG_DIR/summary.log
# gets one line per step and its headline figures, LOG_DIR/<step>.log the whole output.
set -uo pipefail
build=${1:?usage: gpu_checks.sh BUILD_DIR CORPUS_DIR LOG_DIR [STEPS]}; corpus=${2:?}; logs=${3:?}; steps=${4:-all}
mkdir -p "$logs"
export PYTHONUNBUFFERED=1 HDL_CORPUS_DIR=$corpus
train=$corpus/imagenet/train
summary=$logs/summary.log
start=$SECONDS
say() { echo "[$((SECONDS - start))s] $*" | tee -a "$summary"; }
want() { [[ $steps == all || ",$steps," == *",$1,"* ]]; }
limit() { local v="HDL_GPU_LIMIT_${1^^}"; echo "${!v:-$2}"; }
# run STEP DEFAULT_LIMIT CMD...: CMD's output to LOG_DIR/STEP.log, the exit status to the summary.
run() {
  local step=$1 lim; lim=$(limit "$1" "$2"); shift 2
  local left=$((${HDL_GPU_DEADLINE:-3600} - (SECONDS - start)))
  [ $left -lt $lim ] && lim=$left
  if [ $lim -lt 10 ]; then say "$step: skipped, past the deadline"; return 125; fi
  local t=$SECONDS
  timeout --kill-after=5 "$lim" "$@" > "$logs/$step.log" 2>&1
  local rc=$?
  local what="rc $rc"; [ $rc -eq 124 ] && what="TIMED OUT after ${lim}s"
  say "$step: $what in $((SECONDS - t))s"
  return $rc
}

say "start: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1), $(nproc) CPUs"
# The photos the benchmarks repeat, as a 10-class ImageFolder of N files (symlinks).
tree() {  # tree N DIR
  python3 - "$train" "$2" "$1" <<'PY'
import os, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
photos = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.lower().endswith((".jpeg", ".jpg")))
for i in range(n):
    c = os.path.join(out, f"c{i % 10:02d}"); os.makedirs(c, exist_ok=True)
    os.symlink(os.path.abspath(photos[i % len(photos)]), os.path.join(c, f"{i:06d}.jpg"))
PY
}

# Correctness, in parallel (the GPU is shared; none of these measures time).
filter='PipelineGpuTest.GpuStage*:PipelineGpuTest.Released*:PipelineGpuTest.MixedStage*:NvjpegHardwareGpuTest.*:VideoGpuTest.*:HybridJpegGpuTest.*Layout*:HybridJpegGpuTest.Refuses*'
want ctest && run ctest 150 ctest --test-dir "$build" -L gpu --output-on-failure -j 4 &
for tool in memcheck racecheck synccheck; do
  want $tool && run $tool 150 compute-sanitizer --tool $tool --error-exitcode 3 "$build/tests/cuda/cuda_gpu_test" \
    --gtest_filter="$filter" &
done
want pytest && run pytest 150 python3 -m pytest tests/python/test_gpu_stage.py tests/python/test_gpu_ops.py \
  tests/python/test_gpu_video.py -q -rs --durations=12 -p no:cacheprovider &
wait
if want ctest; then
  say "  ctest: $(grep -E 'tests passed|tests failed' "$logs/ctest.log")"
  grep -E '^\[ (nvjpeg|nvdec|video|yuv|bound|hybrid)' "$logs/ctest.log" | sort -u | head -40 | tee -a "$summary"
  grep -E '\(Failed\)|\(Timeout\)|\(SEGFAULT\)|Exception' "$logs/ctest.log" | tee -a "$summary"
fi
for tool in memcheck racecheck synccheck; do
  want $tool && say "  $tool: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$logs/$tool.log" | tail -1) $(grep -cE '^\[  FAILED' "$logs/$tool.log") failed"
done
want pytest && say "  pytest: $(grep -E 'passed|failed|error' "$logs/pytest.log" | tail -1)"

# Benchmarks, one at a time.
if want hybrid; then
  # The hybrid JPEG decode's kernels against their host twin (also in ctest), with its batch times.
  run hybrid 60 "$build/tests/cuda/cuda_gpu_test" --gtest_filter='HybridJpegGpuTest.*'
  grep -E '^\[ hybrid|FAILED|differ' "$logs/hybrid.log" | tee -a "$summary"
fi
if want bench; then
  run bench 90 python3 samples/benchmark/gpu_bench.py --root "$train" --files 7680 --epochs 3 \
    --modes ${HDL_GPU_BENCH_MODES:-cpu,gpu,gpu-hw,hw-alone,tv-gpu,torch-dl}
  grep -E '^(cpu|gpu|gpu-hw|hw-alone|tv-gpu|torch-dl) +[0-9]|^target|rate .*x cpu' "$logs/bench.log" | tee -a "$summary"
fi
if want train; then
  # 50 steps an epoch; the measured steps are 40 in the second epoch (the first builds the
  # loader's JPEG indexes and starts torch's workers: a cost of the first epoch only).
  d=$(mktemp -d); tree 12800 "$d"
  for arch in resnet50 resnet18; do
    run train_$arch 110 python3 samples/train_resnet.py "$d" --arch $arch --amp --channels-last --batch-size 256 \
      --workers 0 --warmup 55 --steps 40 --print-every 1000 --inputs synthetic,torch,hdl,hdl-cuda,hdl-cuda-hw
    sed -n '/^resnet.*measured steps/,$p' "$logs/train_$arch.log" | tee -a "$summary"
  done
  rm -rf "$d"
fi
if want nvdec && [ -f "$corpus/video/original/dog_phone_h264_1920x1080.mp4" ]; then
  run nvdec 60 python3 samples/benchmark/nvdec_bench.py --build "$build" --threads "$(nproc)" --rounds 1 --copies 64 --decode-batch 16 \
    --json "$logs/nvdec.json"
  tail -6 "$logs/nvdec.log" | tee -a "$summary"
fi
if want hdlbench; then
  d=$(mktemp -d); tree 7680 "$d"
  for args in "--device cpu" "--device cuda" "--device cuda --decoder hardware"; do
    run hdlbench 30 "$build/bin/hdl-bench" resnet-train "$d" --epochs 3 --no-progress $args
    cat "$logs/hdlbench.log" >> "$logs/hdlbench_all.log"
    say "  hdl-bench resnet-train $args: $(grep -E '^throughput|^CPU util|^time to first|hardware_images' "$logs/hdlbench.log" | tr '\n' ' ')"
  done
  rm -rf "$d"
fi
if want epochs; then
  run epochs 40 python3 samples/benchmark/gpu_bench.py --root "$train" --files 2560 --epochs 10 --modes gpu-hw
  grep -E '^gpu-hw +[0-9]|^target first' "$logs/epochs.log" | tee -a "$summary"
fi
say "done"
