#!/usr/bin/env bash
# README command 1: installs what is needed, builds, prepares the sample dataset (real photos
# from Debian packages) and runs the main job on it: the C++ pipeline sample, which reads,
# decodes, resizes and batches every image and prints throughput.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install_deps.sh
BUILD_DIR=build bash .ci/build.sh -DHDL_BUILD_TESTS=OFF
SAMPLE_DATA=${SAMPLE_DATA:-$PWD/sample_data}
bash samples/prepare_sample_data.sh "$SAMPLE_DATA"
build/samples/image_pipeline "$SAMPLE_DATA/train" --batch-size 64 --epochs 3 "$@"
