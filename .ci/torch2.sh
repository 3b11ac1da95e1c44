#!/usr/bin/env bash
# The Python package's pytest suite (tests/python) against pip's torch 2.x + torchvision, the
# torch users run (Debian's python3-torch is 1.13), with timm, so that the native mappings of
# timm's transforms (test_timm*.py, skipped without timm) are checked by CI too, and with the
# webdataset package (+ braceexpand), which test_webdataset.py reads and writes tar shards with
# as the reference for habana_dataloader.WebDataset / write_shards. Called by
# .ci/test.sh (step 3); runs alone too, once build/python is built (.ci/build.sh
# -DHDL_BUILD_PYTHON=ON, or ninja -C build).
#
# - A plain venv (no system site packages) at build/venv-torch2, made by /usr/bin/python3 -m venv:
#   the same interpreter the extension module build/python/habana_dataloader/_C*.so is built for
#   (it has no libtorch link: tensors cross as DLPack capsules, so one build serves both torches).
# - Exact pins (below), timm's (huggingface_hub, safetensors, pyyaml, ...) included: timm must
#   not bring another torch/torchvision/numpy/pillow. torch from PyPI is the CUDA build (about
#   3 GB of wheels, 5.5 GB installed); it runs on the CPU (timm and what it adds: 13 wheels,
#   9 MB). The wheels are kept in build/pip-cache/wheelhouse and installed from there with
#   --no-index, so a machine that keeps build/ downloads them once (pip's own HTTP cache,
#   PIP_CACHE_DIR=build/pip-cache, is used too, but is not relied on: a proxy that strips
#   Cache-Control/ETag headers leaves it empty).
# - Idempotent: a venv whose stamp matches the pins is used as is (no pip run at all). New pins
#   change the stamp: the venv is updated in place (only the missing wheels are downloaded).
#
#   bash .ci/torch2.sh [pytest args...]     e.g. bash .ci/torch2.sh -x -k test_loader
#   bash .ci/torch2.sh -q tests/python/test_timm.py   (paths given: those instead of tests/python)
# TORCH2_VENV overrides the venv's path; PIP_CACHE_DIR the cache's (its wheelhouse/ holds the wheels).
# Without PyPI the step says SKIPPED and exits 0 (TORCH2_REQUIRED=1: exits 1).
set -euo pipefail
CALLER=$PWD
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${TORCH2_VENV:-$ROOT/build/venv-torch2}
export PIP_CACHE_DIR=${PIP_CACHE_DIR:-$ROOT/build/pip-cache}
export PIP_DISABLE_PIP_VERSION_CHECK=1
WHEELHOUSE=$PIP_CACHE_DIR/wheelhouse
unset PYTHONHOME

# What the tests import, pinned.
REQUIREMENTS="torch==2.15.0
torchvision==0.29.2
numpy==2.4.6
pillow==13.0.0
pytest==9.2.0
timm==1.0.15
webdataset==1.0.2
braceexpand==0.1.7
torchcodec==0.15.0"
# Everything they pull in, pinned too (pip freeze of the venv, plus setuptools, which torch
# needs and pip freeze leaves out; constraints: a platform that does not need one, e.g. the
# nvidia-* wheels off x86-64 Linux or hf-xet off x86-64/arm64, does not install it).
CONSTRAINTS="anyio==4.16.0
click==8.5.1
cuda-bindings==13.5.0
cuda-pathfinder==1.9.0
cuda-toolkit==13.2.2
filelock==4.2.12
fsspec==2026.9.0
h11==0.16.0
hf-xet==1.8.0
httpcore2==2.16.2
httpx2==2.16.2
huggingface_hub==2.4.0
idna==3.20
iniconfig==2.3.1
Jinja2==3.1.6
MarkupSafe==3.0.4
mpmath==1.3.0
networkx==3.6.1
nvidia-cublas==13.4.1.3
nvidia-cuda-cccl==13.3.5.0.6
nvidia-cuda-cupti==13.2.86
nvidia-cuda-nvrtc==13.2.86
nvidia-cuda-runtime==13.2.86
nvidia-cudnn-cu13==9.26.0.51
nvidia-cufft==12.2.0.57
nvidia-cufile==1.17.1.22
nvidia-cusolver==12.2.0.11
nvidia-cusparse==12.7.10.12
nvidia-cusparselt-cu13==0.8.1
nvidia-nccl-cu13==2.30.7
nvidia-nvjitlink==13.5.37
nvidia-nvshmem-cu13==3.7.2
nvidia-nvtx==13.2.86
packaging==26.3
pluggy==1.7.0
Pygments==2.21.0
PyYAML==6.0.4
safetensors==0.8.0
setuptools==84.2.1
sympy==1.14.0
tqdm==4.70.1
triton==3.9.0
truststore==0.10.5
typing_extensions==4.16.0"

if ! ls "$ROOT"/build/python/habana_dataloader/_C*.so >/dev/null 2>&1; then
  echo "torch2.sh: no build/python/habana_dataloader/_C*.so: build first (.ci/build.sh -DHDL_BUILD_PYTHON=ON)" >&2
  exit 1
fi

# shellcheck source=pinned_venv.sh
. "$ROOT/.ci/pinned_venv.sh"
status=0
pinned_venv torch2.sh "$VENV" "$REQUIREMENTS" "$CONSTRAINTS" "import torch, torchvision, timm" || status=$?
if [ "$status" = 2 ]; then
  # PyPI unreachable: say so loudly, but a network outage is not a test failure (the
  # Debian-torch step has run the same tests); TORCH2_REQUIRED=1 makes it one.
  echo "torch2.sh: SKIPPED: the pinned wheels (about 3 GB the first time) could not be downloaded from PyPI" >&2
  [ "${TORCH2_REQUIRED:-0}" != 1 ] || exit 1
  exit 0
fi
[ "$status" = 0 ] || exit "$status"

"$VENV/bin/python" - <<'EOF' >&2
import sys, torch, torchvision, timm
print(f"torch2.sh: Python {sys.version.split()[0]}, torch {torch.__version__}, torchvision "
      f"{torchvision.__version__}, timm {timm.__version__}, CUDA available: {torch.cuda.is_available()}")
EOF

# pytest's positional arguments are paths (a file, a directory, file.py::test): when there are
# any, they run instead of all of tests/python; relative ones are the caller's. A word after an
# option that takes a value (-k test_loader, --tb short) is taken for one only if it looks like
# a path, and never after an option whose value is a path (--deselect, --ignore, ...).
args=() paths=0 prev=
for a in "$@"; do
  case $prev in
    -k|-m|-p|-c|-o|-W|--deselect|--ignore|--ignore-glob|--rootdir|--basetemp|--confcutdir|\
    --junitxml|--junit-xml|--log-file) ;;
    *) [[ $a == /* ]] && abs=$a || abs=$CALLER/$a
       if [[ $a != -* ]] && { [ -e "${abs%%::*}" ] || [[ ${a%%::*} == */* || ${a%%::*} == *.py ]]; }; then
         paths=1 a=$abs
       fi ;;
  esac
  args+=("$a") prev=$a
done
[ "$paths" = 1 ] || args=("$ROOT/tests/python" ${args[@]+"${args[@]}"})
PYTHONPATH="$ROOT/build/python" "$VENV/bin/python" -m pytest -q ${args[@]+"${args[@]}"}
