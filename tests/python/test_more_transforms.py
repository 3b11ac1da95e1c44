"""RandomErasing, RandomGrayscale, RandomApply, RandomSolarize and RandomInvert in HabanaDataLoader:
self-supervised and classification recipes run natively with torch's shapes and dtypes;
deterministic chains give torch's pixels; random ones follow torchvision's laws (RandomErasing's
erased-area distribution over the corpus, application rates, all-or-none RandomApply)."""

import math
import random
import warnings

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import ImageOps
from torch.utils.data import DataLoader

from habana_dataloader import HabanaDataLoader

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
# Decode + center crop (no resampling): the pipeline's pixels are Pillow's exactly.
CROP = [T.CenterCrop(64)]
SENTINEL = 1000.0  # an erasing value no normalised pixel comes near

RECIPES = {
    # SimCLR (Chen et al. 2020), torchvision form.
    "simclr": [T.RandomResizedCrop(64), T.RandomHorizontalFlip(),
               T.RandomApply([T.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8), T.RandomGrayscale(p=0.2),
               T.RandomApply([T.GaussianBlur(7, (0.1, 2.0))], p=0.5), T.ToTensor(), T.Normalize(MEAN, STD)],
    # MoCo v2 / BYOL view 2 (solarize), torchvision form.
    "byol": [T.RandomResizedCrop(64, interpolation=T.InterpolationMode.BICUBIC), T.RandomHorizontalFlip(),
             T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8), T.RandomGrayscale(p=0.2),
             T.RandomApply([T.GaussianBlur(7, (0.1, 2.0))], p=0.1), T.RandomSolarize(128, p=0.2),
             T.ToTensor(), T.Normalize(MEAN, STD)],
    # torchvision's classification reference (--random-erase 0.1), and value="random" twice.
    "classification": [T.RandomResizedCrop(64), T.RandomHorizontalFlip(), T.PILToTensor(),
                       T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD), T.RandomErasing(p=0.1)],
    "erasing_random": [T.Resize(72), T.CenterCrop(64), T.ToTensor(), T.Normalize(MEAN, STD),
                       T.RandomErasing(p=0.5, value="random"), T.RandomErasing(p=0.5, value=(0.1, 0.2, 0.3))],
    "no_normalize": [T.Resize(72), T.CenterCrop(64), T.RandomInvert(0.5), T.ToTensor(), T.RandomErasing(scale=(0.1, 0.2))],
    "group": [T.Resize(72), T.CenterCrop(64),
              T.RandomApply([T.ColorJitter(0.4, 0.4), T.Grayscale(3), T.RandomSolarize(100, p=1.0)], p=0.5),
              T.PILToTensor()],
}


def native(ds, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warning fails the test
        loader = HabanaDataLoader(ds, threads=2, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def folder(root, transforms):
    return torchvision.datasets.ImageFolder(str(root), T.Compose(transforms))


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_recipes_run_natively_with_torch_shapes(val_root, recipe):
    ds = folder(val_root, RECIPES[recipe])
    ours = next(iter(native(ds, batch_size=8, seed=0)))
    theirs = next(iter(DataLoader(ds, batch_size=8)))
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
    assert torch.isfinite(ours[0].float()).all()


def test_a_seed_gives_the_same_batches_whatever_the_thread_count(val_root):
    ds = folder(val_root, RECIPES["simclr"][:-2] + [T.ToTensor(), T.RandomErasing(p=0.7, value="random")])
    a = list(HabanaDataLoader(ds, batch_size=16, seed=3, threads=1))
    b = list(HabanaDataLoader(ds, batch_size=16, seed=3, threads=2))
    assert all(torch.equal(x, u) for (x, _), (u, _) in zip(a, b))


@pytest.mark.parametrize("transform", [T.RandomSolarize(128, p=1.0), T.RandomSolarize(40.5, p=1.0),
                                       T.RandomInvert(p=1.0)], ids=["solarize128", "solarize40.5", "invert"])
def test_solarize_and_invert_give_pillows_pixels(val_root, transform):
    ds = folder(val_root, CROP + [transform, T.PILToTensor()])
    n = 0
    for (x, y), (u, v) in zip(native(ds, batch_size=32), DataLoader(ds, batch_size=32)):
        assert torch.equal(y, v) and torch.equal(x, u)
        n += len(y)
    assert n == len(ds)


class Solarization:
    """DINO / BYOL / MoCo v3's own class, as they write it."""

    def __init__(self, p):
        self.p = p

    def __call__(self, img):
        if random.random() < self.p:
            return ImageOps.solarize(img)
        else:
            return img


def test_the_recipes_solarization_class_maps_to_solarize(val_root):
    ds = folder(val_root, CROP + [Solarization(1.0), T.PILToTensor()])
    for (x, _), (u, _) in zip(native(ds, batch_size=64), DataLoader(ds, batch_size=64)):
        assert torch.equal(x, u)
    ds = folder(val_root, CROP + [Solarization(0.2), T.PILToTensor()])
    plain = torch.cat([x for x, _ in native(folder(val_root, CROP + [T.PILToTensor()]), batch_size=64)])
    got = torch.cat([x for x, _ in native(ds, batch_size=64, seed=8)])
    changed = sum(not torch.equal(a, b) for a, b in zip(got, plain))
    assert abs(changed / len(got) - 0.2) <= 4 * math.sqrt(0.16 / len(got)), changed / len(got)


def test_random_grayscale_is_torchs_within_one_level(val_root):
    ds = folder(val_root, CROP + [T.RandomGrayscale(p=1.0), T.PILToTensor()])
    for (x, _), (u, _) in zip(native(ds, batch_size=64), DataLoader(ds, batch_size=64)):
        # Pillow's convert("L") rounds; torchvision's tensor weights (the kernel's) truncate.
        assert (x.int() - u.int()).abs().max() <= 1
        assert torch.equal(x[:, 0], x[:, 1]) and torch.equal(x[:, 1], x[:, 2])


def gray_rate(loader, epochs):
    hits = n = 0
    for _ in range(epochs):
        for x, _ in loader:
            g = (x[:, 0] == x[:, 1]).flatten(1).all(1) & (x[:, 1] == x[:, 2]).flatten(1).all(1)
            hits += int(g.sum())
            n += len(x)
    return hits, n


def test_random_grayscale_rate_matches_torch(val_root):
    ds = folder(val_root, CROP + [T.RandomGrayscale(p=0.3), T.PILToTensor()])
    ours, n = gray_rate(native(ds, batch_size=64, seed=1), 3)
    torch.manual_seed(0)
    theirs, m = gray_rate(DataLoader(ds, batch_size=64), 3)
    # The corpus has some gray photos: both rates count them; compare the two.
    se = math.sqrt(0.25 * (1 / n + 1 / m))
    assert abs(ours / n - theirs / m) <= 4 * se, (ours / n, theirs / m)
    assert 0.2 < ours / n < 0.5


def test_random_apply_of_several_transforms_is_all_or_none(val_root):
    plain_ds = folder(val_root, CROP + [T.PILToTensor()])
    plain = torch.cat([x for x, _ in native(plain_ds, batch_size=64)])
    group = T.RandomApply([T.Grayscale(3), T.RandomInvert(p=1.0)], p=0.4)
    ds = folder(val_root, CROP + [group, T.PILToTensor()])
    got = torch.cat([x for x, _ in native(ds, batch_size=64, seed=2)])
    gray = (0.2989 * plain[:, 0].float() + 0.587 * plain[:, 1].float() + 0.114 * plain[:, 2].float())
    applied = 0
    for k in range(len(got)):
        if torch.equal(got[k], plain[k]):
            continue
        # Applied: grayscale, then inverted (never one without the other).
        assert torch.equal(got[k, 0], got[k, 1]) and torch.equal(got[k, 1], got[k, 2]), k
        assert (got[k, 0].int() - (255 - gray[k].int())).abs().max() <= 1, k
        applied += 1
    n = len(got)
    assert abs(applied / n - 0.4) <= 4 * math.sqrt(0.24 / n), applied / n


def erased_fractions(loader, epochs):
    out = []
    for _ in range(epochs):
        for x, _ in loader:
            out += (x == SENTINEL).flatten(1).float().mean(1).tolist()
    return np.array(out)


def ks_statistic(a, b):
    grid = np.union1d(a, b)
    fa = np.searchsorted(np.sort(a), grid, side="right") / len(a)
    fb = np.searchsorted(np.sort(b), grid, side="right") / len(b)
    return float(np.abs(fa - fb).max())


def test_random_erasing_area_law_matches_torchvision_over_the_corpus(val_root):
    chain = [T.Resize(72), T.CenterCrop(64), T.ToTensor(), T.Normalize(MEAN, STD),
             T.RandomErasing(p=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=SENTINEL)]
    ds = folder(val_root, chain)
    epochs = 3
    ours = erased_fractions(native(ds, batch_size=64, seed=5), epochs)
    torch.manual_seed(0)
    theirs = erased_fractions(DataLoader(ds, batch_size=64), epochs)
    n, m = len(ours), len(theirs)
    assert n == m == epochs * len(ds)
    # Rate of erased samples: within 4 standard errors of each other.
    ro, rt = (ours > 0).mean(), (theirs > 0).mean()
    assert abs(ro - rt) <= 4 * math.sqrt(0.25 * (1 / n + 1 / m)), (ro, rt)
    # The erased fraction of the erased samples: two-sample KS at alpha = 0.001, means within 4 SE.
    a, b = ours[ours > 0], theirs[theirs > 0]
    crit = 1.949 * math.sqrt((len(a) + len(b)) / (len(a) * len(b)))
    d = ks_statistic(a, b)
    assert d <= crit, (d, crit)
    se = math.sqrt(a.var() / len(a) + b.var() / len(b))
    assert abs(a.mean() - b.mean()) <= 4 * se, (a.mean(), b.mean(), se)
    assert a.min() >= 0.02 * 0.8 and a.max() <= 0.33 * 1.2  # the scale range, up to rounding of h, w
    print(f"erasing over {n} samples: erased rate {ro:.3f} vs torch {rt:.3f}; erased fraction mean "
          f"{a.mean():.4f} vs {b.mean():.4f}, KS {d:.4f} (critical {crit:.4f})")


def test_random_erasing_rectangle_and_values(val_root):
    base = [T.Resize(72), T.CenterCrop(64), T.ToTensor(), T.Normalize(MEAN, STD)]
    plain = torch.cat([x for x, _ in native(folder(val_root, base), batch_size=64)])
    got = torch.cat([x for x, _ in native(folder(val_root, base + [T.RandomErasing(p=1.0, value="random")]),
                                          batch_size=64, seed=4)])
    values = []
    for k in range(len(got)):
        changed = (got[k] != plain[k]).any(0)
        if not changed.any():
            continue  # an empty rectangle (h or w rounded to 0)
        rows, cols = changed.any(1).nonzero().flatten(), changed.any(0).nonzero().flatten()
        h, w = int(rows[-1] - rows[0] + 1), int(cols[-1] - cols[0] + 1)
        assert h < 64 and w < 64 and 0.02 * 4096 * 0.8 <= h * w <= 0.33 * 4096 * 1.2
        rect = got[k, :, rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
        values.append(rect.flatten())
    v = torch.cat(values)
    assert len(values) > 0.9 * len(got) and v.numel() > 100000
    assert abs(v.mean().item()) < 0.02 and abs(v.std().item() - 1) < 0.02


@pytest.mark.parametrize("chain,reason", [
    ([T.PILToTensor(), T.RandomErasing()], "RandomErasing on a uint8 tensor"),
    ([T.ToTensor(), T.RandomErasing(), T.Normalize(MEAN, STD)], "Normalize after RandomErasing"),
    ([T.RandomApply([T.ColorJitter(0.4), T.RandomGrayscale(0.2)], p=0.8), T.ToTensor()], "two draws"),
    ([T.RandomApply([T.Grayscale(1)], p=0.5), T.ToTensor()], "changes the channel count"),
    ([T.RandomApply([T.RandomRotation(10)], p=0.5), T.ToTensor()], "RandomRotation inside RandomApply"),
])
def test_what_cannot_run_natively_says_why(val_root, chain, reason):
    ds = folder(val_root, [T.CenterCrop(32)] + chain)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = HabanaDataLoader(ds, batch_size=4)
    assert not loader.native and reason in loader.fallback_reason, loader.fallback_reason
