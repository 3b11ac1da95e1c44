#!/usr/bin/python3
"""Golden outputs for tests/pipeline/kernels from torchvision 0.14 (and Pillow where torchvision's
tensor path has no such op): `make_references.py OUT_DIR CORPUS_DIR`.

Decodes a few real corpus photos with PIL, writes their pixels (HWC uint8, raw) and, for each
case, the reference output (HWC unless the case says layout=CHW; raw little-endian) plus one
line in OUT_DIR/index.txt:  `source name=.. file=.. h= w= c=`, `case id=.. op=.. src=.. h= w= c=
dtype=.. file=.. <params>`, `size in_h= in_w= size= max_size= h= w=`.
Writes into OUT_DIR.tmp and renames, so a reader never sees half an index.
"""
import os
import shutil
import sys

import numpy as np
import torch
import torchvision.transforms.functional as F
from PIL import Image, ImageFilter, ImageOps
from torchvision.transforms import InterpolationMode

torch.set_num_threads(1)
OUT, CORPUS = sys.argv[1], sys.argv[2]
TMP = OUT + ".tmp"
lines = []
sources = {}
DT = {np.uint8: "u8", np.float32: "f32", np.float16: "f16", np.int16: "bf16"}


def add_source(name, rel, mode):
    im = Image.open(os.path.join(CORPUS, rel)).convert(mode)
    a = np.asarray(im)
    if a.ndim == 2:
        a = a[:, :, None]
    a = np.array(a, copy=True, order="C")
    a.tofile(os.path.join(TMP, name + ".u8"))
    sources[name] = (im, a)
    lines.append(f"source name={name} file={name}.u8 h={a.shape[0]} w={a.shape[1]} c={a.shape[2]}")


def chw(name):
    return torch.from_numpy(sources[name][1]).permute(2, 0, 1).contiguous()


def add_case(op, src, out, layout="HWC", **params):
    """out: torch tensor CHW (or HWC numpy array when layout is given as 'HWC-np')."""
    if isinstance(out, torch.Tensor):
        if out.dtype == torch.bfloat16:
            out = out.view(torch.int16)
        if layout == "HWC":
            out = out.permute(1, 2, 0)
        out = out.contiguous().numpy()
    elif out.ndim == 2:
        out = out[:, :, None]
    cid = len([l for l in lines if l.startswith("case ")])
    fname = f"case_{cid}.bin"
    np.ascontiguousarray(out).tofile(os.path.join(TMP, fname))
    d0, d1, d2 = out.shape
    kv = " ".join(f"{k}={v}" for k, v in params.items())
    lines.append(f"case id={cid} op={op} src={src} layout={layout} d0={d0} d1={d1} d2={d2} "
                 f"dtype={DT[out.dtype.type]} file={fname} {kv}".rstrip())


MODES = {"bilinear": InterpolationMode.BILINEAR, "bicubic": InterpolationMode.BICUBIC,
         "nearest": InterpolationMode.NEAREST}
PIL_FILTERS = {"box": Image.BOX, "lanczos": Image.LANCZOS}
PILLOW_FILTERS = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC,
                  "box": Image.BOX, "lanczos": Image.LANCZOS}


def resize_cases(src, sizes):
    t = chw(src)
    for (h, w) in sizes:
        for filt, aa in (("bilinear", 1), ("bicubic", 1), ("bilinear", 0), ("bicubic", 0),
                         ("nearest", 0)):
            out = F.resize(t, [h, w], MODES[filt], antialias=bool(aa))
            add_case("resize", src, out, filter=filt, antialias=aa)
        for filt, pf in PIL_FILTERS.items():
            out = np.asarray(sources[src][0].resize((w, h), pf))
            add_case("resize", src, out, filter=filt, antialias=1, ref="pil")
        # PIL.Image.resize for every filter: what torchvision's Resize does to PIL images
        # (ResizeOptions::pillow).
        for filt, pf in PILLOW_FILTERS.items():
            out = np.asarray(sources[src][0].resize((w, h), pf))
            add_case("resize", src, out, filter=filt, antialias=1, pillow=1, ref="pillow")
    h, w = sizes[0]
    out = F.resize(t.float(), [h, w], InterpolationMode.BILINEAR, antialias=True)
    add_case("resize_f32", src, out, filter="bilinear", antialias=1)


def geometry_cases(src):
    t = chw(src)
    H, W = t.shape[1:]
    for (top, left, h, w) in ((10, 20, H // 2, W // 2 + 1), (-15, -7, H // 3, W + 20),
                              (H - 50, W - 60, 100, 130)):
        add_case("crop", src, F.crop(t, top, left, h, w), top=top, left=left)
    for mode, pad, fill in (("constant", (3, 5, 11, 2), 7), ("edge", (4, 0, 9, 13), 0),
                            ("reflect", (10, 3, 0, 7), 0), ("symmetric", (6, 6, 2, 9), 0)):
        out = F.pad(t, list(pad), fill=fill, padding_mode=mode)
        add_case("pad", src, out, mode=mode, left=pad[0], top=pad[1], right=pad[2],
                 bottom=pad[3], fill=fill)
    add_case("flip", src, F.hflip(t), horizontal=1, vertical=0)
    add_case("flip", src, F.vflip(t), horizontal=0, vertical=1)
    add_case("flip", src, F.vflip(F.hflip(t)), horizontal=1, vertical=1)
    add_case("hwc_to_chw", src, t, layout="CHW")


MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def normalize_cases(src):
    t = chw(src)
    top, left, h, w = 30, 40, 224, 200
    for mirror in (0, 1):
        c = F.crop(t, top, left, h, w)
        if mirror:
            c = F.hflip(c)
        x = F.normalize(c.float().div(255), MEAN, STD)
        p = dict(top=top, left=left, mirror=mirror)
        add_case("cmn", src, x, layout="CHW", **p)
        add_case("cmn", src, x, layout="HWC", **p)
        add_case("cmn", src, x.half(), layout="CHW", **p)
        add_case("cmn", src, x.bfloat16(), layout="CHW", **p)
        add_case("cmn", src, c, layout="CHW", **p)
    x = F.normalize(t.float().div(255), MEAN, STD)
    add_case("normalize", src, x)
    add_case("cast", src, x.half(), from_="normalized")
    add_case("cast", src, x.bfloat16(), from_="normalized")
    add_case("cast", src, (t.float() * 0.9 + 0.3).to(torch.uint8), from_="scaled")


def color_cases(src):
    t = chw(src)
    if t.shape[0] == 3:
        add_case("grayscale", src, F.rgb_to_grayscale(t))
        add_case("rgb_to_bgr", src, t.flip(0))
        im = sources[src][0]
        ycc = np.asarray(im.convert("YCbCr"))
        add_case("rgb_to_ycbcr", src, ycc)
        add_case("ycbcr_to_rgb", src, np.asarray(Image.fromarray(ycc, "YCbCr").convert("RGB")))
        for f in (0.0, 0.5, 1.7):
            add_case("saturation", src, F.adjust_saturation(t, f), factor=f)
        for f in (-0.45, -0.1, 0.25, 0.5):
            add_case("hue", src, F.adjust_hue(t, f), factor=f)
    for f in (0.4, 1.3):
        add_case("brightness", src, F.adjust_brightness(t, f), factor=f)
    for f in (0.5, 1.6):
        add_case("contrast", src, F.adjust_contrast(t, f), factor=f)
    im = sources[src][0]
    for th in (0, 1, 128, 192.5, 255, 256):  # Pillow (the PIL stage's RandomSolarize / RandomInvert)
        add_case("solarize", src, np.asarray(ImageOps.solarize(im, th)), threshold=th, ref="pil")
    add_case("solarize", src, np.asarray(ImageOps.invert(im)), threshold=0, ref="pil_invert")
    for th in (0, 64, 128.5, 255):  # torchvision's tensor solarize
        add_case("solarize", src, F.solarize(t, th), threshold=th, ref="torchvision")
    for (kx, ky, sx, sy) in ((5, 5, 1.5, 1.5), (3, 7, 0.8, 2.0), (9, 9, 3.0, 3.0), (21, 21, 5.0, 5.0)):
        add_case("blur", src, F.gaussian_blur(t, [kx, ky], [sx, sy]), kx=kx, ky=ky, sx=sx, sy=sy)
    # Pillow's GaussianBlur (box approximation): small, fractional and huge radii (past the
    # image size: the edge_a > edge_b branch).
    for r in (0.1, 0.75, 1.9, 6.0, 300.0):
        add_case("pil_blur", src, np.asarray(sources[src][0].filter(ImageFilter.GaussianBlur(r))), radius=r)


def erase_cases(src):
    """F.erase on the normalised float32 CHW image (what RandomErasing sees after Normalize)."""
    x = F.normalize(chw(src).float().div(255), MEAN, STD)
    H, W = x.shape[1:]
    for (i, j, h, w, kind) in ((10, 20, 50, 60, "channels"), (0, 0, H - 1, W - 1, "one"),
                               (H - 7, W - 9, 7, 9, "patch"), (5, 5, 0, 9, "one")):
        if kind == "channels":
            v = torch.tensor([1.5, -2.0, 3.25])[:, None, None]
        elif kind == "one":
            v = torch.tensor([-0.75])[:, None, None]
        else:  # a patch the test can rebuild exactly
            v = (torch.arange(3 * h * w, dtype=torch.float32) / 7).reshape(3, h, w)
        add_case("erase", src, F.erase(x, i, j, h, w, v), layout="CHW", top=i, left=j, h=h, w=w, kind=kind)


def size_cases():
    shapes = ((375, 500), (500, 375), (147, 191), (1, 1000), (333, 333), (997, 1579), (481, 640),
              (103, 150), (2, 3))
    for (h, w) in shapes:
        for size in (1, 7, 224, 256, 299, 383):
            for max_size in (None, 300, 512, 1000):
                if max_size is not None and max_size <= size:
                    continue
                oh, ow = F._compute_resized_output_size((h, w), [size], max_size)
                lines.append(f"size in_h={h} in_w={w} size={size} max_size={max_size or -1} "
                             f"h={oh} w={ow}")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    add_source("photo", "imagenet/train/n10000000/n10000000_7.JPEG", "RGB")     # 375x500
    add_source("odd", "imagenet/train/n10000000/n10000000_11.JPEG", "RGB")      # 147x191
    add_source("small", "tests/jpeg/ok/go_video001_q50_420.jpg", "RGB")         # 103x150
    add_source("gray", "tests/jpeg/ok/gdk_cat_gray_512.jpg", "L")                # 512x512x1
    add_source("big", "imagenet/train/n10000000/n10000000_5.JPEG", "RGB")       # 1579x997
    resize_cases("photo", [(224, 224), (113, 97), (751, 750), (125, 517), (375, 250), (750, 500),
                           (1, 5)])
    resize_cases("odd", [(224, 224), (73, 95), (300, 191), (147, 64), (29, 400)])
    resize_cases("small", [(224, 224), (51, 75), (103, 301)])
    resize_cases("gray", [(224, 224), (300, 700)])
    resize_cases("big", [(224, 224), (256, 162)])
    t = chw("photo")
    add_case("resized_crop", "photo", F.resized_crop(t, 31, 47, 250, 301, [224, 224], antialias=True),
             top=31, left=47, crop_h=250, crop_w=301)
    for s in ("photo", "odd", "gray"):
        geometry_cases(s)
    for s in ("photo", "odd"):
        normalize_cases(s)
        erase_cases(s)
    for s in ("photo", "odd", "gray"):
        color_cases(s)
    size_cases()
    with open(os.path.join(TMP, "index.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.rmtree(OUT, ignore_errors=True)
    os.rename(TMP, OUT)


if __name__ == "__main__":
    main()
