"""timm's transforms (create_transform) on the native path: MaybeToTensor / MaybePILToTensor /
ToNumpy, RandomResizedCropAndInterpolation and RandomErasing map onto the torchvision mapping;
what does not (timm's RandAugment, interpolation='random', re_mode='rand', a random re_count)
falls back with a reason naming it. Needs timm (not a dependency): skipped without it.

    PYTHONPATH=build/python build/venv-timm/bin/python -m pytest tests/python/test_timm.py
"""

import math
import random
import warnings

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image
from torch.utils.data import DataLoader

timm = pytest.importorskip("timm", reason="timm is not installed (not a dependency; build/venv-timm has it)")
from timm.data import create_transform  # noqa: E402
from timm.data.random_erasing import RandomErasing  # noqa: E402
from timm.data.transforms import MaybeToTensor, RandomResizedCropAndInterpolation, ToTensor  # noqa: E402

from habana_dataloader import HabanaDataLoader, Pipeline, fn  # noqa: E402

STD = torch.tensor((0.229, 0.224, 0.225)).view(1, 3, 1, 1)


def loader(root, transform, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HabanaDataLoader(torchvision.datasets.ImageFolder(str(root), transform), **kw)


def native(root, transform, **kw):
    dl = loader(root, transform, **kw)
    assert dl.native, dl.fallback_reason
    return dl


def batches(dl):
    return [(x.clone(), y.clone()) for x, y in dl]


# ---- eval: the torchvision eval chain's tolerance -----------------------------------------

# The native resize of PIL images is Pillow's own arithmetic (resize pillow=True, docs/PARITY.md):
# torchvision's eval chains are equal to torch's batches up to float32 rounding, bilinear and
# bicubic. (Before, the tensor kernel kept floats between its passes where Pillow rounds to
# uint8: bicubic differed by up to 22 levels at sharp edges, mean 0.19 / 255.)
@pytest.mark.parametrize("kw, max_diff", [(dict(crop_pct=0.875, interpolation="bicubic"), 1 / 255),
                                          (dict(), 1 / 255)], ids=["bicubic-0.875", "default"])
def test_eval_transform_matches_torch(val_root, kw, max_diff):
    tf = create_transform(224, **kw)
    ours = batches(native(val_root, tf, batch_size=32))
    theirs = DataLoader(torchvision.datasets.ImageFolder(str(val_root), tf), batch_size=32)
    n, total, worst = 0, 0.0, 0.0
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(y, v) and x.shape == u.shape and x.dtype == u.dtype == torch.float32
        d = ((x - u) * STD).abs()  # in [0, 1] pixel units
        total, worst, n = total + d.sum().item(), max(worst, d.max().item()), n + d.numel()
    assert total / n <= 0.01 / 255 and worst <= max_diff + 1e-6, (total / n * 255, worst * 255)
    # Bit for bit the batches of the torchvision transforms MaybeToTensor stands for.
    same = T.Compose([*tf.transforms[:2], T.ToTensor(), tf.transforms[3]])
    for (x, y), (u, v) in zip(ours, batches(native(val_root, same, batch_size=32))):
        assert torch.equal(x, u) and torch.equal(y, v)


@pytest.mark.parametrize("kw", [dict(use_prefetcher=True), dict(normalize=False)], ids=["ToNumpy", "MaybePILToTensor"])
def test_uint8_eval_transforms_match_torch(val_root, kw):
    tf = create_transform(224, crop_pct=0.875, **kw)  # bilinear
    ours = native(val_root, tf, batch_size=32)
    theirs = DataLoader(torchvision.datasets.ImageFolder(str(val_root), tf), batch_size=32)
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(y, v) and x.shape == u.shape and x.dtype == u.dtype == torch.uint8
        d = (x.int() - u.int()).abs()
        assert d.float().mean() <= 0.01 and d.max() <= 1  # the eval chain's bound (docs/PARITY.md)


# ---- train without auto-augment ----------------------------------------------------------

def test_train_plain_is_the_torchvision_mapping_and_seeded(val_root):
    tf = create_transform(224, is_training=True)
    assert isinstance(tf.transforms[0], RandomResizedCropAndInterpolation)
    ours = batches(native(val_root, tf, batch_size=16, seed=3))
    x, y = ours[0]
    assert x.shape == (16, 3, 224, 224) and x.dtype == torch.float32
    assert all(torch.equal(a, b) and torch.equal(c, d)
               for (a, c), (b, d) in zip(ours, batches(native(val_root, tf, batch_size=16, seed=3))))
    assert not torch.equal(x, next(iter(native(val_root, tf, batch_size=16, seed=4)))[0])
    # The same graph as the torchvision transforms timm's equal: same seed, same batches.
    rrc = tf.transforms[0]
    same = T.Compose([T.RandomResizedCrop(224, scale=rrc.scale, ratio=rrc.ratio, interpolation=rrc.interpolation),
                      *tf.transforms[1:3], T.ToTensor(), tf.transforms[4]])
    for (a, c), (b, d) in zip(ours, batches(native(val_root, same, batch_size=16, seed=3))):
        assert torch.equal(a, b) and torch.equal(c, d)


def test_native_crop_windows_have_timms_distribution(val_root):
    """The native window (what RandomResizedCropAndInterpolation maps to) vs timm's get_params."""
    files = sorted(val_root.glob("*/*.JPEG"))
    sizes = [Image.open(f).size for f in files]  # (w, h), file_reader's order
    rrc = RandomResizedCropAndInterpolation(224)
    pipe = Pipeline(batch_size=len(files), num_threads=2, seed=7)
    with pipe:
        enc, _ = fn.file_reader(file_root=str(val_root))
        pipe.set_outputs(fn.image_decoder(enc, random_crop="resized", scale=list(rrc.scale), ratio=list(rrc.ratio)))
    ours, ref = ([], []), ([], [])
    random.seed(0)
    for epoch in range(3):
        (windows,) = pipe.run()
        pipe.reset(epoch + 1)
        for win, (w, h) in zip(windows, sizes):
            ours[0].append(win.shape[0] * win.shape[1] / (w * h))
            ours[1].append(math.log(win.shape[1] / win.shape[0]))
            _, _, ch, cw = rrc.get_params(Image.new("L", (w, h)), rrc.scale, rrc.ratio)
            ref[0].append(ch * cw / (w * h))
            ref[1].append(math.log(cw / ch))
    for a, b in zip(ours, ref):
        a, b = np.array(a), np.array(b)
        se = math.sqrt(a.var() / len(a) + b.var() / len(b))
        assert abs(a.mean() - b.mean()) < 4 * se, (a.mean(), b.mean(), se)
        assert np.allclose(np.quantile(a, [0.25, 0.5, 0.75]), np.quantile(b, [0.25, 0.5, 0.75]), atol=0.1)


# ---- RandomErasing -----------------------------------------------------------------------

def _erased_fractions(dl, epochs=3):
    """Per image, the fraction of pixels set to 0 in every channel (a normalized photo pixel
    is never exactly 0: the means are not multiples of 1/255)."""
    out = []
    for _ in range(epochs):
        for x, _ in dl:
            out += (x == 0).all(dim=1).float().mean(dim=(1, 2)).tolist()
    return np.array(out)


@pytest.mark.parametrize("count", [1, 3])
def test_const_erasing_has_timms_distribution(val_root, count):
    erase = RandomErasing(0.5, mode="const", min_count=count, max_count=count, device="cpu")
    tf = T.Compose([T.Resize(64), T.CenterCrop(56), MaybeToTensor(), T.Normalize((0.485, 0.456, 0.406),
                                                                                 (0.229, 0.224, 0.225)), erase])
    ours = _erased_fractions(native(val_root, tf, batch_size=32, seed=1))
    random.seed(0)
    theirs = _erased_fractions(DataLoader(torchvision.datasets.ImageFolder(str(val_root), tf), batch_size=32))
    n = len(ours)
    rate_a, rate_b = (ours > 0).mean(), (theirs > 0).mean()
    assert abs(rate_a - rate_b) < 4 * math.sqrt(0.5 / n), (rate_a, rate_b)
    a, b = ours[ours > 0], theirs[theirs > 0]
    se = math.sqrt(a.var() / len(a) + b.var() / len(b))
    assert abs(a.mean() - b.mean()) < 4 * se, (a.mean(), b.mean(), se)
    assert a.max() <= 1 / 3 + 0.02


def test_pixel_erasing_draws_standard_normal_values(val_root):
    base = [T.Resize(64), T.CenterCrop(56), MaybeToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]
    erase = RandomErasing(1.0, mode="pixel", device="cpu")
    plain = batches(native(val_root, T.Compose(base), batch_size=32))
    erased = batches(native(val_root, T.Compose(base + [erase]), batch_size=32, seed=2))
    diff = torch.cat([(a != b).flatten() for (a, _), (b, _) in zip(erased, plain)])
    vals = torch.cat([a[a != b] for (a, _), (b, _) in zip(erased, plain)])
    assert diff.float().mean() > 0.05
    assert abs(vals.mean().item()) < 0.05 and abs(vals.std().item() - 1) < 0.05


# ---- what falls back, and why ------------------------------------------------------------

def _reason(root, tf):
    dl = loader(root, tf, batch_size=4)
    assert not dl.native
    return dl.fallback_reason


def test_fallback_reasons_name_timms_transforms(val_root):
    train = create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1", re_prob=0.25,
                             interpolation="bicubic")
    r = _reason(val_root, train)
    assert r.startswith("timm RandAugment (rand-m9-mstd0.5-inc1): timm's op set (") and "SolarizeAdd" in r, r
    assert "RandomErasing" not in r and "RandomResizedCrop" not in r and "ToTensor" not in r, r
    r = _reason(val_root, create_transform(224, is_training=True, interpolation="random"))
    assert r == ("timm RandomResizedCropAndInterpolation(interpolation='random'): a random choice of bilinear or "
                 "bicubic per image has no native mapping"), r
    r = _reason(val_root, create_transform(224, is_training=True, re_prob=0.25, re_mode="rand"))
    assert r.startswith("timm RandomErasing(mode='rand', count=(1, 1)): one standard normal colour per channel"), r
    r = _reason(val_root, create_transform(224, is_training=True, re_prob=0.25, re_count=3))
    assert r.startswith("timm RandomErasing(mode='const', count=(1, 3)): a random number of rectangles"), r
    r = _reason(val_root, T.Compose([T.Resize(64), ToTensor()]))
    assert r.startswith("timm ToTensor(dtype=torch.float32): unscaled pixel values"), r
    r = _reason(val_root, create_transform(224, crop_pct=0.875, crop_mode="border"))
    assert "timm's ResizeKeepRatio has no native mapping" in r and "timm's CenterCropOrPad" in r, r

    class NoisyToTensor(MaybeToTensor):
        def __call__(self, pic):
            return super().__call__(pic) + 0.01 * torch.randn(1)

    r = _reason(val_root, T.Compose([T.Resize(64), NoisyToTensor()]))
    assert r.startswith("NoisyToTensor overrides how timm's MaybeToTensor transforms"), r

    class SameToTensor(MaybeToTensor):  # only a new name: maps as timm's
        pass

    native(val_root, T.Compose([T.Resize(64), T.CenterCrop(56), SameToTensor()]), batch_size=4)


def test_timm_recipes_reach(val_root):
    import recipes
    built = recipes.timm_recipes()
    assert sorted(built) == sorted(recipes.TIMM_RECIPES)
    native_names = [n for n in built if recipes.build(n, str(val_root), batch_size=4, builders=built).native]
    assert len(native_names) >= recipes.TIMM_MIN_NATIVE, native_names
