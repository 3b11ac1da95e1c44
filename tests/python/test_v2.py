"""torchvision.transforms.v2 on the native path (_v2.py): each v2 transform that maps equals,
on PIL images of corpus photos, the v1 transform it maps to (torchvision's own outputs, same
torch seed); native loaders of v2 chains are byte for byte the native loaders of the v1 chains
written out by hand (same seed), within the documented tolerance of torch's DataLoader running
the v2 chain (eval chains) or of its law (random chains, Kolmogorov-Smirnov on per-sample
means); what does not map says why; MixUp / CutMix in a collate_fn and the references'
--use-v2 presets (recipes.py). Needs torchvision 0.15+; Debian's 0.14 has no transforms.v2:
those tests skip, saying so."""

import glob
import warnings

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from functools import partial

from PIL import Image
from torch.utils.data import DataLoader, default_collate

from habana_dataloader import HabanaDataLoader
from habana_dataloader._transform_table import V2_TRANSLATORS
from habana_dataloader._v2 import as_v1 as _as_v1
from laws import mean_values, same_law

as_v1 = partial(_as_v1, translators=V2_TRANSLATORS)

try:
    from torchvision.transforms import v2
except ImportError:
    v2 = None

needs_v2 = pytest.mark.skipif(v2 is None, reason=f"torchvision {torchvision.__version__} has no transforms.v2 "
                                                 "(0.15+; run .ci/torch2.sh)")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
BILINEAR, BICUBIC = T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC


def test_v1_transforms_are_not_v2s():
    # Also where v2 does not exist: nothing to do.
    assert as_v1(T.Resize(8)) is None and as_v1(T.Compose([T.ToTensor()])) is None and as_v1(None) is None


def photos(val_root, n=6):
    files = sorted(glob.glob(str(val_root / "*" / "*.JPEG")))
    return [Image.open(f).convert("RGB") for f in files[::len(files) // n][:n]]


def _plain(x):
    return torch.from_numpy(np.array(x)) if isinstance(x, Image.Image) else x.as_subclass(torch.Tensor)


def _seeded(t, x, seed):
    torch.manual_seed(seed)
    return _plain(t(x))


def _pil_cases():
    if v2 is None:
        return []
    return [v2.RandomResizedCrop(100), v2.RandomResizedCrop((90, 70), scale=(0.5, 1.0), interpolation=BICUBIC),
            v2.RandomResizedCrop(64, interpolation="nearest"), v2.Resize(77), v2.Resize([50, 60], interpolation=3),
            v2.Resize(60, max_size=70), v2.CenterCrop(120), v2.CenterCrop(700), v2.RandomCrop(100),
            v2.RandomCrop(100, padding=4, fill=(1, 2, 3)), v2.RandomCrop(700, pad_if_needed=True, padding_mode="reflect"),
            v2.RandomCrop(600, padding=[3, 5], pad_if_needed=True), v2.Pad([2, 3, 4, 5], fill=9),
            v2.Pad(7, padding_mode="symmetric"), v2.RandomHorizontalFlip(), v2.RandomVerticalFlip(0.3),
            v2.ColorJitter(0.4, 0.4, 0.4, 0.1), v2.ColorJitter(brightness=(0.5, 1.5), hue=0.3), v2.Grayscale(3),
            v2.Grayscale(), v2.RandomGrayscale(0.5), v2.RandomSolarize(100, 0.5), v2.RandomInvert(0.5),
            v2.RandomApply([v2.ColorJitter(0.4, 0.4), v2.RandomGrayscale(0.5)], p=0.6), v2.PILToTensor(),
            v2.ToImage()]


@needs_v2
@pytest.mark.parametrize("t", _pil_cases(), ids=lambda t: repr(t).replace("\n", " ")[:60])
def test_each_mapping_is_torchvisions_v1_on_pil_images(val_root, t):
    mapped = as_v1(t)
    assert len(mapped) == 1 and type(mapped[0]).__module__.startswith("torchvision.transforms."), mapped
    for img in photos(val_root):
        for seed in range(4):
            a, b = _seeded(t, img, seed), _seeded(mapped[0], img, seed)
            assert a.dtype == b.dtype and torch.equal(a, b), (t, mapped[0], seed)


@needs_v2
def test_tensor_stage_mappings(val_root):
    x = T.functional.pil_to_tensor(photos(val_root, 1)[0].resize((64, 48)))
    f = x.float() / 255
    for t in [v2.Normalize(MEAN, STD), v2.RandomErasing(0.7), v2.RandomErasing(1.0, value="random"),
              v2.RandomErasing(1.0, value=(0.1, 0.2, 0.3), scale=(0.1, 0.5)), v2.RandomHorizontalFlip()]:
        (m,) = as_v1(t)
        assert all(torch.equal(_seeded(t, f.clone(), s), _seeded(m, f.clone(), s)) for s in range(20)), t
    # ToDtype(float32, scale=True): the same pixels, v2 multiplying by float32(1 / 255) where v1
    # divides by 255: a float32 step apart at most (torchvision: "equivalent up to float precision").
    for t in [v2.ToDtype(torch.float32, scale=True), v2.ConvertImageDtype(torch.float32)]:
        (m,) = as_v1(t)
        assert isinstance(m, T.ConvertImageDtype) and m.dtype == torch.float32
        values = torch.arange(256, dtype=torch.uint8).view(1, 16, 16)
        a, b = t(values), m(values)
        assert a.dtype == b.dtype == torch.float32 and torch.equal(a.mul(255).round(), b.mul(255).round())
        assert (a - b).abs().max().item() <= torch.finfo(torch.float32).eps / 2


@needs_v2
def test_auto_augment_ops_are_v1s_where_the_magnitudes_are(val_root):
    # Op by op, v2's _apply_image_or_video_transform on PIL images against v1's _apply_op, for the
    # magnitudes RandAugment's default (bin 9 of 31) and TrivialAugmentWide(30 bins) draw.
    from torchvision.transforms.autoaugment import _apply_op
    from torchvision.transforms.v2._utils import _setup_fill_arg
    for t, v1, bins in [(v2.RandAugment(), T.RandAugment(), [9]),
                        (v2.TrivialAugmentWide(num_magnitude_bins=30), T.TrivialAugmentWide(num_magnitude_bins=30),
                         range(30))]:
        (m,) = as_v1(t)
        assert type(m) is type(v1)
        nbins = m.num_magnitude_bins
        for img in photos(val_root, 2):
            img = img.crop((0, 0, 97, 83))
            space = v1._augmentation_space(nbins, (83, 97)) if isinstance(v1, T.RandAugment) else \
                v1._augmentation_space(nbins)
            for op, (mags1, signed) in space.items():
                mags2 = t._AUGMENTATION_SPACE[op][0](nbins, 83, 97)
                for k in ([None] if mags2 is None else bins):
                    for sign in ([1, -1] if signed else [1]):
                        a1 = 0.0 if k is None else sign * float(mags1[k])
                        a2 = 0.0 if k is None else sign * float(mags2[k])
                        for mode in (T.InterpolationMode.NEAREST, BILINEAR):
                            want = _apply_op(img, op, a1, interpolation=mode, fill=[10, 128, 250])
                            got = t._apply_image_or_video_transform(img, op, a2, interpolation=mode,
                                                                     fill=_setup_fill_arg([10, 128, 250]))
                            assert np.array_equal(np.array(want), np.array(got)), (type(t).__name__, op, k, sign)


@needs_v2
def test_the_solarize_thresholds_that_keep_v2_off_the_native_path(val_root):
    # What _v2.py refuses TrivialAugmentWide(31 bins) and AutoAugment for: at bin 3 of 10 v1
    # solarizes at 170.0, v2 at 255 * float32(2/3) = 170.000005, so Pillow keeps 170 (v1 inverts it).
    from torchvision.transforms.autoaugment import _apply_op
    img = photos(val_root, 1)[0]
    assert (np.array(img) == 170).any()
    threshold = float(T.AutoAugment()._augmentation_space(10, (1, 1))["Solarize"][0][3])
    want = np.array(_apply_op(img, "Solarize", threshold, interpolation=BILINEAR, fill=None))
    got = np.array(v2.AutoAugment()._apply_image_or_video_transform(
        img, "Solarize", float(v2.AutoAugment._AUGMENTATION_SPACE["Solarize"][0](10, 1, 1)[3]), BILINEAR, {}))
    differs = want != got
    assert differs.any() and (np.array(img)[differs] == 170).all()


# ---- loaders -----------------------------------------------------------------------------------

def native(ds, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = HabanaDataLoader(ds, threads=2, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def folder(root, transform):
    return torchvision.datasets.ImageFolder(str(root), transform)


def _chains():
    """(v2 chain, the v1 chain it stands for, written out by hand)."""
    if v2 is None:
        return {}
    f32 = torch.float32
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # v2.ToTensor's deprecation
        to_tensor = v2.ToTensor()
    return {
        "train": (v2.Compose([v2.RandomResizedCrop(64), v2.RandomHorizontalFlip(), v2.ToImage(),
                              v2.ToDtype(f32, scale=True), v2.Normalize(MEAN, STD), v2.RandomErasing(0.5),
                              v2.ToPureTensor()]),
                  T.Compose([T.RandomResizedCrop(64), T.RandomHorizontalFlip(), T.PILToTensor(),
                             T.ConvertImageDtype(f32), T.Normalize(MEAN, STD), T.RandomErasing(0.5)])),
        "eval": (v2.Compose([v2.Resize(72), v2.CenterCrop(64), v2.PILToTensor(), v2.ToDtype(f32, scale=True),
                             v2.Normalize(MEAN, STD), v2.ToPureTensor()]),
                 T.Compose([T.Resize(72), T.CenterCrop(64), T.PILToTensor(), T.ConvertImageDtype(f32),
                            T.Normalize(MEAN, STD)])),
        "eval bicubic uint8": (v2.Compose([v2.Resize(73, interpolation=BICUBIC), v2.CenterCrop(64), v2.ToImage()]),
                               T.Compose([T.Resize(73, interpolation=BICUBIC), T.CenterCrop(64), T.PILToTensor()])),
        "colour": (v2.Compose([v2.RandomResizedCrop(48, scale=(0.2, 1.0)),
                               v2.RandomApply([v2.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), v2.RandomGrayscale(0.2),
                               v2.RandomSolarize(128, 0.2), v2.RandomInvert(0.1), v2.RandomVerticalFlip(),
                               to_tensor, v2.Normalize(MEAN, STD)]),
                   T.Compose([T.RandomResizedCrop(48, scale=(0.2, 1.0)),
                              T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), T.RandomGrayscale(0.2),
                              T.RandomSolarize(128, 0.2), T.RandomInvert(0.1), T.RandomVerticalFlip(),
                              T.ToTensor(), T.Normalize(MEAN, STD)])),
        "randaugment": (v2.Compose([v2.CenterCrop(64), v2.RandAugment(), v2.PILToTensor()]),
                        T.Compose([T.CenterCrop(64), T.RandAugment(), T.PILToTensor()])),
        # The references' tensor / tv_tensor backends: geometry on the uint8 tensor after
        # ToImage (PILToTensor), torchvision's tensor resampling (antialias=True).
        "train tensor backend": (v2.Compose([v2.ToImage(), v2.RandomResizedCrop(64, antialias=True),
                                             v2.RandomHorizontalFlip(), v2.ToDtype(f32, scale=True),
                                             v2.Normalize(MEAN, STD), v2.ToPureTensor()]),
                                 T.Compose([T.PILToTensor(), T.RandomResizedCrop(64, antialias=True),
                                            T.RandomHorizontalFlip(), T.ConvertImageDtype(f32), T.Normalize(MEAN, STD)])),
        "eval tensor backend": (v2.Compose([v2.PILToTensor(), v2.Resize(72, antialias=True), v2.CenterCrop(64),
                                            v2.ToDtype(f32, scale=True), v2.Normalize(MEAN, STD), v2.ToPureTensor()]),
                                T.Compose([T.PILToTensor(), T.Resize(72, antialias=True), T.CenterCrop(64),
                                           T.ConvertImageDtype(f32), T.Normalize(MEAN, STD)])),
        "crop pad grayscale": (v2.Compose([v2.Resize(40), v2.Pad(2, fill=7), v2.RandomCrop(36, padding=[1, 2]),
                                           v2.Grayscale(3), v2.PILToTensor(), v2.Identity()]),
                               T.Compose([T.Resize(40), T.Pad(2, fill=7), T.RandomCrop(36, padding=[1, 2, 1, 2]),
                                          T.Grayscale(3), T.PILToTensor()])),
    }


@needs_v2
@pytest.mark.parametrize("name", list(_chains()))
def test_native_v2_chains_are_the_v1_chains_byte_for_byte(val_root, name):
    ours_v2, ours_v1 = _chains()[name]
    a = native(folder(val_root, ours_v2), batch_size=32, seed=5, shuffle=True)
    b = native(folder(val_root, ours_v1), batch_size=32, seed=5, shuffle=True)
    n = 0
    for (x, y), (u, v) in zip(a, b):
        assert x.dtype == u.dtype and torch.equal(y, v) and torch.equal(x, u), name
        n += 1
        if n == 3:
            break
    assert n == 3


@needs_v2
def test_eval_chains_match_torchs_v2(val_root):
    import PIL
    std = torch.tensor(STD).view(1, 3, 1, 1)
    for name in ("eval", "eval bicubic uint8", "eval tensor backend"):
        ds = folder(val_root, _chains()[name][0])
        count = 0
        for (x, y), (u, v) in zip(native(ds, batch_size=64), DataLoader(ds, batch_size=64)):
            assert torch.equal(y, v) and x.dtype == u.dtype and x.shape == u.shape
            if x.dtype == torch.float32:  # bilinear, the tensor kernel: PARITY's eval bound (and on tensors
                # torchvision's own tensor path, which the kernel follows within 1 level)
                diff = ((x - u) * std).abs()
                assert diff.mean().item() <= 1 / 255 and diff.max().item() <= 2 / 255 + 1e-6
            else:  # bicubic, Pillow's own arithmetic: exact with Pillow 9.4, printed with others
                worst = (x.int() - u.int()).abs().max().item()
                if PIL.__version__.startswith("9."):
                    assert worst == 0
                elif worst:
                    print(f"bicubic: max |diff| {worst} against Pillow {PIL.__version__}")
                assert (x.float() - u.float()).abs().mean().item() <= 1
            count += len(y)
        assert count == len(ds)




@needs_v2
@pytest.mark.parametrize("name", ["train", "colour", "randaugment", "crop pad grayscale", "train tensor backend"])
def test_random_v2_chains_follow_torchs_law(val_root, name):
    ds = folder(val_root, _chains()[name][0])
    ours = mean_values(native(ds, batch_size=16, seed=2, shuffle=False))
    torch.manual_seed(0)
    theirs = mean_values(DataLoader(ds, batch_size=16, shuffle=False))
    assert same_law(ours, theirs), name


def _unmapped():
    if v2 is None:
        return []

    class OwnParams(v2.RandomResizedCrop):
        def make_params(self, flat_inputs):
            return super().make_params(flat_inputs)

    class Mine(v2.Transform):
        def transform(self, inpt, params):
            return inpt

    return [([v2.TrivialAugmentWide()], "Solarize at magnitude bin 2 of 31"),
            ([v2.AutoAugment(v2.AutoAugmentPolicy.SVHN)], "of 10 thresholds at"),
            ([v2.RandAugment(magnitude=16)], "Solarize at magnitude bin 16"),
            ([v2.AugMix()], "tensor kernels"),
            ([v2.GaussianBlur(23)], "Gaussian weights"),
            ([v2.Resize(None, max_size=64)], "size=None"),
            ([v2.RandomCrop(600, padding=2, pad_if_needed=True, padding_mode="edge")], "pads once"),
            ([OwnParams(32)], "overrides how v2.RandomResizedCrop transforms (make_params)"),
            ([Mine()], "Mine (a v2.Transform) has no native mapping"),
            ([v2.RandomRotation(10)], "v2.RandomRotation has no native mapping"),
            ([v2.CenterCrop(32), v2.PILToTensor(), v2.ToDtype(torch.float32)], "scale=False"),
            ([v2.CenterCrop(32), v2.MixUp(num_classes=3)], "acts on batches"),
            # Geometry on the tensor once it is float (or after a per-pixel op) has no mapping.
            ([v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.RandomResizedCrop(32)],
             "RandomResizedCrop after PILToTensor")]


@needs_v2
@pytest.mark.parametrize("case", _unmapped(), ids=lambda c: c[1][:40] if isinstance(c, tuple) else str(c))
def test_what_does_not_map_says_why(val_root, case):
    chain, why = case
    if not any(isinstance(t, (v2.PILToTensor, v2.ToImage, v2.MixUp)) for t in chain):
        chain = chain + [v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)]  # PIL-stage only: end in a tensor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = HabanaDataLoader(folder(val_root, v2.Compose(chain)), batch_size=4)
    assert not loader.native and why in loader.fallback_reason, loader.fallback_reason


# ---- batch level: MixUp / CutMix in a collate_fn ------------------------------------------------

cutmix_or_mixup = None  # a global, as a script would write it


@needs_v2
def test_mixup_cutmix_collate_fns_are_native(val_root):
    global cutmix_or_mixup
    ds = folder(val_root, v2.Compose([v2.RandomResizedCrop(32), v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)]))
    classes = len(ds.classes)
    cutmix_or_mixup = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=classes),
                                       v2.CutMix(alpha=1.0, num_classes=classes)])
    local = cutmix_or_mixup

    def references(batch):  # train.py with --use-v2: a closure
        return local(*default_collate(batch))

    for collate_fn in (references, lambda batch: cutmix_or_mixup(*default_collate(batch))):
        first = None
        for seed in (3, 3):
            loader = native(ds, batch_size=16, collate_fn=collate_fn, seed=seed)
            x, y = next(iter(loader))
            u, v = next(iter(DataLoader(ds, batch_size=16, collate_fn=collate_fn)))
            assert x.shape == u.shape and x.dtype == u.dtype and y.shape == v.shape == (16, classes)
            assert torch.allclose(y.sum(1), torch.ones(16)) and (y.max(1).values < 1).any()  # mixed labels
            if first is not None:
                assert torch.equal(first[0], x) and torch.equal(first[1], y)  # a seed repeats them
            first = (x, y)


# ---- the references' --use-v2 presets (recipes.py) ----------------------------------------------

V2_NATIVE = {"v2 references train (default)", "v2 references train ra", "v2 references train erasing",
             "v2 references train mixup/cutmix", "v2 references eval",
             "v2 references train (tv_tensor backend)", "v2 references eval (tv_tensor backend)"}


@needs_v2
def test_v2_recipes_reach(val_root):
    import recipes
    native_names = set()
    for name in recipes.v2_recipes():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader = recipes.build(name, str(val_root), batch_size=4, builders=recipes.v2_recipes())
        if loader.native:
            native_names.add(name)
    assert native_names == V2_NATIVE


@needs_v2
@pytest.mark.parametrize("v2_name,v1_name", [("v2 references train (default)", "references train (default)"),
                                             ("v2 references train ra", "references train ra"),
                                             ("v2 references train erasing", "references train erasing"),
                                             ("v2 references eval", "references eval")])
def test_v2_presets_are_the_v1_presets_byte_for_byte(val_root, v2_name, v1_name):
    import recipes
    builders = {**recipes.recipes(), **recipes.v2_recipes()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = recipes.build(v2_name, str(val_root), batch_size=8, builders=builders, seed=11)
        b = recipes.build(v1_name, str(val_root), batch_size=8, builders=builders, seed=11)
    assert a.native and b.native
    for n, ((x, y), (u, v)) in enumerate(zip(a, b)):
        assert torch.equal(y, v) and torch.equal(x, u)
        if n == 1:
            break


# ---- v1 too: geometry on the uint8 tensor after PILToTensor (torchvision 0.14 as well) ---------

def test_v1_geometry_after_pil_to_tensor_is_native_and_torchs_tensor_path(val_root):
    """T.PILToTensor() then Resize / CenterCrop on the tensor: the default (tensor) kernel with
    torchvision's antialias for tensors (an explicit antialias=True here; before 0.17 the default
    on tensors is False), within PARITY's tensor bound of torch's DataLoader."""
    f32 = torch.float32
    std = torch.tensor(STD).view(1, 3, 1, 1)
    for antialias in (True, False):
        t = T.Compose([T.PILToTensor(), T.Resize(72, antialias=antialias), T.CenterCrop(64), T.ConvertImageDtype(f32),
                       T.Normalize(MEAN, STD)])
        ds = folder(val_root, t)
        count = 0
        for (x, y), (u, v) in zip(native(ds, batch_size=64), DataLoader(ds, batch_size=64)):
            assert torch.equal(y, v) and x.shape == u.shape
            diff = ((x - u) * std).abs()
            assert diff.mean().item() <= 0.01 / 255 and diff.max().item() <= 1 / 255 + 1e-6, antialias
            count += len(y)
        assert count == len(ds)
