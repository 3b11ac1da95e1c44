#!/usr/bin/env bash
# Builds the libFuzzer targets (clang 14, ASan + UBSan, tests/fuzz/) into build-fuzz and runs
# each for FUZZ_SECONDS (default 60) on one core, starting from seeds copied out of the corpus
# (build-fuzz/seeds/<target>, rebuilt every run) and the corpus the fuzzer kept from earlier runs
# (build-fuzz/corpus/<target>). Fails on any crash, leak, timeout or out-of-memory; prints one
# summary table (executions, coverage, execs/s). Names given as arguments pick the targets.
#   bash .ci/fuzz.sh                                  # CI: every target, 60 s each
#   FUZZ_SECONDS=3600 bash .ci/fuzz.sh fuzz_jpeg_index # a long local run of one target
# Knobs: FUZZ_SECONDS, BUILD_DIR (build-fuzz), HDL_CORPUS_DIR (default build/corpus, then
# ../corpus), FUZZ_ARGS (extra libFuzzer flags). Crash inputs land in BUILD_DIR/artifacts/;
# logs in BUILD_DIR/logs/<target>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
ALL=(fuzz_file_list fuzz_spec_json fuzz_image_probe fuzz_jpeg_decoder fuzz_ffmpeg_image_decoder fuzz_jpeg_index fuzz_video fuzz_video_metadata fuzz_tar_shard fuzz_shard_index fuzz_http_response)
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=("${ALL[@]}")

bash .ci/install_deps.sh
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3  # Debian's, with python3-pil (BMP/TIFF/WebP seeds)
if [ -z "${HDL_CORPUS_DIR:-}" ]; then
  for d in "$ROOT/build/corpus" "$ROOT/../corpus"; do
    [ -d "$d/tests" ] && HDL_CORPUS_DIR=$d && break
  done
fi
HDL_CORPUS_DIR=${HDL_CORPUS_DIR:-$ROOT/build/corpus}
[ -d "$HDL_CORPUS_DIR/tests" ] || echo "fuzz.sh: no corpus at $HDL_CORPUS_DIR (tests/corpus/make_corpus.sh builds it): committed seeds and regressions only" >&2

export CMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER:-$(command -v ccache || true)}
export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-$(command -v ccache || true)}
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHDL_FUZZ=ON \
  -DHDL_SANITIZE=address,undefined -DHDL_CUDA=OFF -DHDL_BUILD_PYTHON=OFF -DHDL_BUILD_TESTS=OFF \
  -DHDL_BUILD_TOOLS=OFF -DHDL_BUILD_SAMPLES=OFF >/dev/null
ninja -C "$BUILD_DIR" -j "${JOBS:-$(nproc)}" "${TARGETS[@]}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$BUILD_DIR/logs" "$BUILD_DIR/artifacts"
summary=()
failed=0
for t in "${TARGETS[@]}"; do
  seeds="$BUILD_DIR/seeds/$t" kept="$BUILD_DIR/corpus/$t" log="$BUILD_DIR/logs/$t.log"
  rm -rf "$seeds"
  mkdir -p "$kept"
  "$PY" tests/fuzz/seeds.py "$t" "$HDL_CORPUS_DIR" "$seeds"
  dict=()
  case $t in fuzz_jpeg_*|fuzz_image_probe) dict=(-dict=tests/fuzz/jpeg.dict) ;; esac
  regress=()
  [ -d "tests/fuzz/regressions/$t" ] && regress=("tests/fuzz/regressions/$t")
  echo "== $t: ${FUZZ_SECONDS}s (log: $log)" >&2
  rc=0
  # One process on one core (no -jobs/-workers); the first directory receives new inputs.
  "$BUILD_DIR/fuzz/$t" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$BUILD_DIR/artifacts/$t-" "${dict[@]}" ${FUZZ_ARGS:-} \
    "$kept" "$seeds" "${regress[@]}" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  status=ok
  if [ $rc -ne 0 ]; then
    status="FAILED (rc $rc)"
    failed=1
    grep -E "ERROR: libFuzzer|ERROR: AddressSanitizer|runtime error|FUZZ CHECK FAILED|ERROR: LeakSanitizer|Test unit written" "$log" | head -5 >&2 || true
  fi
  summary+=("$(printf '%-27s %12s %8s %8s %9s  %s' "$t" "${runs:-?}" "${cov:-?}" "${ft:-?}" "${secs:-?}" "$status")")
done
echo
printf '%-27s %12s %8s %8s %9s  %s\n' target executions cov ft execs/s status
printf '%s\n' "${summary[@]}"
exit $failed
