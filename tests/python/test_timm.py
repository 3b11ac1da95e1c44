"""timm's transforms (create_transform) on the native path: MaybeToTensor / MaybePILToTensor /
ToNumpy, RandomResizedCropAndInterpolation and RandomErasing map onto the torchvision mapping;
timm's RandAugment and AutoAugment onto the timm_augment operator (every op bit-exact with
timm's on the same PIL image; policies with timm's law); interpolation='random' (train.py's
default) onto the resize's random_interpolation; RandomErasing's modes and counts onto
random_erasing; AugMix onto timm_augment's augmix policy; what does not map falls back with a
reason naming it. Needs timm (not a dependency): skipped without it.

    PYTHONPATH=build/python build/venv-timm/bin/python -m pytest tests/python/test_timm.py
"""

import math
import random
import warnings

import numpy as np
import PIL
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image, ImageOps
from torch.utils.data import DataLoader

timm = pytest.importorskip("timm", reason="timm is not installed (not a dependency; build/venv-timm has it)")
from timm.data import create_transform  # noqa: E402
from timm.data.random_erasing import RandomErasing  # noqa: E402
from timm.data import auto_augment as timm_aa  # noqa: E402
from timm.data.auto_augment import augment_and_mix_transform, auto_augment_transform, rand_augment_transform  # noqa: E402
from timm.data.transforms import MaybeToTensor, RandomResizedCropAndInterpolation, ToTensor  # noqa: E402

from habana_dataloader import HabanaDataLoader, Pipeline, fn  # noqa: E402
from laws import mean_values, same_law  # noqa: E402

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

# The native resize of PIL images (docs/PARITY.md) is Pillow's own arithmetic (resize
# pillow=True) for every filter: equal to torch's batches up to float32 rounding.
@pytest.mark.parametrize("kw, mean_diff, max_diff", [(dict(crop_pct=0.875, interpolation="bicubic"), 0.01, 1),
                                                     (dict(), 0.01, 1)], ids=["bicubic-0.875", "default"])
def test_eval_transform_matches_torch(val_root, kw, mean_diff, max_diff):
    tf = create_transform(224, **kw)
    ours = batches(native(val_root, tf, batch_size=32))
    theirs = DataLoader(torchvision.datasets.ImageFolder(str(val_root), tf), batch_size=32)
    n, total, worst = 0, 0.0, 0.0
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(y, v) and x.shape == u.shape and x.dtype == u.dtype == torch.float32
        d = ((x - u) * STD).abs()  # in [0, 1] pixel units
        total, worst, n = total + d.sum().item(), max(worst, d.max().item()), n + d.numel()
    assert total / n <= mean_diff / 255 and worst <= (max_diff + 1e-4) / 255, (total / n * 255, worst * 255)
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
        assert torch.equal(x, u)  # Pillow's bilinear, bit for bit


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


def test_random_interpolation_is_bilinear_or_bicubic_per_image(val_root):
    """train.py's default --train-interpolation random: each image's window resized with Pillow's
    bilinear or bicubic, drawn after the window. Per image, the batch equals the bicubic loader's
    (Pillow's arithmetic both) or is within a grey level of the bilinear one's (a random window's
    bilinear keeps the tensor kernel), and both occur."""
    def tf(interp):
        return T.Compose([RandomResizedCropAndInterpolation(64, interpolation=interp), MaybeToTensor()])

    rnd, cub, lin = (batches(native(val_root, tf(i), batch_size=8, seed=5)) for i in ("random", "bicubic", "bilinear"))
    kinds = []
    for (r, _), (c, _), (l, _) in zip(rnd, cub, lin):
        for a, b, d in zip(r, c, l):
            is_c, is_l = torch.equal(a, b), (a - d).abs().max().item() <= 1 / 255 + 1e-6
            assert is_c or is_l
            kinds += ["bicubic"] if is_c and not is_l else ["bilinear"] if is_l and not is_c else []
    assert "bicubic" in kinds and "bilinear" in kinds, kinds


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


@pytest.mark.parametrize("count", [(1, 1), (3, 3), (1, 3)], ids=["1", "3", "1-3"])
def test_const_erasing_has_timms_distribution(val_root, count):
    erase = RandomErasing(0.5, mode="const", min_count=count[0], max_count=count[1], device="cpu")
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


def test_rand_erasing_is_one_normal_colour_per_channel(val_root):
    """mode 'rand' (re_mode='rand'): each rectangle one standard normal value per channel."""
    base = [T.Resize(64), T.CenterCrop(56), MaybeToTensor(), T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))]
    erase = RandomErasing(1.0, mode="rand", device="cpu")
    plain = batches(native(val_root, T.Compose(base), batch_size=32))
    erased = batches(native(val_root, T.Compose(base + [erase]), batch_size=32, seed=2))
    colours = []
    for (a, _), (b, _) in zip(erased, plain):
        for x, y in zip(a, b):
            changed = (x != y).any(dim=0)
            if not changed.any():
                continue
            ys, xs = changed.nonzero(as_tuple=True)
            box = x[:, ys.min():ys.max() + 1, xs.min():xs.max() + 1]
            assert bool((box == box[:, :1, :1]).all()), "not one value per channel"
            colours += box[:, 0, 0].tolist()
    colours = torch.tensor(colours)
    assert len(colours) > 60
    assert abs(colours.mean().item()) < 5 / math.sqrt(len(colours)) and abs(colours.std().item() - 1) < 0.3


# ---- timm's RandAugment and AutoAugment: timm_augment ------------------------------------

# Every op timm's rand / auto policies use (NAME_TO_OP), at levels inside and beyond the
# default bound; GaussianBlurRand's radius is continuous (checked by law below).
EXACT_OPS = [n for n in timm_aa.NAME_TO_OP if n != "GaussianBlurRand"]
PIL_FILTERS = {"nearest": Image.NEAREST, "bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}
IMG_MEAN = (124, 116, 104)
# Pillow 13 refuses ImageOps.posterize(img, 0), which timm 1.0.15 asks for (Posterize below
# level 2.5, PosterizeIncreasing at 10): timm's own RandAugment then raises now and then.
PIL_REJECTS_ZERO_BITS = int(PIL.__version__.split(".")[0]) >= 13


def _decoded(val_root, tmp_path, n, crop):
    """n corpus photos decoded and cropped natively, as uint8 HWC tensors."""
    files = sorted(val_root.glob("*/*.JPEG"))[:n]
    lst = tmp_path / "list.txt"
    lst.write_text("".join(f"{str(f)[1:]} 0\n" for f in files))
    return lst


def _native_timm(lst, n, crop, seed=5, **args):
    pipe = Pipeline(batch_size=n, num_threads=2, seed=seed)
    with pipe:
        enc, _ = fn.file_reader(file_list=str(lst), file_root="/")
        img = fn.crop(fn.image_decoder(enc, output_type="rgb"), crop=crop)
        pipe.set_outputs(img, fn.timm_augment(img, **args))
    return pipe.run()


def _timm_outcomes(pil, name, magnitude, hparams, interp, monkeypatch):
    """What timm's AugmentOp(name) at this magnitude can give `pil` (each sign of the level)."""
    outs = []
    for u in (0.0, 0.9):  # _randomly_negate: random.random() > 0.5 negates
        monkeypatch.setattr(timm_aa.random, "random", lambda: u)
        level_fn = timm_aa.LEVEL_TO_ARG[name]
        args = level_fn(magnitude, hparams) if level_fn is not None else ()
        monkeypatch.undo()
        if name.startswith("Posterize") and args[0] <= 0 and PIL_REJECTS_ZERO_BITS:
            # Pillow 13 raises for ImageOps.posterize(img, 0) (timm then fails); Pillow up to 12
            # gives the black image timm meant, which the native op keeps.
            outs.append(np.zeros_like(np.asarray(pil)))
            continue
        outs.append(np.asarray(timm_aa.NAME_TO_OP[name](pil, *args, fillcolor=IMG_MEAN, resample=PIL_FILTERS[interp])))
    return outs


@pytest.mark.parametrize("interp", ["bicubic", "bilinear", "nearest"])
def test_every_timm_op_is_exact(val_root, tmp_path, monkeypatch, interp):
    n, crop = 3, [56, 72]
    lst = _decoded(val_root, tmp_path, n, crop)
    hparams = {"translate_const": 30, "img_mean": IMG_MEAN, "translate_pct": 0.45}
    for name in EXACT_OPS:
        for magnitude in (3.7, 9, 10):
            images, out = _native_timm(lst, n, crop, ops=[name], probabilities=[1.0], magnitudes=[float(magnitude)],
                                       num_layers=1, interpolation=[interp], fill=[float(v) for v in IMG_MEAN],
                                       translate_const=30.0)
            for a, b in zip(images, out):
                outs = _timm_outcomes(Image.fromarray(a.numpy()), name, float(magnitude), hparams, interp, monkeypatch)
                assert any(np.array_equal(b.numpy(), o) for o in outs), \
                    f"{name} at {magnitude} ({interp}): max diff {min(np.abs(b.numpy().astype(int) - o).max() for o in outs)}"


def _law_folder(root, aug, crop=48):
    return torchvision.datasets.ImageFolder(str(root), T.Compose([T.CenterCrop(crop), aug, T.PILToTensor()]))




@pytest.mark.parametrize("config", ["rand-m9-mstd0.5-inc1", "rand-m7-n3-mstd101-p0.8", "rand-m9-mstd0.5-tweights",
                                    "rand-m10-n2-t3aw", "original-mstd0.5", "v0r", "3a", "augmix-m5-w4-d2",
                                    "augmix-m3-w3", "augmix-m9-w2-d1-a0.5"])
def test_timm_policies_are_native_with_timms_law(val_root, config):
    if PIL_REJECTS_ZERO_BITS and config in ("rand-m7-n3-mstd101-p0.8", "rand-m10-n2-t3aw"):
        pytest.skip(f"timm {timm.__version__}'s {config} raises under Pillow {PIL.__version__} (posterize to 0 bits)")
    hparams = {"translate_const": 21, "img_mean": IMG_MEAN}
    make = {"rand": rand_augment_transform, "augmix": augment_and_mix_transform}.get(config.split("-")[0],
                                                                                   auto_augment_transform)
    aug = make(config, dict(hparams))
    ds = _law_folder(val_root, aug)
    ours = mean_values(native(val_root, ds.transform, batch_size=16, seed=2, shuffle=False), 10)
    random.seed(0), np.random.seed(0)
    theirs = mean_values(DataLoader(ds, batch_size=16), 10)
    plain = mean_values(DataLoader(_law_folder(val_root, T.Lambda(lambda x: x)), batch_size=16), 10)
    assert same_law(ours, theirs), config
    assert not np.allclose(ours, plain)


def test_augmix_mix_and_blend_are_numpys_and_pillows(val_root, tmp_path):
    """AugMix of one chain of one deterministic op (Invert): the mix is the chain (weight 1), so a
    sample must be Image.blend(image, invert(image), m) for a float32 m within the bounds its
    pixels put on m: checked over those float32 values, exactly."""
    n, crop = 6, [40, 40]
    lst = _decoded(val_root, tmp_path, n, crop)
    images, mixed = _native_timm(lst, n, crop, policy="augmix", ops=["Invert"], probabilities=[1.0], magnitudes=[0.0],
                                 width=1, depth=1)
    for img, out in zip(images, mixed):
        a, out = Image.fromarray(img.numpy()), out.numpy()
        b = ImageOps.invert(a)
        d = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
        o = out.astype(np.float64) - np.asarray(a, dtype=np.float64)
        # trunc(a + m * d) == out bounds m per pixel; the float32 values in all the bounds are
        # the candidates, and one of them must give Pillow's blend exactly.
        pos, neg = d > 0, d < 0
        lo = max((o[pos] / d[pos]).max(initial=0.0), ((o[neg] + 1) / d[neg]).max(initial=0.0))
        hi = min(((o[pos] + 1) / d[pos]).min(initial=1.0), (o[neg] / d[neg]).min(initial=1.0))
        assert lo <= hi, (lo, hi)
        m, found = np.float32(lo), False
        for _ in range(4096):
            if m > hi or found:
                break
            found = np.array_equal(np.asarray(Image.blend(a, b, float(m))), out)
            m = np.nextafter(m, np.float32(2))
        assert found, (lo, hi)


def test_rand_augment_sample_is_a_timm_outcome(val_root, tmp_path, monkeypatch):
    """Fixed magnitude (no noise), two layers of p = 0.5: every native sample is one of the images
    timm can make from the same input (no op, one op, or two, each with either sign)."""
    ra = rand_augment_transform("rand-m9-n2", {"img_mean": IMG_MEAN, "interpolation": Image.BILINEAR})
    n, crop = 6, [40, 48]
    lst = _decoded(val_root, tmp_path, n, crop)
    from functools import partial

    from habana_dataloader._timm import as_torchvision as _as_torchvision
    from habana_dataloader._transform_table import TIMM_TRANSLATORS
    as_torchvision = partial(_as_torchvision, translators=TIMM_TRANSLATORS)
    op = as_torchvision(ra)[0]
    assert op.op == "timm_augment" and op.args["magnitudes"] == [9.0] * 15, op.args
    images, out = _native_timm(lst, n, crop, seed=7, **op.args)
    hparams = ra.ops[0].hparams
    names = [o.name for o in ra.ops]
    changed = 0
    for a, b in zip(images, out):
        pil = Image.fromarray(a.numpy())
        want = b.numpy()
        found = np.array_equal(np.asarray(pil), want)
        firsts = [Image.fromarray(o) for name in names
                  for o in _timm_outcomes(pil, name, 9.0, hparams, "bilinear", monkeypatch)]
        for first in firsts:
            if found:
                break
            found = np.array_equal(np.asarray(first), want) or any(
                np.array_equal(o, want) for name in names
                for o in _timm_outcomes(first, name, 9.0, hparams, "bilinear", monkeypatch))
        assert found, "no timm outcome equals the sample"
        changed += not np.array_equal(a.numpy(), want)
    assert changed > 0


def test_deit_train_transform_is_native_and_seeded(val_root):
    tf = create_transform(input_size=96, is_training=True, color_jitter=0.3, auto_augment="rand-m9-mstd0.5-inc1",
                          interpolation="bicubic", re_prob=0.25, re_mode="pixel", re_count=1)
    a = batches(native(val_root, tf, batch_size=16, seed=3, shuffle=True))[:3]
    b = batches(native(val_root, tf, batch_size=16, seed=3, shuffle=True))[:3]
    for (x, y), (u, v) in zip(a, b):
        assert torch.equal(x, u) and torch.equal(y, v)
    assert a[0][0].shape == (16, 3, 96, 96) and a[0][0].dtype == torch.float32


# ---- what falls back, and why ------------------------------------------------------------

def _reason(root, tf):
    dl = loader(root, tf, batch_size=4)
    assert not dl.native
    return dl.fallback_reason


def test_fallback_reasons_name_timms_transforms(val_root):
    native(val_root, create_transform(64, is_training=True, auto_augment="augmix-m5-w4-d2", re_prob=0.25,
                                      interpolation="bicubic"), batch_size=4)
    train = create_transform(224, is_training=True, auto_augment="augmix-m5-w4-d2-b1", re_prob=0.25,
                             interpolation="bicubic")
    r = _reason(val_root, train)
    assert r.startswith("timm AugMixAugment (width 4, depth 2, alpha 1.0): blended=True"), r
    assert "RandomErasing" not in r and "RandomResizedCrop" not in r and "ToTensor" not in r, r
    ra = rand_augment_transform("rand-m9-mstd0.5", {"interpolation": Image.LANCZOS})
    r = _reason(val_root, T.Compose([T.CenterCrop(64), ra, T.PILToTensor()]))
    assert r.startswith("timm RandAugment (rand-m9-mstd0.5): resampling (1,)"), r
    for kw in (dict(re_mode="rand"), dict(re_count=3), dict(re_mode="pixel", re_count=2)):
        native(val_root, create_transform(64, is_training=True, re_prob=0.25, **kw), batch_size=4)
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
