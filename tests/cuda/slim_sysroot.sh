#!/usr/bin/env bash
# Makes the GPU machine's sysroot (../shared/device/make_sysroot.sh) small enough to travel with
# a corpus slice and the video clips (a call carries 64 MiB in all): ICU's 31 MB data library,
# which FFmpeg's dependencies (libxml2, ...) link but nothing on our paths opens, is replaced by
# a stub that defines its one symbol; the tarball is packed again with xz -9 (48 -> 40 MiB).
# Used for the H200 calls of 2026-11-27 (docs/CUDA.md).
#   bash tests/cuda/slim_sysroot.sh .device/sysroot.tar.xz
set -euo pipefail
tarball=$(realpath "${1:?usage: slim_sysroot.sh SYSROOT_TARBALL}")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tar xJf "$tarball" -C "$work"
lib=$work/sysroot/usr/lib/x86_64-linux-gnu
data=$(cd "$lib" && ls libicudata.so.* 2>/dev/null | grep -E 'so\.[0-9]+\.[0-9.]+$' | head -1 || true)
if [ -z "$data" ]; then echo "no libicudata in $tarball: nothing to do"; exit 0; fi
major=$(echo "$data" | sed -E 's/libicudata\.so\.([0-9]+).*/\1/')
printf '__attribute__((aligned(16))) const unsigned char icudt%s_dat[32] = {0};\n' "$major" > "$work/stub.c"
gcc -shared -fPIC -Wl,-soname,"libicudata.so.$major" -o "$lib/$data" "$work/stub.c"
(cd "$work" && tar cf - sysroot | xz -9 -T0 > "$tarball.new") && mv "$tarball.new" "$tarball"
echo "$tarball: $(du -h "$tarball" | cut -f1)"
