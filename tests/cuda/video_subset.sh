#!/usr/bin/env bash
# Copies the corpus clips the GPU video tests and the NVDEC benchmark need into a device corpus
# slice (what travels to a lent GPU machine is 64 MiB in all, the sysroot takes about 50): one
# clip of each format NVDEC can or cannot take, and the 1080p H.264 phone clip (about 8 MB in all).
#   bash tests/cuda/video_subset.sh build/corpus .device/corpus
set -euo pipefail
src=${1:?usage: video_subset.sh CORPUS OUT}; out=${2:?}
clips=(original/dog_phone_h264_1920x1080.mp4 original/office_h264_320x240.mp4
       derived/pedestrians_h264_bframes_longgop.mkv derived/pedestrians_hevc_768x576.mp4
       derived/pedestrians_vp9_768x576.webm original/webcam_mjpeg_160x120.avi
       original/puck_mpeg4asp_400x300.avi derived/city_h264_high10_720x404.mkv
       original/cockatoo_h264_444_1280x720.mp4 original/puck_theora_400x304.ogv
       original/ball_vp9_in_avi_320x240.avi)
rm -rf "$out/video"
for c in "${clips[@]}"; do mkdir -p "$out/video/$(dirname "$c")"; cp "$src/video/$c" "$out/video/$c"; done
cp "$src/video/MANIFEST.tsv" "$out/video/"
echo "$out/video: $(du -sh "$out/video" | cut -f1)"
