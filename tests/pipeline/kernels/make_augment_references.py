#!/usr/bin/python3
"""Golden outputs for tests/pipeline/kernels/augment_test.cc from torchvision 0.14 on PIL images
(Pillow 9.4): `make_augment_references.py OUT_DIR CORPUS_DIR`.

Same index format as make_references.py (`source ...`, `case ...` lines; raw HWC uint8 files):
- `case op=apply name=<torchvision op> magnitude=<repr> interp=nearest|bilinear|bicubic fill=<v,..|none>`:
  torchvision.transforms.autoaugment._apply_op(pil, name, magnitude, interpolation, fill), the
  function every policy calls;
- `case op=transform coeffs=a,b,c,d,e,f interp=.. fill=..`: Image.transform(AFFINE) directly;
- `case op=rotate angle=.. interp=.. fill=..`: Image.rotate;
- `case op=tensor_apply name=.. magnitude=.. interp=.. fill=..`: _apply_op on the image's uint8
  tensor (AugMix's path: torchvision's tensor ops);
- `table policy=.. op=.. bins=.. h=.. w=.. values=v0,v1,..`: the policies' magnitude tables as
  torchvision builds them (float(t.item()) of each entry).
Writes into OUT_DIR.tmp and renames, so a reader never sees half an index.
"""
import os
import shutil
import sys

import numpy as np
import torch
from PIL import Image, ImageOps
from torchvision.transforms import AugMix, AutoAugment, InterpolationMode, RandAugment, TrivialAugmentWide
from torchvision.transforms.autoaugment import _apply_op

torch.set_num_threads(1)
OUT, CORPUS = sys.argv[1], sys.argv[2]
TMP = OUT + ".tmp"
lines = []
sources = {}
MODES = {"nearest": InterpolationMode.NEAREST, "bilinear": InterpolationMode.BILINEAR,
         "bicubic": InterpolationMode.BICUBIC}
PIL_MODES = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}


def add_source(name, im):
    a = np.asarray(im)
    if a.ndim == 2:
        a = a[:, :, None]
    a = np.array(a, copy=True, order="C")
    a.tofile(os.path.join(TMP, name + ".u8"))
    sources[name] = im
    lines.append(f"source name={name} file={name}.u8 h={a.shape[0]} w={a.shape[1]} c={a.shape[2]}")


def load(rel, mode="RGB"):
    return Image.open(os.path.join(CORPUS, rel)).convert(mode)


def add_case(op, src, im, **params):
    out = np.asarray(im)
    if out.ndim == 2:
        out = out[:, :, None]
    cid = len([l for l in lines if l.startswith("case ")])
    fname = f"case_{cid}.bin"
    np.ascontiguousarray(out).tofile(os.path.join(TMP, fname))
    d0, d1, d2 = out.shape
    kv = " ".join(f"{k}={v}" for k, v in params.items())
    lines.append(f"case id={cid} op={op} src={src} layout=HWC d0={d0} d1={d1} d2={d2} dtype=u8 file={fname} {kv}")


def fill_text(fill):
    if fill is None:
        return "none"
    return repr(float(fill)) if isinstance(fill, (int, float)) else ",".join(repr(float(f)) for f in fill)


def apply_cases(src, fills):
    im = sources[src]
    h, w = im.size[1], im.size[0]
    geometric = {
        "ShearX": [0.99, -0.3, 0.033, -0.66, 0.3],
        "ShearY": [-0.99, 0.3, -0.033, 0.66],
        "TranslateX": [32.0, -17.4, 5.9, -150.0 / 331.0 * w, 1.0],
        "TranslateY": [-32.0, 17.4, -5.9, 150.0 / 331.0 * h],
        "Rotate": [135.0, -90.0, 90.0, 180.0, -30.0, 7.5, 45.0, -126.0, 0.0, 360.0 + 13.5],
    }
    for name, mags in geometric.items():
        for k, m in enumerate(mags):
            for interp in ("nearest", "bilinear", "bicubic"):
                fill = fills[k % len(fills)]
                out = _apply_op(im, name, m, interpolation=MODES[interp], fill=fill)
                add_case("apply", src, out, name=name, magnitude=repr(m), interp=interp, fill=fill_text(fill))
    pointwise = {
        "Identity": [0.0], "AutoContrast": [0.0], "Equalize": [0.0], "Invert": [0.0],
        "Brightness": [-0.99, -0.5, 0.33, 0.99, 0.0, 0.8999999761581421],
        "Color": [-0.99, -0.5, 0.33, 0.99, 0.0],
        "Contrast": [-0.99, -0.5, 0.33, 0.99, 0.0],
        "Sharpness": [-0.99, -0.5, 0.33, 0.99, 0.0],
        "Posterize": [0.0, 1.0, 2.0, 4.0, 7.0, 8.0],
        "Solarize": [255.0, 246.5, 128.0, 0.0, 8.5],
    }
    for name, mags in pointwise.items():
        for m in mags:
            out = _apply_op(im, name, m, interpolation=InterpolationMode.NEAREST, fill=None)
            add_case("apply", src, out, name=name, magnitude=repr(m), interp="nearest", fill="none")


def tensor_cases(src, fills):
    """AugMix's ops: _apply_op on the uint8 tensor of the image (torchvision's tensor path)."""
    im = sources[src]
    t = torch.from_numpy(np.array(im, copy=True))
    t = (t[:, :, None] if t.ndim == 2 else t).permute(2, 0, 1).contiguous()
    h, w = t.shape[1:]
    mags = {
        "ShearX": [0.3, -0.1, 0.033], "ShearY": [-0.3, 0.2],
        "TranslateX": [w / 3.0, -7.9, 1.0], "TranslateY": [-h / 3.0, 12.2],
        "Rotate": [30.0, -13.333333015441895, 90.0, 180.0, -3.3333332538604736],
        "Brightness": [-0.9, 0.5], "Color": [-0.7, 0.9], "Contrast": [-0.9, 0.3], "Sharpness": [-0.9, 0.9, 0.1],
        "Posterize": [0.0, 2.0, 4.0], "Solarize": [255.0, 226.6666717529297, 0.0],
        "AutoContrast": [0.0], "Equalize": [0.0],
    }
    for name, ms in mags.items():
        for k, m in enumerate(ms):
            geometric = name in ("ShearX", "ShearY", "TranslateX", "TranslateY", "Rotate")
            for interp in (("nearest", "bilinear") if geometric else ("bilinear",)):
                fill = fills[k % len(fills)] if geometric else None
                out = _apply_op(t, name, m, interpolation=MODES[interp], fill=fill)
                add_case("tensor_apply", src, out.permute(1, 2, 0).numpy(), name=name, magnitude=repr(m),
                         interp=interp, fill=fill_text(fill))


def transform_cases(src):
    im = sources[src]
    w, h = im.size
    # scaling (ImagingScaleAffine), a general matrix (16.16 fixed point), one mapping far
    # outside +-32768 (Pillow's double loop), a flip.
    for coeffs in ((0.5, 0.0, 3.25, 0.0, 1.5, -7.0), (0.9, 0.2, -5.0, -0.3, 1.1, 10.0),
                   (1.0, 0.25, 40000.0, 0.1, 1.0, -20.0), (-1.0, 0.0, float(w), 0.0, 1.0, 0.0)):
        for interp in ("nearest", "bilinear", "bicubic"):
            out = im.transform(im.size, Image.AFFINE, coeffs, PIL_MODES[interp], fillcolor=None)
            add_case("transform", src, out, coeffs=",".join(repr(c) for c in coeffs), interp=interp, fill="none")
    for k, angle in enumerate((33.3, -271.0, 90.0, 270.0, -180.0, 200.0)):
        interp = ("bilinear", "bicubic")[k % 2]
        out = im.rotate(angle, PIL_MODES[interp])
        add_case("rotate", src, out, angle=repr(angle), interp=interp, fill="none")


def table_lines():
    spaces = [("trivial_augment_wide", n, TrivialAugmentWide(num_magnitude_bins=n)._augmentation_space(n), 0, 0)
              for n in (2, 3, 10, 16, 17, 31, 32, 50, 101)]
    for (h, w) in ((224, 224), (375, 500), (147, 191), (32, 32), (1000, 7)):
        for n in (2, 10, 17, 31, 33):
            spaces.append(("rand_augment", n, RandAugment()._augmentation_space(n, (h, w)), h, w))
        spaces.append(("auto_augment_imagenet", 10, AutoAugment()._augmentation_space(10, (h, w)), h, w))
        spaces.append(("augmix", 10, AugMix()._augmentation_space(10, (h, w)), h, w))
    for policy, n, space, h, w in spaces:
        for op, (mags, signed) in space.items():
            if mags.ndim == 0:
                continue
            values = ",".join(repr(float(v.item())) for v in mags)
            lines.append(f"table policy={policy} op={op} bins={n} h={h} w={w} signed={int(signed)} values={values}")


def main():
    shutil.rmtree(TMP, ignore_errors=True)
    os.makedirs(TMP)
    photo = load("imagenet/train/n10000000/n10000000_7.JPEG")                  # 375x500
    add_source("odd", load("imagenet/train/n10000000/n10000000_11.JPEG"))     # 147x191
    add_source("small", load("tests/jpeg/ok/go_video001_q50_420.jpg"))       # 103x150
    add_source("square", photo.crop((100, 50, 260, 210)))                     # 160x160, rotations by 90 transpose
    add_source("gray", load("tests/jpeg/ok/gdk_cat_gray_512.jpg", "L").crop((0, 0, 120, 96)))
    add_source("tiny", photo.crop((10, 10, 13, 12)))                           # 2x3: filters leave it
    add_source("poster", ImageOps.posterize(photo.crop((0, 0, 90, 70)), 1))   # two values per channel
    add_source("flat", ImageOps.posterize(photo.crop((0, 0, 40, 30)), 0))     # one value
    for src, fills in (("odd", [None, [10.0, 20.0, 30.0]]), ("small", [[255.0, 0.0, 127.9]]),
                       ("square", [None]), ("gray", [None, [77.0]]), ("tiny", [None])):
        apply_cases(src, fills)
    for src in ("poster", "flat"):
        for name in ("AutoContrast", "Equalize", "Sharpness", "Contrast"):
            add_case("apply", src, _apply_op(sources[src], name, 0.5, InterpolationMode.NEAREST, None),
                     name=name, magnitude=repr(0.5), interp="nearest", fill="none")
    for src in ("odd", "square", "gray"):
        transform_cases(src)
    for src, fills in (("odd", [None, [10.0, 20.0, 30.0]]), ("square", [[127.9, 0.0, 255.0]]), ("gray", [None, 77.0]),
                       ("tiny", [None])):
        tensor_cases(src, fills)
    table_lines()
    with open(os.path.join(TMP, "index.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    shutil.rmtree(OUT, ignore_errors=True)
    os.rename(TMP, OUT)


if __name__ == "__main__":
    main()
