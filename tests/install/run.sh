#!/usr/bin/env bash
# install_and_find_package: cmake --install into a temporary prefix, build tests/install as a
# separate project with find_package(HabanaDataLoader), run it over a corpus folder (CORPUS_DIR;
# $HDL_CORPUS_DIR, when set, overrides it; without a corpus that run is skipped, and says so).
#   run.sh BUILD_DIR SOURCE_DIR CORPUS_DIR
set -euo pipefail
BUILD=$1 SRC=$2 CORPUS=${HDL_CORPUS_DIR:-$3}
WORK=$(mktemp -d "$BUILD/tmp/install.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cmake --install "$BUILD" --prefix "$WORK/prefix" >/dev/null
test -f "$WORK/prefix/include/hdl/pipeline/pipeline.h"
test ! -e "$WORK/prefix/include/hdl/pipeline/detail"
cmake -S "$SRC/tests/install" -B "$WORK/build" -G Ninja -DCMAKE_PREFIX_PATH="$WORK/prefix" >/dev/null
cmake --build "$WORK/build" >/dev/null
if [ -d "$CORPUS/imagenet/train" ]; then
  LD_LIBRARY_PATH="$WORK/prefix/lib:${LD_LIBRARY_PATH:-}" "$WORK/build/consumer" "$CORPUS/imagenet/train" | tee "$WORK/out"
  grep -q "consumer: \[4, 32, 32, 3\]" "$WORK/out"
else
  echo "install_and_find_package: no corpus at $CORPUS/imagenet/train: consumer run skipped (tests/corpus/make_corpus.sh)"
fi
echo "install_and_find_package: ok"
