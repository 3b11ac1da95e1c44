#!/usr/bin/env bash
# Configures and builds into BUILD_DIR (default: build). Extra arguments go to cmake.
#   .ci/build.sh                          # Release, tests, samples, Python extension
#   BUILD_DIR=build-asan .ci/build.sh -DHDL_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=RelWithDebInfo
# GENERATOR: CMake's generator for a new build folder (default: CMake's own default, i.e. Unix
# Makefiles); an existing folder keeps the generator it was made with. TARGETS: build only these.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
gen=()
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && [ -n "${GENERATOR:-}" ]; then gen=(-G "$GENERATOR"); fi
cmake -S . -B "$BUILD_DIR" "${gen[@]}" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -DHDL_CORPUS_DIR="$PWD/build/corpus" "$@" >/dev/null
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
