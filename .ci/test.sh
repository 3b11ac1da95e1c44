#!/usr/bin/env bash
# README command 2: installs what is needed, builds, and runs the whole test suite:
#   1. the GoogleTest suite (CTest) on a Release build made with CMake's default generator;
#   2. the Python package's pytest suite (tests/python) against build/python, with Debian's
#      /usr/bin/python3 and its torch 1.13;
#   3. the same suite with pip's torch 2.x + torchvision, pinned, in a venv (.ci/torch2.sh:
#      build/venv-torch2; about 3 GB of wheels from PyPI the first time, kept in
#      build/pip-cache, so a machine that keeps build/ downloads them once);
#   4. the GoogleTest suite under AddressSanitizer + UndefinedBehaviorSanitizer (decoders on
#      every corpus file, fuzz regression inputs, early-stop races, fault injection, soak);
#   5. the executor's concurrency tests under ThreadSanitizer (.ci/tsan.sh);
#   6. every fuzz target for FUZZ_SECONDS (default 60) each (.ci/fuzz.sh).
# Tests use the real-media corpus that tests/corpus/make_corpus.sh builds from Debian packages,
# built once into build/corpus and reused (HDL_CORPUS_DIR overrides; the ASan build reads the
# same one through it). A corpus that fails to build stops the script; corpus tests skip, with
# a reason, only when run without one. SKIP_TORCH2=1, SKIP_ASAN=1, SKIP_TSAN=1, SKIP_FUZZ=1 skip steps
# 3, 4, 5, 6.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
bash .ci/install_deps.sh

export HDL_CORPUS_DIR=${HDL_CORPUS_DIR:-$ROOT/build/corpus}
if [ -d "$HDL_CORPUS_DIR/imagenet/train" ] && [ -f "$HDL_CORPUS_DIR/SHA256SUMS" ]; then
  echo "test.sh: corpus at $HDL_CORPUS_DIR (cached)" >&2
else
  echo "test.sh: building the corpus into $HDL_CORPUS_DIR (tests/corpus/make_corpus.sh: about 450 MB of downloads, 5-20 minutes)" >&2
  mkdir -p "$ROOT/build"
  bash tests/corpus/make_corpus.sh "$HDL_CORPUS_DIR" >"$ROOT/build/corpus.log" 2>&1 || {
    tail -20 "$ROOT/build/corpus.log" >&2; exit 1; }
fi

echo "== Release build (CMake's default generator) and tests" >&2
BUILD_DIR=build bash .ci/build.sh -DHDL_BUILD_TESTS=ON -DHDL_BUILD_SAMPLES=ON -DHDL_BUILD_PYTHON=ON
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900

echo "== Python tests (pytest, Debian's /usr/bin/python3 with torch)" >&2
PYTHONPATH="$ROOT/build/python" /usr/bin/python3 -m pytest "$ROOT/tests/python" -q

if [ "${SKIP_TORCH2:-0}" != 1 ]; then
  echo "== Python tests again with pip's torch 2.x + torchvision (venv build/venv-torch2)" >&2
  bash .ci/torch2.sh
fi

if [ "${SKIP_ASAN:-0}" != 1 ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build and tests" >&2
  BUILD_DIR=build-asan GENERATOR=Ninja BUILD_TYPE=RelWithDebInfo bash .ci/build.sh \
    -DHDL_SANITIZE=address,undefined -DHDL_BUILD_TESTS=ON -DHDL_BUILD_PYTHON=OFF -DHDL_BUILD_SAMPLES=OFF
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$(nproc)" --timeout 1800
fi

if [ "${SKIP_TSAN:-0}" != 1 ]; then
  echo "== ThreadSanitizer: the executor's concurrency tests" >&2
  bash .ci/tsan.sh
fi

if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  echo "== Fuzzing: every libFuzzer target for ${FUZZ_SECONDS:-60} s" >&2
  HDL_CORPUS_DIR="$HDL_CORPUS_DIR" FUZZ_SECONDS=${FUZZ_SECONDS:-60} bash .ci/fuzz.sh
fi
