"""fn.auto_augment / fn.augmix and HabanaDataLoader's native AutoAugment / RandAugment /
TrivialAugmentWide / AugMix against torchvision 0.14 on PIL images of corpus photos.

Every native sample must be bit-identical to one of the outcomes torchvision's own _apply_op
can produce from the same PIL image under the policy (each op, magnitude and sign it may draw;
AugMix's continuous mixing weights are checked by law and in C++ by replay);
the loaders go native; per-sample mean pixel values are distributed as torch's DataLoader's
(two-sample Kolmogorov-Smirnov); a seed fixes the batches."""

import itertools
import warnings

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image
from torch.utils.data import DataLoader
from torchvision.datasets.folder import default_loader
from torchvision.transforms.autoaugment import _apply_op

from habana_dataloader import HabanaDataLoader, Pipeline, fn
from laws import mean_values, same_law

MODES = {"nearest": T.InterpolationMode.NEAREST, "bilinear": T.InterpolationMode.BILINEAR,
         "bicubic": T.InterpolationMode.BICUBIC}
AA = {"auto_augment_imagenet": T.AutoAugmentPolicy.IMAGENET, "auto_augment_cifar10": T.AutoAugmentPolicy.CIFAR10,
      "auto_augment_svhn": T.AutoAugmentPolicy.SVHN}


# The magnitude tables are torch.linspace values, which torch rounds by CPU kernel: the native
# tables are torch 1.13's on AVX2 (the reference stack, compared bit for bit in C++). Another
# torch (2.x picks AVX512 kernels) may round a few entries one float32 step apart (a translation
# of 16.0 vs 15.999999 pixels): there, a sample may also be the outcome of a neighbouring value.
REFERENCE_TORCH = torch.__version__.startswith("1.13")


def _values(v):
    v = np.float32(v)
    if REFERENCE_TORCH:
        return [float(v)]
    return [float(v), float(np.nextafter(v, np.float32(np.inf))), float(np.nextafter(v, np.float32(-np.inf)))]


def single_steps(policy, h, w, bins=31, magnitude=9):
    """Every (op, signed magnitude) one step of `policy` can apply, as torchvision draws them."""
    if policy == "trivial_augment_wide":
        space = T.TrivialAugmentWide(num_magnitude_bins=bins)._augmentation_space(bins)
        mags = lambda m: [float(v) for v in m]
    else:
        space = T.RandAugment()._augmentation_space(bins, (h, w))
        mags = lambda m: [float(m[magnitude])]
    steps = []
    for name, (m, signed) in space.items():
        values = [0.0] if m.ndim == 0 else [x for v in mags(m) for x in _values(v)]
        for v in dict.fromkeys(values):
            steps += [(name, v)] + ([(name, -v)] if signed and v else [])
    return steps


def aa_outcomes(policy, h, w):
    """Every sequence of (op, signed magnitude) an AutoAugment draw can apply."""
    aa = T.AutoAugment(AA[policy])
    space = aa._augmentation_space(10, (h, w))
    seqs = set()
    for sub in aa.policies:
        options = []
        for name, _, mid in sub:
            mags, signed = space[name]
            option = [None]
            for v in _values(mags[mid]) if mid is not None else [0.0]:
                option += [(name, v)] + ([(name, -v)] if signed and v else [])
            options.append(option)
        for a, b in itertools.product(*options):
            seqs.add(tuple(s for s in (a, b) if s is not None))
    return seqs


def apply_seq(pil, seq, interp, fill):
    for name, m in seq:
        pil = _apply_op(pil, name, m, interpolation=MODES[interp], fill=fill)
    return pil


def matches(got, pil, policy, interp, fill, num_ops=2):
    """The names of the op sequences torchvision could have applied to give `got` exactly."""
    want = np.asarray(got)
    found = set()
    if policy in AA:
        seqs = aa_outcomes(policy, pil.height, pil.width)
    else:
        steps = single_steps(policy, pil.height, pil.width)
        seqs = [(s,) for s in steps] if policy == "trivial_augment_wide" else itertools.product(steps, repeat=num_ops)
    cache = {}
    for seq in seqs:
        prefix = seq[:-1]
        if prefix not in cache:  # RandAugment: share the first step's image
            cache[prefix] = apply_seq(pil, prefix, interp, fill)
        out = apply_seq(cache[prefix], seq[-1:], interp, fill) if seq else pil
        if np.array_equal(np.asarray(out), want):
            found.add(tuple(n for n, _ in seq))
    return found


def native_pipeline(val_root, tmp_path, n, crop, **aug):
    files = sorted(val_root.glob("*/*.JPEG"))[:n]
    lst = tmp_path / "list.txt"
    lst.write_text("".join(f"{str(f)[1:]} 0\n" for f in files))
    pipe = Pipeline(batch_size=n, num_threads=2, seed=5)
    with pipe:
        enc, _ = fn.file_reader(file_list=str(lst), file_root="/")
        img = fn.crop(fn.image_decoder(enc, output_type="rgb"), crop=crop)
        pipe.set_outputs(img, fn.auto_augment(img, **aug))
    return pipe.run()


@pytest.mark.parametrize("policy,interp,fill,n", [
    ("trivial_augment_wide", "nearest", None, 12),
    ("trivial_augment_wide", "bilinear", [20.0, 40.0, 200.0], 8),
    ("rand_augment", "bicubic", None, 4),
    ("auto_augment_imagenet", "nearest", None, 10),
    ("auto_augment_cifar10", "bilinear", [128.0, 128.0, 128.0], 10),
    ("auto_augment_svhn", "nearest", None, 10),
])
def test_every_sample_is_a_torchvision_outcome(val_root, tmp_path, policy, interp, fill, n):
    images, augmented = native_pipeline(val_root, tmp_path, n, [56, 72], policy=policy, interpolation=interp,
                                        fill=fill or [])
    changed = 0
    for a, b in zip(images, augmented):
        pil = Image.fromarray(a.numpy())
        assert matches(b.numpy(), pil, policy, interp, fill), f"{policy}: no torchvision outcome equals the sample"
        changed += not torch.equal(a, b)
    assert changed > 0


def folder(root, aug, crop=64):
    return torchvision.datasets.ImageFolder(str(root), T.Compose([T.CenterCrop(crop), aug, T.PILToTensor()]))


def native_loader(ds, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = HabanaDataLoader(ds, batch_size=16, threads=2, strict=True, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def test_loader_is_native_and_exact(val_root):
    ds = folder(val_root, T.TrivialAugmentWide())
    loader = native_loader(ds, seed=1)
    seen = set()
    for b, (x, y) in enumerate(loader):
        assert x.dtype == torch.uint8 and x.shape[1:] == (3, 64, 64)
        for k in range(len(y)):
            path, label = ds.samples[b * 16 + k]
            assert int(y[k]) == label
            pil = T.CenterCrop(64)(default_loader(path))
            found = matches(x[k].permute(1, 2, 0).numpy(), pil, "trivial_augment_wide", "nearest", None)
            assert found, path
            if len(found) == 1:
                seen |= found
        if b == 3:
            break
    assert len(seen) >= 9, seen  # 64 draws over 14 ops: most show up unambiguously




@pytest.mark.parametrize("aug", [T.TrivialAugmentWide(), T.RandAugment(num_ops=2, magnitude=14),
                                 T.AutoAugment(T.AutoAugmentPolicy.IMAGENET),
                                 T.AutoAugment(T.AutoAugmentPolicy.SVHN, T.InterpolationMode.BILINEAR),
                                 T.AugMix(),
                                 T.AugMix(severity=8, mixture_width=2, chain_depth=3, alpha=0.5, all_ops=False,
                                          interpolation=T.InterpolationMode.NEAREST, fill=[30.0, 60.0, 90.0])],
                         ids=["ta_wide", "ra", "aa_imagenet", "aa_svhn_bilinear", "augmix", "augmix_args"])
def test_distribution_matches_torch(val_root, aug):
    ds = folder(val_root, aug, crop=48)
    ours = mean_values(native_loader(ds, seed=2, shuffle=False), 8)
    torch.manual_seed(0)
    theirs = mean_values(DataLoader(ds, batch_size=16, shuffle=False), 8)
    plain = mean_values(DataLoader(folder(val_root, T.Lambda(lambda x: x), crop=48), batch_size=16), 8)
    # Per-sample mean brightness after augmenting: same law (KS), and unlike no augmentation.
    assert same_law(ours, theirs)
    assert not np.allclose(ours, plain)


@pytest.mark.parametrize("aug", [T.RandAugment(), T.AugMix()], ids=["ra", "augmix"])
def test_seed_fixes_the_batches(val_root, aug):
    ds = folder(val_root, aug)
    a = next(iter(native_loader(ds, seed=7)))[0]
    b = next(iter(native_loader(ds, seed=7)))[0]
    c = next(iter(native_loader(ds, seed=8)))[0]
    assert torch.equal(a, b) and not torch.equal(a, c)


class CustomSpace(T.TrivialAugmentWide):
    def _augmentation_space(self, num_bins):
        return {"Identity": (torch.tensor(0.0), False)}


def test_what_falls_back_says_why(val_root):
    modified = T.AutoAugment()
    modified.policies = modified.policies[:3]
    cases = [(T.TrivialAugmentWide(interpolation=T.InterpolationMode.LANCZOS), "interpolation"),
             (T.RandAugment(fill=[4]), "fill"),
             (T.RandAugment(magnitude=31), "magnitude"),
             (CustomSpace(), "CustomSpace"),
             (modified, "policies"),
             (T.AugMix(interpolation=T.InterpolationMode.BICUBIC), "interpolation"),
             (T.AugMix(fill=[1.0, 2.0]), "fill")]
    for aug, why in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader = HabanaDataLoader(folder(val_root, aug), batch_size=4)
        assert not loader.native and why in loader.fallback_reason, (aug, loader.fallback_reason)
