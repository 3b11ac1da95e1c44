#!/usr/bin/env bash
# README command 1: installs what is needed, builds, prepares the sample dataset (real photos
# from Debian packages) and runs the main job on it: the hdl-bench CLI running resnet-train
# (decode with a fused RandomResizedCrop 224 + random flip + normalize to float32 NCHW) over
# the sample data, with a progress bar and a final report (images/s, MB/s, per-stage times,
# CPU use, peak RSS, time to first batch, failures). Extra arguments go to hdl-bench, e.g.
#   bash .ci/main.sh --epochs 5 --json
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install_deps.sh
BUILD_DIR=build bash .ci/build.sh -DHDL_BUILD_TESTS=OFF
SAMPLE_DATA=${SAMPLE_DATA:-$PWD/sample_data}
bash pipeline/tools/prepare_sample_data.sh "$SAMPLE_DATA"
build/bin/hdl-bench resnet-train "$SAMPLE_DATA/train" --batch-size 64 --epochs 3 "$@"
