"""Datasets and collate functions of real recipes on the native path, against torch's
DataLoader over the same dataset: DINO's ReturnIndexDataset (eval_knn.py: the index in place
of the label), timm's ImageDataset (create_dataset's image folder, in timm's own order) and
timm's fast_collate. The timm parts need timm (not a dependency) and skip without it:

    PYTHONPATH=build/python build/venv-timm/bin/python -m pytest tests/python/test_timm_data.py
"""

import warnings

import PIL
import PIL.ImageOps
import pytest
import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader, Subset
from torchvision import datasets

from habana_dataloader import HabanaDataLoader

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# DINO eval_knn.py's transform: bicubic (Pillow's own arithmetic natively), so the batches are
# torch's byte for byte with Debian's Pillow 9.4 (test_loader's bicubic chain; other Pillow
# releases round a little differently: bounded and printed there).
DINO_EVAL = T.Compose([T.Resize(256, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(224), T.ToTensor(),
                       T.Normalize(MEAN, STD)])
SMALL = T.Compose([T.Resize(73, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(64), T.PILToTensor()])
EXACT = PIL.__version__.startswith("9.")


def loader(ds, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HabanaDataLoader(ds, threads=2, **kw)


def native(ds, **kw):
    dl = loader(ds, **kw)
    assert dl.native, dl.fallback_reason
    return dl


def reason(ds, **kw):
    dl = loader(ds, **kw)
    assert not dl.native
    return dl.fallback_reason


def assert_same_batches(ours, theirs, labels=None):
    """Every batch of `ours` is torch's: the same type (list / tuple), dtypes, shapes, labels,
    and pixels byte for byte (Pillow 9.x; else within 3 levels, printed). Returns the labels."""
    n, got = 0, []
    for a, b in zip(ours, theirs):
        assert type(a) is type(b) and len(a) == len(b) == 2
        (x, y), (u, v) = a, b
        assert x.dtype == u.dtype and x.shape == u.shape and x.is_contiguous()
        assert y.dtype == v.dtype == torch.int64 and torch.equal(y, v)
        if labels is not None:
            assert y.tolist() == labels[n:n + len(y)]
        if EXACT:
            assert torch.equal(x, u)
        else:
            worst = (x.double() - u.double()).abs().max().item() * (255 if x.is_floating_point() else 1)
            print(f"max |diff| {worst} against Pillow {PIL.__version__}")
            assert worst <= 3 / min(STD) + 1e-3
        n += len(y)
        got += y.tolist()
    assert n == len(ours.sampler)
    return got


# ---- DINO's ReturnIndexDataset ---------------------------------------------------------------

class ReturnIndexDataset(datasets.ImageFolder):  # DINO eval_knn.py, verbatim
    def __getitem__(self, idx):
        img, lab = super(ReturnIndexDataset, self).__getitem__(idx)
        return img, idx


class ReturnIndexZeroArg(datasets.ImageFolder):  # the same with super()
    def __getitem__(self, idx):
        img, lab = super().__getitem__(idx)
        return img, idx


class ReturnIndexNamed(ReturnIndexDataset):  # a subclass that only names it
    pass


class ReturnIndexAndLabel(datasets.ImageFolder):
    def __getitem__(self, idx):
        img, lab = super(ReturnIndexAndLabel, self).__getitem__(idx)
        return img, lab, idx


class ReturnIndexPlusOne(datasets.ImageFolder):
    def __getitem__(self, idx):
        img, lab = super(ReturnIndexPlusOne, self).__getitem__(idx)
        return img, idx + 1


class ReturnIndexOverReturnIndex(ReturnIndexDataset):  # its super() is not ImageFolder's
    def __getitem__(self, idx):
        img, lab = super(ReturnIndexOverReturnIndex, self).__getitem__(idx)
        return img, idx


class ReturnIndexSkipping(ReturnIndexDataset):  # super(Base, self): skips a class
    def __getitem__(self, idx):
        img, lab = super(ReturnIndexDataset, self).__getitem__(idx)
        return img, idx


def test_dino_return_index_dataset_is_torchs_batches(val_root):
    ds = ReturnIndexDataset(str(val_root), DINO_EVAL)
    ours = native(ds, batch_size=64, pin_memory=True)  # as eval_knn.py
    assert_same_batches(ours, DataLoader(ds, batch_size=64), labels=list(range(len(ds))))


@pytest.mark.parametrize("cls", [ReturnIndexZeroArg, ReturnIndexNamed])
def test_return_index_variants_through_a_subset_and_shuffle(val_root, cls):
    ds = cls(str(val_root), SMALL)
    sub = Subset(ds, list(range(5, len(ds), 3)))
    ours = native(sub, batch_size=10, shuffle=True, generator=torch.Generator().manual_seed(4))
    theirs = DataLoader(sub, batch_size=10, shuffle=True, generator=torch.Generator().manual_seed(4))
    got = assert_same_batches(ours, theirs)
    # The labels are the indices of the folder under the Subset, as dataset[i] returns them.
    assert sorted(got) == sub.indices


@pytest.mark.parametrize("cls", [ReturnIndexAndLabel, ReturnIndexPlusOne, ReturnIndexOverReturnIndex,
                                 ReturnIndexSkipping])
def test_other_getitem_overrides_fall_back(val_root, cls):
    assert reason(cls(str(val_root), SMALL), batch_size=4) == f"{cls.__name__} overrides __getitem__"


def test_a_shadowed_super_falls_back(val_root, monkeypatch):
    monkeypatch.setitem(globals(), "super", lambda *a: datasets.ImageFolder("/nonexistent"))
    assert reason(ReturnIndexDataset(str(val_root), SMALL), batch_size=4) == "ReturnIndexDataset overrides __getitem__"


# ---- timm's ImageDataset -------------------------------------------------------------------

@pytest.fixture()
def timm_data():
    pytest.importorskip("timm", reason="timm is not installed (not a dependency; build/venv-timm has it)")
    import timm.data
    return timm.data


@pytest.fixture()
def natural_folder(tmp_path, val_root):
    """Classes c1, c2, c10 of files x_1, x_2, x_10, x_11 (symlinked photos): timm's natural
    sort orders both (c2 before c10) unlike torchvision's (c10 before c2)."""
    photos = sorted(val_root.glob("*/*.JPEG"))
    k = 0
    for c in ("c1", "c2", "c10"):
        (tmp_path / c).mkdir()
        for i in (1, 2, 10, 11):
            (tmp_path / c / f"x_{i}.JPEG").symlink_to(photos[k * 7])
            k += 1
    return tmp_path


def test_image_dataset_reads_timms_order(timm_data, natural_folder):
    ds = timm_data.create_dataset("", root=str(natural_folder), transform=SMALL)
    assert type(ds).__name__ == "ImageDataset" and type(ds.reader).__name__ == "ReaderImageFolder"
    folder = torchvision.datasets.ImageFolder(str(natural_folder))
    assert [p for p, _ in ds.reader.samples] != [p for p, _ in folder.samples]  # the test means something
    assert ds.reader.class_to_idx == {"c1": 0, "c2": 1, "c10": 2}
    ours = native(ds, batch_size=5)
    assert_same_batches(ours, DataLoader(ds, batch_size=5), labels=[t for _, t in ds.reader.samples])


def test_image_dataset_eval_is_torchs_batches(timm_data, val_root):
    # timm's validate.py without the prefetcher: bicubic eval, normalised floats.
    tf = timm_data.create_transform(224, crop_pct=0.875, interpolation="bicubic")
    ds = timm_data.create_dataset("", root=str(val_root), transform=tf)
    assert_same_batches(native(ds, batch_size=64), DataLoader(ds, batch_size=64))


def test_none_targets_are_minus_one(timm_data, natural_folder):
    ds = timm_data.create_dataset("", root=str(natural_folder), transform=SMALL, class_map={"c1": 0, "c2": None, "c10": 5})
    assert_same_batches(native(ds, batch_size=5), DataLoader(ds, batch_size=5),
                        labels=[{None: -1}.get(t, t) for _, t in ds.reader.samples])


def test_image_dataset_return_index(timm_data, natural_folder):
    base = timm_data.ImageDataset

    class ReturnIndexImageDataset(base):
        def __getitem__(self, idx):
            img, lab = super().__getitem__(idx)
            return img, idx

    ds = ReturnIndexImageDataset(str(natural_folder), transform=SMALL)
    assert_same_batches(native(ds, batch_size=5), DataLoader(ds, batch_size=5), labels=list(range(len(ds))))


def test_image_dataset_variants_fall_back_with_reasons(timm_data, natural_folder):
    from timm.data.readers.reader_image_folder import ReaderImageFolder
    root = str(natural_folder)
    make = lambda **kw: timm_data.ImageDataset(root, transform=SMALL, **kw)  # noqa: E731
    assert reason(make(load_bytes=True), batch_size=4).startswith("the ImageDataset has load_bytes=True")
    assert reason(make(input_img_mode="L"), batch_size=4) == (
        "the ImageDataset's input_img_mode is 'L' (native: 'RGB', timm's default)")
    assert reason(make(input_img_mode=None), batch_size=4).startswith("the ImageDataset's input_img_mode is None")
    assert reason(make(target_transform=lambda t: t + 1), batch_size=4) == "target_transform is set"

    class FlippedReader(ReaderImageFolder):
        def __getitem__(self, index):
            path, target = self.samples[len(self.samples) - 1 - index]
            return open(path, "rb"), target

    assert reason(make(reader=FlippedReader(root)), batch_size=4) == (
        "the ImageDataset's reader FlippedReader does not read its samples as timm 1.0's ReaderImageFolder does")

    class SameReader(ReaderImageFolder):  # only a new name: read as timm's
        pass

    native(make(reader=SameReader(root)), batch_size=4)

    class NoisyDataset(timm_data.ImageDataset):
        def __getitem__(self, index):
            img, target = super().__getitem__(index)
            return img, target + 1

    assert reason(NoisyDataset(root, transform=SMALL), batch_size=4) == "NoisyDataset overrides __getitem__"
    r = reason(make(load_bytes=True, target_transform=int), batch_size=4)
    assert "load_bytes=True" in r and "target_transform is set" in r, r  # every reason


# ---- timm's fast_collate -------------------------------------------------------------------

@pytest.mark.parametrize("kw", [dict(use_prefetcher=True), dict(normalize=False)], ids=["ToNumpy", "MaybePILToTensor"])
def test_fast_collate_is_torchs_batches(timm_data, val_root, kw):
    # timm's validate.py with the prefetcher: uint8 images, fast_collate's tuple.
    tf = timm_data.create_transform(224, crop_pct=0.875, interpolation="bicubic", **kw)
    ds = timm_data.create_dataset("", root=str(val_root), transform=tf)
    fast = timm_data.loader.fast_collate
    ours = native(ds, batch_size=64, collate_fn=fast)
    assert not ours._post.seeded  # no per-batch RNG seeding: fast_collate draws nothing
    assert_same_batches(ours, DataLoader(ds, batch_size=64, collate_fn=fast))
    x, y = next(iter(ours))
    assert x.dtype == torch.uint8 and x.shape == (64, 3, 224, 224)


def test_fast_collate_train_batches(timm_data, val_root):
    # timm's train.py with the prefetcher (its RandomErasing runs in PrefetchLoader, on the GPU).
    tf = timm_data.create_transform(224, is_training=True, use_prefetcher=True)
    ds = timm_data.create_dataset("", root=str(val_root), split="train", is_training=True, transform=tf)
    fast = timm_data.loader.fast_collate
    ours = native(ds, batch_size=32, shuffle=True, drop_last=True, collate_fn=fast, seed=1)
    theirs = next(iter(DataLoader(ds, batch_size=32, shuffle=True, drop_last=True, collate_fn=fast)))
    batches = list(ours)
    assert len(batches) == len(ds) // 32
    for b in batches:
        assert type(b) is tuple and b[0].dtype == theirs[0].dtype and b[0].shape == theirs[0].shape
        assert b[1].dtype == theirs[1].dtype == torch.int64
    assert [b[0] for b in batches][0].float().std() > 10  # images, not zeros
    again = list(native(ds, batch_size=32, shuffle=True, drop_last=True, collate_fn=fast, seed=1))
    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(batches, again))


def test_fast_collate_fallback_reasons(timm_data, val_root):
    fast = timm_data.loader.fast_collate

    class Posterize3:  # a recipe's own class: a Python tail would take it, but not under fast_collate
        def __call__(self, img):
            return PIL.ImageOps.posterize(img, 3)

    folder = torchvision.datasets.ImageFolder(str(val_root), T.Compose([Posterize3(), T.PILToTensor()]))
    r = reason(folder, batch_size=4, collate_fn=fast)
    assert "Posterize3" in r and "python_tail" not in r, r
    assert "python_tail=True" in reason(folder, batch_size=4), "the hint without fast_collate"
    folder = torchvision.datasets.ImageFolder(str(val_root), timm_data.create_transform(224))
    assert reason(folder, batch_size=4, collate_fn=fast) == (
        "collate_fn timm fast_collate of float images (it copies them into a uint8 tensor, truncating; uint8 "
        "images from PILToTensor or timm's ToNumpy / MaybePILToTensor are native)")

    class TwoViews:
        def __init__(self, t):
            self.t = t

        def __call__(self, x):
            return [self.t(x), self.t(x)]

    folder = torchvision.datasets.ImageFolder(str(val_root), TwoViews(SMALL))
    assert reason(folder, batch_size=4, collate_fn=fast).startswith(
        "collate_fn timm fast_collate with a transform returning several views")
    r = reason(torch.utils.data.TensorDataset(torch.zeros(4, 3)), batch_size=4, collate_fn=fast)
    assert r.endswith("; collate_fn timm fast_collate is native for image datasets only"), r


class Tilt:  # no native mapping: with python_tail=True it runs in Python inside the pipeline
    def __call__(self, img):
        return img.rotate(3)


@pytest.mark.parametrize("last", [T.ToTensor(), T.PILToTensor()], ids=["float", "uint8"])
def test_fast_collate_refuses_a_python_tail(timm_data, val_root, last):
    # The tail's dtype would decide the batch (a float tail: floats where fast_collate truncates to uint8).
    ds = torchvision.datasets.ImageFolder(str(val_root), T.Compose([T.Resize(64), T.CenterCrop(56), Tilt(), last]))
    fast = timm_data.loader.fast_collate
    assert reason(ds, batch_size=4, collate_fn=fast, python_tail=True) == (
        "collate_fn timm fast_collate with transforms run in Python (python_tail=True): only a transform mapped "
        "natively throughout is known to end in the uint8 images fast_collate batches")
    assert reason(ds, batch_size=4, collate_fn=fast) == "transform Tilt has no native mapping"
    native(ds, batch_size=4, python_tail=True)  # default_collate takes the tail's dtype as it comes
