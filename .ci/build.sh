#!/usr/bin/env bash
# Configures and builds into BUILD_DIR (default: build). Extra arguments go to cmake.
#   .ci/build.sh                          # Release, tests, samples, Python extension
#   BUILD_DIR=build-asan .ci/build.sh -DHDL_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-Release} \
  -DHDL_CORPUS_DIR="$PWD/build/corpus" "$@" >/dev/null
ninja -C "$BUILD_DIR" -j "$JOBS"
