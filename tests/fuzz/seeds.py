#!/usr/bin/env python3
"""Seed inputs for one fuzz target, copied (never committed) from the real-media corpus.

    seeds.py TARGET CORPUS_DIR OUT_DIR [--limit N]

Writes OUT_DIR/<name> for every seed of TARGET: corpus edge cases (ok, exotic, corrupt, huge),
a few dozen of the smallest ImageNet-like JPEGs, PNGs (PngSuite included) and BMP/TIFF/WebP
made from a few PNGs with Pillow (skipped without it), the committed JSON specs and file lists
in tests/fuzz/seeds/<target>/. Image seeds get the targets' 32 parameter bytes appended
(tests/fuzz/fuzz_util.h), derived from the file name so seeds are the same on every run.
--limit N keeps the first N (sorted) for a quick replay. A missing corpus gives fewer seeds.
"""
import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PARAM_BYTES = 32
IMAGE_TARGETS = {"fuzz_jpeg_decoder", "fuzz_jpeg_index", "fuzz_ffmpeg_image_decoder", "fuzz_image_probe"}
VIDEO_TARGETS = {"fuzz_video"}


def files(d, exts=None, recursive=False):
    if not os.path.isdir(d):
        return []
    out = []
    for root, dirs, names in os.walk(d):
        dirs.sort()
        out += [os.path.join(root, n) for n in sorted(names)
                if exts is None or os.path.splitext(n)[1].lower() in exts]
        if not recursive:
            break
    return out


def smallest_imagenet(corpus, n):
    cands = files(os.path.join(corpus, "imagenet", "train"), {".jpeg", ".jpg"}, recursive=True)
    return sorted(cands, key=lambda p: (os.path.getsize(p), p))[:n]


def converted(pngs):
    """(name, bytes) of BMP, TIFF and WebP versions of a few PNGs."""
    try:
        from PIL import Image
    except ImportError:
        print("seeds.py: no Pillow: no BMP/TIFF/WebP seeds", file=sys.stderr)
        return []
    out = []
    for p in pngs:
        try:
            im = Image.open(p)
            im.load()
        except Exception:
            continue
        base = os.path.splitext(os.path.basename(p))[0]
        for fmt, ext, kw in (("BMP", "bmp", {}), ("TIFF", "tif", {}), ("TIFF", "lzw.tif", {"compression": "tiff_lzw"}),
                             ("WEBP", "webp", {"quality": 80}), ("WEBP", "lossless.webp", {"lossless": True})):
            try:
                src = im if fmt != "BMP" or im.mode in ("1", "L", "P", "RGB", "RGBA") else im.convert("RGB")
                buf = io.BytesIO()
                src.save(buf, fmt, **kw)
                out.append((f"{base}.{ext}", buf.getvalue()))
            except Exception:
                pass
    return out


def jpeg_crops(paths, max_pixels):
    """(name, bytes) of lossless jpegtran crops (<= max_pixels, at the origin and inside) of
    the JPEGs in `paths` larger than max_pixels, baseline and progressive, one with restart
    markers: their sampling factors and coding modes at a size fuzz_jpeg_index accepts."""
    try:
        from PIL import Image
    except ImportError:
        return []
    out = []
    for p in paths:
        try:
            with Image.open(p) as im:
                w, h = im.size
        except Exception:
            continue
        if w * h <= max_pixels:
            continue
        base = os.path.splitext(os.path.basename(p))[0]
        for tag, args in (("crop", ["-crop", "200x160+0+0"]),
                          ("crop_in", ["-crop", "176x144+40+24", "-progressive"]),
                          ("crop_rst", ["-crop", "120x96+16+16", "-restart", "2B"])):
            try:
                r = subprocess.run(["jpegtran", "-copy", "all", *args, p], capture_output=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                return out  # no jpegtran (libjpeg-turbo-progs): no crops
            if r.returncode == 0 and r.stdout:
                out.append((f"{base}.{tag}.jpg", r.stdout))
    return out


def small_videos(corpus):
    """The two smallest corpus clips as they are, and (name, bytes) of 8 frames of a corpus
    clip at 64x48 re-encoded by the ffmpeg CLI in the corpus's codecs and containers (skipped
    without ffmpeg): B-frames, a rotation, 10-bit 4:4:4, MPEG-PS, Ogg, AVI."""
    vdir = os.path.join(corpus, "video")
    clips = files(os.path.join(vdir, "original")) + files(os.path.join(vdir, "derived"))
    out = sorted(clips, key=lambda p: (os.path.getsize(p), p))[:2]
    src = os.path.join(vdir, "original", "office_h264_320x240.mp4")
    if not os.path.isfile(src):
        return out
    kinds = (("h264_bframes.mp4", ["-c:v", "libx264", "-bf", "2", "-g", "4"]),
             ("h264_rotate90.mp4", ["-c:v", "libx264", "-metadata:s:v", "rotate=90"]),
             ("h264_444_10bit.mkv", ["-c:v", "libx264", "-pix_fmt", "yuv444p10le"]),
             ("hevc.mp4", ["-c:v", "libx265", "-x265-params", "log-level=none"]),
             ("vp9.webm", ["-c:v", "libvpx-vp9"]),
             ("mpeg4_bframes.avi", ["-c:v", "mpeg4", "-bf", "1"]),
             ("mjpeg.avi", ["-c:v", "mjpeg"]),
             ("mpeg2.mpg", ["-c:v", "mpeg2video"]),
             ("theora.ogv", ["-c:v", "libtheora"]))
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in kinds:
            dst = os.path.join(tmp, name)
            try:
                r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", src, "-an", "-frames:v", "8",
                                    "-vf", "scale=64:48", *args, dst], capture_output=True, timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                print("seeds.py: no ffmpeg: no re-encoded video seeds", file=sys.stderr)
                break
            if r.returncode == 0 and os.path.isfile(dst):
                out.append((f"video_{name}", open(dst, "rb").read()))
    return out


def seeds_for(target, corpus):
    """(name, path or bytes) pairs."""
    t = os.path.join(corpus, "tests")
    jpeg = [os.path.join(t, "jpeg", k) for k in ("ok", "exotic", "corrupt", "huge", "mislabeled")]
    png = [os.path.join(t, "png", k) for k in ("ok", "ok/pngsuite", "corrupt")]
    out = []
    if target in ("fuzz_jpeg_decoder", "fuzz_jpeg_index", "fuzz_image_probe"):
        for d in jpeg:
            out += files(d, {".jpg", ".jpeg"})
        out += smallest_imagenet(corpus, 36)
    if target == "fuzz_jpeg_index":  # 64 Kpixel at most: crops of the larger ones
        out += jpeg_crops([p for d in jpeg for p in files(d, {".jpg", ".jpeg"})] + smallest_imagenet(corpus, 4),
                          1 << 16)
    if target in ("fuzz_ffmpeg_image_decoder", "fuzz_image_probe"):
        pngs = [p for d in png for p in files(d, {".png"})]
        out += pngs
        out += files(os.path.join(t, "jpeg", "exotic"), {".jpg"})  # 12-bit, lossless: FFmpeg's
        small = sorted((p for p in pngs if "/ok/" in p), key=os.path.getsize)
        out += converted(small[:4] + small[-4:])
    if target in VIDEO_TARGETS:
        out += small_videos(corpus)
    out += files(os.path.join(HERE, "seeds", target))
    if target == "fuzz_file_list":
        m = os.path.join(corpus, "imagenet", "manifest.tsv")
        if os.path.isfile(m):  # the first lines of the ImageNet-like tree as a file list
            lines = open(m, encoding="utf-8", errors="replace").read().splitlines()[1:41]
            text = "".join(f"{l.split(chr(9))[0]} {i % 7}\n" for i, l in enumerate(lines))
            out.append(("imagenet_list.txt", text.encode()))
    named = []
    for s in out:
        if isinstance(s, tuple):
            named.append(s)
        else:
            named.append((os.path.relpath(s, corpus).replace("/", "_") if s.startswith(corpus) else os.path.basename(s), s))
    return sorted(named)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("corpus")
    ap.add_argument("out")
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    seeds = seeds_for(a.target, os.path.abspath(a.corpus))
    if a.limit:
        step = max(1, len(seeds) // a.limit)  # spread over the kinds, not the first N of one
        seeds = seeds[::step][:a.limit]
    for name, src in seeds:
        data = src if isinstance(src, bytes) else open(src, "rb").read()
        if a.target in IMAGE_TARGETS | VIDEO_TARGETS:
            data += hashlib.sha256(name.encode()).digest()[:PARAM_BYTES]
        with open(os.path.join(a.out, name), "wb") as f:
            f.write(data)
    print(f"seeds.py: {len(seeds)} seeds for {a.target} in {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
