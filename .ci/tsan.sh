#!/usr/bin/env bash
# ThreadSanitizer over the executor's concurrency tests (early stop, resume, error budget, stats
# and state read from other threads, fault injection).
#
# TSan needs every library that synchronises threads to be instrumented, and Debian's libtbb is
# not: a task enqueued into the arena and run by a worker looks like a race on the task object.
# Suppressing inside TBB would hide every race in a task body too (they all run under TBB
# frames), so instead this builds Debian's own oneTBB source (the installed version, from
# Debian's source archive) with -fsanitize=thread once, into build-tsan-tbb/, and links the TSan
# build of the tests against it. See docs/RELIABILITY.md.
# Usage: .ci/tsan.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=${JOBS:-$(nproc)}
TBB_WORK=$ROOT/build-tsan-tbb
TBB_PREFIX=$TBB_WORK/install

if [ ! -f "$TBB_PREFIX/lib/cmake/TBB/TBBConfig.cmake" ]; then
  version=$(dpkg-query -W -f='${source:Version}' libtbb-dev 2>/dev/null || true)
  [ -n "$version" ] || { echo "tsan.sh: libtbb-dev is not installed (.ci/install_deps.sh)" >&2; exit 1; }
  echo "tsan.sh: building oneTBB $version with -fsanitize=thread (once)" >&2
  rm -rf "$TBB_WORK" && mkdir -p "$TBB_WORK/lists/partial" "$TBB_WORK/src"
  # Debian's source archive for the installed release, without touching the system's apt lists.
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
    > "$TBB_WORK/sources.list"
  apt_opts=(-o Dir::Etc::SourceList="$TBB_WORK/sources.list" -o Dir::Etc::SourceParts=/nonexistent
            -o Dir::State::Lists="$TBB_WORK/lists" -o APT::Sandbox::User=root -qq)
  apt-get "${apt_opts[@]}" update
  (cd "$TBB_WORK/src" && apt-get "${apt_opts[@]}" source --download-only "onetbb=$version" >/dev/null)
  tar -xf "$TBB_WORK"/src/onetbb_*.orig.tar.* -C "$TBB_WORK/src"
  tbb_src=$(find "$TBB_WORK/src" -maxdepth 1 -mindepth 1 -type d | head -1)
  cmake -S "$tbb_src" -B "$TBB_WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTBB_TEST=OFF -DTBBMALLOC_BUILD=OFF -DTBB_STRICT=OFF -DTBB_SANITIZE=thread \
    -DCMAKE_INSTALL_PREFIX="$TBB_PREFIX" >/dev/null
  cmake --build "$TBB_WORK/build" -j "$JOBS" >/dev/null
  cmake --install "$TBB_WORK/build" >/dev/null
fi

BUILD_DIR=build-tsan GENERATOR=Ninja BUILD_TYPE=RelWithDebInfo \
  TARGETS="pipeline_test fault_injection_test soak_test object_store_test" bash .ci/build.sh \
  -DHDL_SANITIZE=thread -DHDL_CUDA=OFF -DHDL_BUILD_PYTHON=OFF -DHDL_BUILD_SAMPLES=OFF \
  -DHDL_BUILD_TOOLS=OFF -DHDL_BUILD_TESTS=ON -DTBB_DIR="$TBB_PREFIX/lib/cmake/TBB"
# grep without -q reads all of ldd's output: with pipefail, grep -q quitting early could fail
# the pipeline through ldd's SIGPIPE (seen once in a clean-clone run).
ldd build-tsan/tests/pipeline/pipeline_test | grep "$TBB_PREFIX" >/dev/null ||
  { echo "tsan.sh: the tests are not linked against the instrumented TBB" >&2; exit 1; }
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
t=build-tsan/tests/pipeline
# The executor's own tests (early stop under load, reset, resume, error policy and budget,
# external orders, stats and state read from other threads), then fault injection and a
# shortened soak (interrupted, resumed epochs with changing thread counts).
"$t/pipeline_test" --gtest_filter='PipelineTest.*:FileSystem*'
"$t/fault_injection_test"
HDL_SOAK_EPOCHS=${HDL_SOAK_EPOCHS:-6} "$t/soak_test"
# Remote reads with requests in flight on the file system's I/O thread (media/detail/fetch_loop.h)
# against nginx and the fault proxy on 127.0.0.1 (nginx only: they skip, saying why, without it).
"$t/object_store_test" --gtest_filter='*Prefetch*:*StreamingReadAhead*'
echo "tsan.sh: ThreadSanitizer found no race" >&2
