"""What a training script can observe of HabanaDataLoader, against torch's DataLoader: the
class, its guards, its iterators (fallback and native), when random draws happen, the batch
structure, errors at the batch they belong to, and what it says about arguments it cannot
apply. The native path runs on real photos (the corpus); the fallback on small tensors."""

import random
import warnings
from typing import List

import pytest
import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader, Dataset, TensorDataset
from torch.utils.data._utils.collate import default_collate

from habana_dataloader import HabanaDataLoader
from habana_dataloader import loader as loader_module

SMALL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture(autouse=True)
def fresh_warnings():
    """Each test sees the once-per-process warnings afresh."""
    loader_module._warned.clear()
    yield
    loader_module._warned.clear()


def native(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loader = HabanaDataLoader(*args, threads=2, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def labels(batches):
    return [y.tolist() for _, y in batches]


class Raising(Dataset):
    """Raises on every 5th index, as torch's test_error dataset does now and then."""

    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i % 5 == 4:
            raise ValueError(f"bad sample {i}")
        return torch.tensor([float(i)])


# ---- the class ---------------------------------------------------------------------------

def test_is_a_dataloader_with_its_guards_and_typing(val_root):
    data = TensorDataset(torch.arange(10).float())
    with pytest.warns(RuntimeWarning, match="TensorDataset"):
        fallback = HabanaDataLoader(data, batch_size=2)
    ours = native(torchvision.datasets.ImageFolder(str(val_root), SMALL), batch_size=8)
    for loader in (fallback, ours):
        assert isinstance(loader, DataLoader)
        with pytest.raises(ValueError, match="batch_size attribute should not be set after HabanaDataLoader is initialized"):
            loader.batch_size = 3
        with pytest.raises(ValueError, match="sampler attribute should not be set"):
            loader.sampler = None
    assert HabanaDataLoader[List[torch.Tensor]] is not None  # Generic, as DataLoader[...]
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such'"):
        HabanaDataLoader(data, no_such=1)


def test_fallback_runs_torchs_iterator():
    data = TensorDataset(torch.arange(40).float().view(20, 2))
    with pytest.warns(RuntimeWarning, match="TensorDataset"):
        loader = HabanaDataLoader(data, batch_size=4, num_workers=2)
    it = iter(loader)
    assert len(it) == 5 and hasattr(it, "_workers") and hasattr(it, "_shutdown_workers")
    assert sum(len(x) for x, in it) == 20
    # The first error does not end the epoch: every bad sample is seen, as with torch.
    with pytest.warns(RuntimeWarning, match="Raising"):
        loader = HabanaDataLoader(Raising(), batch_size=1)
    errors, good = 0, 0
    it = iter(loader)
    for _ in range(len(loader)):
        try:
            next(it)
            good += 1
        except ValueError:
            errors += 1
    assert (errors, good) == (4, 16)


def test_fallback_warns_once_per_reason_and_lists_every_blocker(val_root):
    data = TensorDataset(torch.arange(10).float())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            assert not HabanaDataLoader(data, batch_size=2).native
    assert len([w for w in caught if "TensorDataset" in str(w.message)]) == 1
    tf = T.Compose([T.RandomRotation(10), T.ToTensor(), T.RandomErasing(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(str(val_root), tf, target_transform=lambda y: y)
    with pytest.warns(RuntimeWarning):
        loader = HabanaDataLoader(ds, batch_size=4, collate_fn=lambda b: b)
    reason = loader.fallback_reason
    for blocker in ("collate_fn", "target_transform", "RandomRotation", "RandomErasing"):
        assert blocker in reason, reason


# ---- native iterators against torch's ------------------------------------------------------

def test_batches_are_lists_as_default_collate_makes(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    ours, theirs = next(iter(native(ds, batch_size=8))), next(iter(DataLoader(ds, batch_size=8)))
    assert type(ours) is type(theirs) is list and len(ours) == 2


@pytest.mark.parametrize("num_workers", [0, 2])
def test_draws_happen_when_torchs_iterator_makes_them(val_root, num_workers):
    # Without workers torch draws the permutation at the first next(); with workers at iter().
    # A draw from the same generator in between tells the two apart.
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    got = []
    for cls in (HabanaDataLoader, DataLoader):
        g = torch.Generator().manual_seed(3)
        kw = {"threads": 2} if cls is HabanaDataLoader else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader = cls(ds, batch_size=64, shuffle=True, generator=g, num_workers=num_workers, **kw)
        it = iter(loader)
        torch.rand(1, generator=g)
        got.append([y.tolist() for _, y in it])
    assert got[0] == got[1]


def test_persistent_workers_draw_no_new_base_seed(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    got = []
    for cls in (HabanaDataLoader, DataLoader):
        g = torch.Generator().manual_seed(7)
        kw = {"threads": 2} if cls is HabanaDataLoader else {}
        loader = cls(ds, batch_size=64, shuffle=True, generator=g, num_workers=2, persistent_workers=True, **kw)
        epochs = [labels(loader)]
        built = getattr(loader, "_pipelines_built", 0)
        epochs += [labels(loader) for _ in range(2)]
        got.append(epochs)
        if cls is HabanaDataLoader:
            assert loader._pipelines_built == built and iter(loader) is iter(loader)
    assert got[0] == got[1]


def test_out_of_range_index_raises_index_error_at_its_batch(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    order = list(range(12))
    order[5] = len(ds) + 3  # batch 1 of 3
    results = []
    for cls in (HabanaDataLoader, DataLoader):
        kw = {"threads": 2} if cls is HabanaDataLoader else {}
        it = iter(cls(ds, batch_size=4, sampler=order, **kw))
        got = []
        for _ in range(3):
            try:
                got.append(next(it)[1].tolist())
            except IndexError:
                got.append("IndexError")
        with pytest.raises(StopIteration):
            next(it)
        results.append(got)
    assert results[0] == results[1] and results[0][1] == "IndexError"


def test_timeout_is_a_deadline_per_batch(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    loader = native(ds, batch_size=64, timeout=1e-4)  # no 64 decodes finish in 0.1 ms
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.0001 seconds"):
        next(iter(loader))
    assert len(list(native(ds, batch_size=64, timeout=60))) == len(loader)


def test_worker_init_fn_is_stated_not_ignored(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    calls = []
    with pytest.warns(UserWarning, match="worker_init_fn is not called"):
        loader = HabanaDataLoader(ds, batch_size=64, num_workers=2, worker_init_fn=calls.append)
    assert loader.native and any("worker_init_fn" in n for n in loader.native_notes)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process
        HabanaDataLoader(ds, batch_size=64, num_workers=2, worker_init_fn=calls.append)
    assert len(list(loader)) == len(loader) and calls == []


# ---- transforms as recipes write them -------------------------------------------------------

class PresetEval:
    """torchvision's references/classification/presets.py shape: a class wrapping a Compose."""

    def __init__(self, crop, resize):
        self.transforms = T.Compose([T.Resize(resize), T.CenterCrop(crop), T.PILToTensor(),
                                     T.ConvertImageDtype(torch.float), T.Normalize(MEAN, STD)])

    def __call__(self, img):
        return self.transforms(img)


class PresetWithExtra(PresetEval):
    def __call__(self, img):
        random.random()  # does something the mapping cannot see
        return self.transforms(img)


class MyCrop(T.RandomResizedCrop):  # a subclass that only changes defaults
    def __init__(self, size):
        super().__init__(size, scale=(0.5, 1.0))


class MyCenterCrop(T.CenterCrop):  # a subclass that changes behaviour
    def forward(self, img):
        return super().forward(img).rotate(90)


def test_presets_weights_transforms_and_subclasses(val_root):
    root = str(val_root)
    ds = torchvision.datasets.ImageFolder(root, PresetEval(32, 40))
    ours, theirs = native(ds, batch_size=64), DataLoader(ds, batch_size=64)
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(y, v) and x.shape == u.shape
        assert ((x - u) * torch.tensor(STD).view(1, 3, 1, 1)).abs().mean() <= 1 / 255
    weights = torchvision.models.ResNet18_Weights.IMAGENET1K_V1
    ds = torchvision.datasets.ImageFolder(root, weights.transforms())
    x, _ = next(iter(native(ds, batch_size=4)))
    u, _ = next(iter(DataLoader(ds, batch_size=4)))
    assert x.shape == u.shape == (4, 3, 224, 224)
    assert ((x - u) * torch.tensor(STD).view(1, 3, 1, 1)).abs().mean() <= 1 / 255
    native(torchvision.datasets.ImageFolder(root, T.Compose([MyCrop(32), T.ToTensor()])), batch_size=4)
    for tf, name in ((PresetWithExtra(32, 40), "PresetWithExtra"),
                     (T.Compose([MyCenterCrop(32), T.ToTensor()]), "MyCenterCrop")):
        with pytest.warns(RuntimeWarning, match=name):
            assert not HabanaDataLoader(torchvision.datasets.ImageFolder(root, tf), batch_size=4).native


# ---- batch-level functions and multi-view outputs ---------------------------------------------

def mixup(images, labels):
    """A MixUp as the references write it: one draw from torch's global RNG per batch."""
    lam = torch.rand(1).item()
    return images.float() * lam + images.flip(0).float() * (1 - lam), labels


def make_collate(f):
    def collate_fn(batch):
        return f(*default_collate(batch))
    return collate_fn


def test_collate_applying_a_function_to_default_collate_runs_natively(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    for collate in (make_collate(mixup), lambda batch: mixup(*default_collate(batch))):
        runs = []
        for _ in range(2):
            loader = native(ds, batch_size=16, seed=5, collate_fn=collate)
            torch.manual_seed(0)
            runs.append(list(loader))
            after = torch.rand(1)  # the script's own stream is not shifted by MixUp's draws
            torch.manual_seed(0)
            assert torch.equal(after, torch.rand(1))
        assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(*runs))
        x, y = runs[0][0]
        assert x.dtype == torch.float32 and x.shape == (16, 3, 32, 32) and y.shape == (16,)
    with pytest.warns(RuntimeWarning, match="collate_fn"):
        assert not HabanaDataLoader(ds, batch_size=4, collate_fn=lambda b: mixup(*default_collate(b[:2]))).native


class TwoCrops:
    """MoCo v2's TwoCropsTransform."""

    def __init__(self, base_transform):
        self.base_transform = base_transform

    def __call__(self, x):
        q = self.base_transform(x)
        k = self.base_transform(x)
        return [q, k]


class MultiCrop:
    """DINO's DataAugmentationDINO shape: two global views and a loop of local ones."""

    def __init__(self, local_crops_number):
        self.global_transfo1 = T.Compose([T.RandomResizedCrop(48), T.RandomHorizontalFlip(), T.ToTensor()])
        self.global_transfo2 = T.Compose([T.RandomResizedCrop(48), T.ToTensor(), T.Normalize(MEAN, STD)])
        self.local_crops_number = local_crops_number
        self.local_transfo = T.Compose([T.RandomResizedCrop(24, scale=(0.05, 0.4)), T.ToTensor()])

    def __call__(self, image):
        crops = []
        crops.append(self.global_transfo1(image))
        crops.append(self.global_transfo2(image))
        for _ in range(self.local_crops_number):
            crops.append(self.local_transfo(image))
        return crops


class RandomViews(TwoCrops):
    def __call__(self, x):
        return [self.base_transform(x)] * (1 + int(random.random() < 0.5))


def test_multi_view_transforms_run_natively_with_torchs_structure(val_root):
    root = str(val_root)
    crop = T.Compose([T.RandomResizedCrop(32), T.RandomHorizontalFlip(), T.ToTensor()])
    ds = torchvision.datasets.ImageFolder(root, TwoCrops(crop))
    (q, k), y = next(iter(native(ds, batch_size=8, seed=1)))
    (u, v), w = next(iter(DataLoader(ds, batch_size=8)))
    assert q.shape == k.shape == u.shape == (8, 3, 32, 32) and torch.equal(y, w)
    assert not torch.equal(q, k)  # two independent random crops
    ds = torchvision.datasets.ImageFolder(root, MultiCrop(3))
    views, y = next(iter(native(ds, batch_size=4, seed=1)))
    ref, _ = next(iter(DataLoader(ds, batch_size=4)))
    assert [tuple(v.shape) for v in views] == [tuple(r.shape) for r in ref] == [(4, 3, 48, 48)] * 2 + [(4, 3, 24, 24)] * 3
    with pytest.warns(RuntimeWarning, match="RandomViews"):
        assert not HabanaDataLoader(torchvision.datasets.ImageFolder(root, RandomViews(crop)), batch_size=4).native
