#!/usr/bin/python3
"""Golden images from Pillow, the independent reference for the decoder tests.

Usage: pillow_ref.py JOBS_FILE. Each line of JOBS_FILE is tab-separated: KIND SRC DST [ARGS]
  rgb     Image.open(SRC).convert("RGB")                         -> DST as binary PPM (P6)
  gray    Image.open(SRC).convert("L")                           -> DST as binary PGM (P5)
  orient  ImageOps.exif_transpose(Image.open(SRC)).convert("RGB") -> PPM
  draft   im = Image.open(SRC); im.draft("RGB", (W, H)); im.convert("RGB") -> PPM  (ARGS "W H")
  encode  Image.open(SRC) saved as DST with ARGS "FORMAT[;MODE][;key=value...]" (e.g.
          "TIFF;RGB;compression=tiff_lzw", "BMP;P", "WEBP;RGB;lossless=1")
16-bit gray PNGs open as mode "I", which Pillow's convert() clips to 255; the decoders shift
16-bit samples right by 8 instead, so for mode "I" the reference is (value >> 8).
A job that fails writes DST + ".err" with Pillow's message. Outputs are written to a temporary
name and renamed, so concurrent test processes never read half-written files.
"""
import os
import sys

import numpy as np
from PIL import Image, ImageOps


def to_mode(im, mode):
    if im.mode in ("I", "I;16", "I;16B"):
        a = (np.asarray(im).astype(np.int64) >> 8).clip(0, 255).astype(np.uint8)
        im = Image.fromarray(a, "L")
    return im.convert(mode)


def write_pnm(path, im):
    a = np.ascontiguousarray(np.asarray(im), dtype=np.uint8)
    magic = b"P6" if a.ndim == 3 else b"P5"
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(b"%s\n%d %d\n255\n" % (magic, a.shape[1], a.shape[0]))
        f.write(a.tobytes())
    os.replace(tmp, path)


def encode(src, dst, args):
    parts = args.split(";")
    fmt, options = parts[0], {}
    im = Image.open(src)
    for p in parts[1:]:
        if "=" in p:
            k, v = p.split("=", 1)
            options[k] = int(v) if v.isdigit() else v
        else:
            im = im.convert(p)
    tmp = "%s.tmp%d" % (dst, os.getpid())
    im.save(tmp, format=fmt, **options)
    os.replace(tmp, dst)


def run(kind, src, dst, args):
    if kind == "encode":
        return encode(src, dst, args)
    im = Image.open(src)
    if kind == "rgb":
        im = to_mode(im, "RGB")
    elif kind == "gray":
        im = to_mode(im, "L")
    elif kind == "orient":
        im = ImageOps.exif_transpose(im).convert("RGB")
    elif kind == "draft":
        w, h = (int(v) for v in args.split())
        im.draft("RGB", (w, h))
        im = im.convert("RGB")
    else:
        raise ValueError("unknown job kind " + kind)
    write_pnm(dst, im)


def main():
    with open(sys.argv[1]) as f:
        jobs = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    for job in jobs:
        kind, src, dst = job[:3]
        args = job[3] if len(job) > 3 else ""
        try:
            run(kind, src, dst, args)
        except Exception as e:  # noqa: BLE001 - every failure is reported to the test
            with open(dst + ".err", "w") as f:
                f.write("%s: %s\n" % (type(e).__name__, e))


if __name__ == "__main__":
    main()
