#!/usr/bin/env bash
# make_corpus.sh -- build the project's real-media test corpus from Debian 12 (bookworm) packages.
# The packages are only downloaded (apt-get download) and unpacked (dpkg-deb), never installed.
#
#   usage: tests/corpus/make_corpus.sh OUT_DIR        (the tests look in build/corpus by default)
#
# Output (tests/corpus/README.md says what each file is and what a decoder must do with it):
#   tests/       real JPEG/PNG files with edge cases, by expected outcome:
#                  tests/jpeg/{ok,exotic,corrupt,huge,mislabeled}/  tests/png/{ok,corrupt}/
#                  tests/MANIFEST.tsv (from tests.spec): expected outcome, format, Pillow's result
#   imagenet/    ImageNet-like ImageFolder: {train,val}/<wnid>/*.JPEG cropped, rescaled and
#                  re-encoded from the photos in imagenet_pool.txt; classes.tsv manifest.tsv stats.json
#   video/       real clips as shipped (video/original/, from videos.txt) and ffmpeg re-encodes
#                  (video/derived/); video/MANIFEST.tsv
#   SOURCES.tsv  every package used: version, .deb, licenses named in its copyright file
#   licenses/    each package's copyright file
#   SHA256SUMS   checksums of tests/ imagenet/ video/, written last: its presence means "complete"
#
# Environment knobs (all optional):
#   CACHE=OUT_DIR/.cache  where .debs (~450 MB) and unpacked members are kept; reruns reuse them
#   N_IMAGES=3000 VAL_FRACTION=0.1   ImageNet-like image count (train+val), val share
#   SEED=20240601         generator seed (same seed + package versions + Pillow => same bytes)
#   JOBS=$(nproc)         worker processes for the ImageNet-like generator
#   VIDEO_DERIVED=1       0: skip the ffmpeg re-encodes in video/derived/
#   IMAGENET_QUIRKS=0     1: also add ImageNet's known oddity (a PNG named .JPEG)
#   KEEP_DEBS=1           0: delete each .deb once unpacked
#   INSTALL_DEPS=1        when root, apt-get install missing tools
#   ImageNet-like statistics (mean ~427x377 px, ~100 KB/image): Q_MEAN=96 Q_SD=2 Q_MIN=75
#     Q_MAX=98 P444=0.10 GRAIN=0.9 GRAIN_MAX=8 P_LONG=0.72,0.84,0.92 SHARPEN=1.0 S_POW=0.3
#     IOU_MAX=0.85 CANDS=3 (see gen_imagenet.py)
#
# Needs: apt-get, dpkg-deb, tar, /usr/bin/python3 with PIL (python3-pil), jpegtran
# (libjpeg-turbo-progs), ffmpeg + ffprobe (ffmpeg). As root, missing ones are installed.
set -euo pipefail
export LC_ALL=C

if [ $# -ne 1 ] || [ -z "$1" ] || [ "$1" = -h ] || [ "$1" = --help ]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)
DM_NAME=make_corpus
DM_CACHE=${CACHE:-$OUT/.cache}
# shellcheck source=../../pipeline/tools/debian_media.sh
. "$HERE/../../pipeline/tools/debian_media.sh"
N_IMAGES=${N_IMAGES:-3000}
VAL_FRACTION=${VAL_FRACTION:-0.1}
SEED=${SEED:-20240601}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
VIDEO_DERIVED=${VIDEO_DERIVED:-1}
IMAGENET_QUIRKS=${IMAGENET_QUIRKS:-0}
PY=/usr/bin/python3            # Debian's python (has python3-pil); avoid pyenv/venv shims

# ---------------------------------------------------------------------------------------------
# 0. tools
# ---------------------------------------------------------------------------------------------
need=()
{ [ -x "$PY" ] && "$PY" -c 'import PIL' 2>/dev/null; } || need+=(python3-pil)
command -v jpegtran >/dev/null || need+=(libjpeg-turbo-progs)
{ command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null; } || need+=(ffmpeg)
dm_install "${need[@]}"

# ---------------------------------------------------------------------------------------------
# 1. packages (packages.txt): pinned versions, falling back to the current candidate
# ---------------------------------------------------------------------------------------------
dm_apt_ready opencv-doc
rm -f "$OUT/SHA256SUMS"                     # not complete until the end
mkdir -p "$DM_CACHE"; : > "$DM_CACHE/versions.tsv"
dm_log "$(grep -vc '^#' "$HERE/packages.txt") packages (about 450 MB to download when not cached) in $DM_CACHE"
while IFS='|' read -r pkg ver patterns; do
  case $pkg in ''|'#'*) continue ;; esac
  read -r -a members <<< "$patterns"
  dm_fetch "$pkg" "$ver" "${members[@]}"
  printf '%s\t%s\t%s\n' "$pkg" "$DM_VERSION" "$DM_DEB" >> "$DM_CACHE/versions.tsv"
done < "$HERE/packages.txt"
ROOT=$DM_CACHE/root

# ---------------------------------------------------------------------------------------------
# 2. tests/: files by expected outcome (tests.spec; derived rows last, they read earlier ones)
# ---------------------------------------------------------------------------------------------
dm_log "building tests/"
rm -rf "$OUT/tests"; mkdir -p "$OUT/tests"
{ grep -v '|derived|' "$HERE/tests.spec"; grep '|derived|' "$HERE/tests.spec"; } \
  | "$PY" "$HERE/build_tests.py" "$ROOT" "$OUT/tests" "$DM_CACHE/versions.tsv"

# ---------------------------------------------------------------------------------------------
# 3. imagenet/: the ImageNet-like set (imagenet_pool.txt: one source photo per class)
# ---------------------------------------------------------------------------------------------
dm_log "building imagenet/ ($N_IMAGES images, $JOBS jobs)"
rm -rf "$OUT/imagenet"; mkdir -p "$OUT/imagenet"
N_IMAGES=$N_IMAGES VAL_FRACTION=$VAL_FRACTION SEED=$SEED JOBS=$JOBS IMAGENET_QUIRKS=$IMAGENET_QUIRKS \
  "$PY" "$HERE/gen_imagenet.py" "$ROOT" "$OUT/imagenet" "$HERE/imagenet_pool.txt" "$DM_CACHE/versions.tsv"

# ---------------------------------------------------------------------------------------------
# 4. video/: clips as shipped (videos.txt), then re-encodes
# ---------------------------------------------------------------------------------------------
dm_log "building video/"
rm -rf "$OUT/video"; mkdir -p "$OUT/video/original"
rows=$DM_CACHE/video_rows.tsv
: > "$rows"
while IFS='|' read -r pkg path name note; do
  case $pkg in ''|'#'*) continue ;; esac
  src=$ROOT/$pkg/$path
  [ -f "$src" ] || { dm_log "WARNING: missing $pkg: $path"; continue; }
  cp "$src" "$OUT/video/original/$name"
  printf 'original/%s\t%s=%s\t%s\t%s\n' "$name" "$pkg" "$(awk -v p="$pkg" '$1==p{print $2}' "$DM_CACHE/versions.tsv")" \
    "$path" "$note" >> "$rows"
done < "$HERE/videos.txt"
if [ "$VIDEO_DERIVED" = 1 ]; then
  mkdir -p "$OUT/video/derived"; O="$OUT/video/original"; D="$OUT/video/derived"
  ff() { local o=${*: -1}; ffmpeg -nostdin -v error -y "${@:1:$#-1}" -fflags +bitexact "$o"; }   # bitexact: no random MKV UIDs
  # 10 s of the pedestrian clip in the codecs a loader is most likely to meet; GOP 25 (seek tests)
  ff -t 10 -i "$O/pedestrians_msmpeg4v3_768x576.avi" -an -c:v libx264 -preset fast -crf 23 -g 25 -pix_fmt yuv420p -movflags +faststart "$D/pedestrians_h264_768x576.mp4"
  ff -t 10 -i "$O/pedestrians_msmpeg4v3_768x576.avi" -an -c:v libx264 -preset fast -crf 23 -g 250 -bf 3 -pix_fmt yuv420p "$D/pedestrians_h264_bframes_longgop.mkv"
  ff -t 10 -i "$O/pedestrians_msmpeg4v3_768x576.avi" -an -c:v libx265 -preset fast -crf 28 -x265-params log-level=error -tag:v hvc1 -pix_fmt yuv420p "$D/pedestrians_hevc_768x576.mp4"
  ff -t 10 -i "$O/pedestrians_msmpeg4v3_768x576.avi" -an -c:v libvpx-vp9 -b:v 0 -crf 34 -deadline realtime -cpu-used 8 -row-mt 1 "$D/pedestrians_vp9_768x576.webm"
  ff -t 10 -i "$O/pedestrians_msmpeg4v3_768x576.avi" -an -c:v mjpeg -q:v 4 -pix_fmt yuvj420p "$D/pedestrians_mjpeg_768x576.avi"
  ff -i "$O/city_mpeg2_720x405.mpg" -an -vf scale=720:404 -c:v libx264 -preset fast -crf 22 -pix_fmt yuv420p "$D/city_h264_720x404.mp4"
  ff -i "$O/city_mpeg2_720x405.mpg" -an -vf scale=720:404 -c:v libx264 -preset fast -crf 22 -pix_fmt yuv420p10le "$D/city_h264_high10_720x404.mkv"
  ff -i "$O/cockatoo_h264_444_1280x720.mp4" -an -c:v libx264 -preset fast -crf 23 -pix_fmt yuv420p -movflags +faststart "$D/cockatoo_h264_420_1280x720.mp4"
  ff -i "$O/dog_phone_h264_1920x1080.mp4" -c copy -metadata:s:v:0 rotate=90 "$D/dog_h264_rotate90_remux_1920x1080.mp4"   # display-matrix rotation, same bitstream
  for f in "$D"/*; do
    printf 'derived/%s\tffmpeg re-encode of a file in original/\t\t%s\n' "$(basename "$f")" "$(ffmpeg -version | head -1 | cut -d' ' -f1-3)" >> "$rows"
  done
fi
{
  printf 'file\tsource\tsource_path\tnote\tbytes\tcodec\tprofile\tpix_fmt\twidth\theight\tfps\tframes\tduration_s\taudio\tsha256\n'
  while IFS=$'\t' read -r rel src path note; do
    f="$OUT/video/$rel"
    probe=$(ffprobe -v error -select_streams v:0 -count_packets -show_entries stream=codec_name,profile,pix_fmt,width,height,avg_frame_rate,nb_read_packets:format=duration -of default=nw=1 "$f" 2>/dev/null \
      | awk -F= '{v[$1]=$2} END{printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", v["codec_name"], v["profile"], v["pix_fmt"], v["width"], v["height"], v["avg_frame_rate"], v["nb_read_packets"], v["duration"]}')
    probe="$probe	$(ffprobe -v error -select_streams a -show_entries stream=codec_name -of csv=p=0 "$f" | paste -sd, -)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rel" "$src" "$path" "$note" "$(stat -c %s "$f")" "$probe" "$(sha256sum "$f" | cut -d' ' -f1)"
  done < "$rows"
} > "$OUT/video/MANIFEST.tsv"

# ---------------------------------------------------------------------------------------------
# 5. provenance, then the checksums (last: they mark the corpus complete)
# ---------------------------------------------------------------------------------------------
rm -rf "$OUT/licenses"; mkdir -p "$OUT/licenses"
{
  printf 'package\tversion\tdeb\tlicenses_named_in_copyright\tcopyright_file\n'
  while IFS=$'\t' read -r p v deb; do
    c=$(dm_copyright "$p")
    lic=$( [ -n "$c" ] && grep -h '^License:' "$c" | sed 's/^License: *//' | sort | uniq -c | sort -rn | awk '{$1=""; sub(/^ /,""); print}' | head -6 | paste -sd ';' - || true)
    [ -n "$c" ] && cp "$c" "$OUT/licenses/$p.copyright"
    printf '%s\t%s\t%s\t%s\tlicenses/%s.copyright\n' "$p" "$v" "$deb" "${lic:-see copyright}" "$p"
  done < "$DM_CACHE/versions.tsv"
} > "$OUT/SOURCES.tsv"
( cd "$OUT" && find tests imagenet video -type f -print0 | sort -z | xargs -0 sha256sum > SHA256SUMS.tmp && mv SHA256SUMS.tmp SHA256SUMS )

dm_log "done"
for d in tests imagenet video; do
  printf '  %-9s %6s  %6d files\n' "$d" "$(du -sh "$OUT/$d" | cut -f1)" "$(find "$OUT/$d" -type f | wc -l)" >&2
done
echo "corpus ready in $OUT (cache: $DM_CACHE, $(du -sh "$DM_CACHE" | cut -f1))" >&2
