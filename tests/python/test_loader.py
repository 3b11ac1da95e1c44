"""HabanaDataLoader against torch's DataLoader on real photos."""

import warnings

import pytest
import torch
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader, Subset, SubsetRandomSampler, TensorDataset

from habana_dataloader import HabanaDataLoader

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
EVAL = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), T.Normalize(MEAN, STD)])
SMALL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])


def native(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warning fails the test
        loader = HabanaDataLoader(*args, threads=2, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def test_eval_chain_matches_torch(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), EVAL)
    ours = native(ds, batch_size=64, shuffle=False)
    theirs = DataLoader(ds, batch_size=64, shuffle=False)
    assert len(ours) == len(theirs)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    n = 0
    for (x, y), (u, v) in zip(ours, theirs):
        assert x.shape == u.shape and x.dtype == u.dtype == torch.float32 and x.is_contiguous()
        assert y.dtype == v.dtype == torch.int64 and torch.equal(y, v)
        # Bound: resampling differs from Pillow's by at most one level per pixel; on average
        # well under one level (1/255) after un-normalising.
        diff = ((x - u) * std).abs()
        assert diff.mean().item() <= 1 / 255, diff.mean().item() * 255
        assert diff.max().item() <= 2 / 255 + 1e-6
        n += len(y)
    assert n == len(ds)


def test_uint8_chain_subset_sampler_and_drop_last(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    sub = Subset(ds, list(range(0, len(ds), 3)))
    sampler = SubsetRandomSampler(list(range(0, len(sub), 2)), generator=torch.Generator().manual_seed(5))
    ours = native(sub, batch_size=8, sampler=sampler, drop_last=True)
    theirs = DataLoader(sub, batch_size=8, sampler=sampler, drop_last=True)
    assert len(ours) == len(theirs)
    sampler.generator.manual_seed(5)
    a = list(ours)
    sampler.generator.manual_seed(5)
    b = list(theirs)
    assert len(a) == len(b) and all(x.shape == (8, 3, 32, 32) for x, _ in a)
    for (x, y), (u, v) in zip(a, b):
        assert x.dtype == u.dtype == torch.uint8 and torch.equal(y, v)
        assert (x.float() - u.float()).abs().mean() <= 1.0


def test_shuffle_order_follows_torch_seed(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    torch.manual_seed(11)
    a = [y for _, y in native(ds, batch_size=32, shuffle=True)]
    torch.manual_seed(11)
    b = [y for _, y in DataLoader(ds, batch_size=32, shuffle=True)]
    assert all(torch.equal(p, q) for p, q in zip(a, b)) and len(a) == len(b)


RANDOM = T.Compose([T.RandomResizedCrop(48, scale=(0.2, 1.0)), T.RandomHorizontalFlip(),
                    T.ColorJitter(0.3, 0.3, 0.3, 0.05), T.ToTensor(), T.Normalize(MEAN, STD)])


def test_random_chain_is_reproducible(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), RANDOM)
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    a = list(native(ds, batch_size=32, shuffle=True, generator=g1))
    b = list(native(ds, batch_size=32, shuffle=True, generator=g2))
    assert all(torch.equal(x, u) and torch.equal(y, v) for (x, y), (u, v) in zip(a, b))
    c = list(native(ds, batch_size=32, shuffle=True, seed=9))
    d = list(native(ds, batch_size=32, shuffle=True, seed=9))
    assert all(torch.equal(x, u) for (x, _), (u, _) in zip(c, d))
    assert not torch.equal(a[0][0], c[0][0])


@pytest.mark.parametrize("p", [0.3])
def test_flip_rate_matches(val_root, p):
    plain = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    flipped = torchvision.datasets.ImageFolder(str(val_root), T.Compose(
        [T.Resize(40), T.CenterCrop(32), T.RandomHorizontalFlip(p), T.PILToTensor()]))
    a = torch.cat([x for x, _ in native(plain, batch_size=64)])
    b = torch.cat([x for x, _ in native(flipped, batch_size=64, seed=1)])
    same = (a == b).flatten(1).all(1)
    mirrored = (a.flip(-1) == b).flatten(1).all(1)
    assert bool((same | mirrored).all())
    rate = (mirrored & ~same).float().mean().item()
    assert abs(rate - p) < 0.08, rate  # n ~ 300: 3 standard deviations


def test_fallback_is_torch(val_root):
    data = TensorDataset(torch.arange(50).float().view(25, 2), torch.arange(25))
    with pytest.warns(RuntimeWarning, match="TensorDataset"):
        ours = HabanaDataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    theirs = DataLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    assert not ours.native and "TensorDataset" in ours.fallback_reason
    assert len(ours) == len(theirs) and ours.batch_size == 4
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(x, u) and torch.equal(y, v)
    with pytest.raises(ValueError, match="strict"):
        HabanaDataLoader(data, batch_size=4, strict=True)
    ds = torchvision.datasets.ImageFolder(str(val_root), T.Compose([T.RandomRotation(10), T.ToTensor()]))
    with pytest.warns(RuntimeWarning, match="RandomRotation"):
        assert not HabanaDataLoader(ds, batch_size=4).native
    with pytest.raises(ValueError, match="prefetch_factor"):  # torch's own argument checks
        HabanaDataLoader(data, batch_size=4, prefetch_factor=4)


def test_resume_mid_epoch(val_root):
    ds = torchvision.datasets.ImageFolder(str(val_root), RANDOM)
    args = dict(batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(1))
    a = native(ds, **args)
    it = iter(a)
    for _ in range(3):
        next(it)
    state = a.state_dict()
    rest = list(it)
    b = native(ds, batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(99))
    b.load_state_dict(state)
    resumed = list(b)
    assert len(resumed) == len(rest) == len(a) - 3
    for (x, y), (u, v) in zip(rest, resumed):
        assert torch.equal(x, u) and torch.equal(y, v)


def test_every_supported_transform_runs_natively_with_torch_shapes(val_root):
    chain = T.Compose([T.Pad([2, 3]), T.RandomResizedCrop((40, 36), interpolation=T.InterpolationMode.BICUBIC),
                       T.RandomCrop(32, padding=2, padding_mode="reflect"), T.Grayscale(3),
                       T.GaussianBlur(3, sigma=(0.1, 1.0)), T.ColorJitter(0.2, 0.2, 0.2, 0.1),
                       T.RandomVerticalFlip(0.2), T.Resize((30, 28)), T.CenterCrop(24), T.PILToTensor(),
                       T.ConvertImageDtype(torch.float32), T.RandomHorizontalFlip(), T.Normalize(0.5, 0.25)])
    ds = torchvision.datasets.ImageFolder(str(val_root), chain)
    ours = next(iter(native(ds, batch_size=8, seed=0)))
    theirs = next(iter(DataLoader(ds, batch_size=8)))
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and a.dtype == b.dtype
    gray = ours[0]
    assert torch.equal(gray[:, 0], gray[:, 1]) and torch.equal(gray[:, 1], gray[:, 2])
