#!/usr/bin/env bash
# Installs the Debian 12 packages this project builds, tests and benchmarks with. Idempotent:
# does nothing when everything is there. Needs root (or sudo).
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libturbojpeg0-dev libjpeg62-turbo-dev libjpeg-turbo-progs
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev ffmpeg
  libarchive-dev
  libcurl4-openssl-dev libssl-dev curl nginx
  libtbb-dev pybind11-dev libgtest-dev libgmock-dev
  python3 python3-dev python3-numpy python3-pil python3-pytest python3-torch python3-torchvision
  nlohmann-json3-dev python3-setuptools python3-wheel python3-pip python3-venv
  python3-matplotlib python3-av linux-perf valgrind
  dpkg-dev xz-utils
  clang libclang-rt-14-dev ccache
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#PACKAGES[@]} packages present" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install_deps: run as root, or install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install_deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
