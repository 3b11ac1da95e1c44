"""HabanaDataLoader(python_tail=True): transforms with no native mapping run in Python inside
the pipeline (a python_function per sample) between native decode / transforms, instead of
sending the loader back to torch. The batches equal torch's where the Python transforms are
deterministic; with random ones a seed repeats them, and the training script's global RNGs do
not move."""

import random
import warnings

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import ImageFilter, ImageOps
from torch.utils.data import DataLoader

from habana_dataloader import HabanaDataLoader


class Posterize3:  # deterministic, PIL in and out: a recipe's own class
    def __call__(self, img):
        return ImageOps.posterize(img, 3)


class MaybeBlur:  # random, PIL in and out
    def __init__(self, p):
        self.p = p

    def __call__(self, img):
        if random.random() < self.p:
            return img.filter(ImageFilter.BoxBlur(2))
        return img


class AddNoise:  # after ToTensor: a tensor transform drawing from torch's RNG
    def __call__(self, x):
        return x + 0.01 * torch.randn(1)


def loader(root, tf, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return HabanaDataLoader(torchvision.datasets.ImageFolder(str(root), tf), python_tail=True, **kw)


def test_off_by_default_and_the_reason_stays(val_root):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dl = HabanaDataLoader(torchvision.datasets.ImageFolder(str(val_root), T.Compose([Posterize3(), T.ToTensor()])),
                              batch_size=4)
    assert not dl.native and "Posterize3" in dl.fallback_reason and dl.python_transforms == []
    # The fallback says what python_tail=True would take, only when that would make it native.
    assert dl.fallback_reason.endswith("(python_tail=True would run decode and the mappable transforms natively and "
                                       "only Posterize3 in Python inside the pipeline)"), dl.fallback_reason
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dl = HabanaDataLoader(torchvision.datasets.ImageFolder(str(val_root), T.Compose([Posterize3(), T.ToTensor()])),
                              batch_size=4, collate_fn=lambda b: b)
    assert not dl.native and "python_tail" not in dl.fallback_reason, dl.fallback_reason


def test_only_the_unmapped_transform_runs_in_python_and_equals_torch(val_root):
    tf = T.Compose([T.CenterCrop(64), Posterize3(), T.PILToTensor()])
    dl = loader(val_root, tf, batch_size=16)
    assert dl.native and dl.python_transforms == ["Posterize3"], (dl.fallback_reason, dl.python_transforms)
    assert any("Posterize3 run in Python" in n for n in dl.native_notes)
    theirs = DataLoader(torchvision.datasets.ImageFolder(str(val_root), tf), batch_size=16)
    n = 0
    for (x, y), (u, v) in zip(dl, theirs):
        assert torch.equal(x, u) and torch.equal(y, v)
        n += len(y)
    assert n == len(dl.dataset)


def test_native_after_the_python_transform(val_root):
    """ToTensor and Normalize after the Python class run natively (crop_mirror_normalize)."""
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    tf = T.Compose([T.CenterCrop(48), Posterize3(), T.ToTensor(), T.Normalize(mean, std)])
    dl = loader(val_root, tf, batch_size=16)
    assert dl.native and dl.python_transforms == ["Posterize3"]
    theirs = DataLoader(torchvision.datasets.ImageFolder(str(val_root), tf), batch_size=16)
    for (x, y), (u, v) in zip(dl, theirs):
        assert torch.equal(y, v) and torch.allclose(x, u, atol=1e-5)


def test_a_tensor_stage_class_takes_the_rest_into_python(val_root):
    tf = T.Compose([T.CenterCrop(48), T.ToTensor(), AddNoise()])
    dl = loader(val_root, tf, batch_size=8, seed=4)
    assert dl.native and dl.python_transforms == ["ToTensor", "AddNoise"]
    x, _ = next(iter(dl))
    plain = next(iter(DataLoader(torchvision.datasets.ImageFolder(str(val_root), T.Compose(tf.transforms[:2])),
                                 batch_size=8)))[0]
    d = (x - plain).flatten(1)
    assert x.dtype == torch.float32 and x.shape == (8, 3, 48, 48)
    assert torch.allclose(d.min(1).values, d.max(1).values, atol=1e-6)  # one offset per image
    assert d[:, 0].abs().max() > 0 and d[:, 0].abs().max() < 0.06


def test_random_python_transforms_repeat_with_the_seed_and_follow_their_law(val_root):
    tf = T.Compose([T.RandomResizedCrop(40), MaybeBlur(0.3), T.PILToTensor()])
    a = [x for x, _ in loader(val_root, tf, batch_size=32, seed=9)]
    b = [x for x, _ in loader(val_root, tf, batch_size=32, seed=9)]
    c = [x for x, _ in loader(val_root, tf, batch_size=32, seed=10)]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))
    # Which images were blurred: a box blur lowers the mean absolute difference of neighbours.
    tf_plain = T.Compose([T.RandomResizedCrop(40), T.PILToTensor()])
    plain = torch.cat([x for x, _ in loader(val_root, tf_plain, batch_size=32, seed=9)])
    blurred = torch.cat(a)
    rough = lambda t: (t[:, :, :, 1:].float() - t[:, :, :, :-1].float()).abs().flatten(1).mean(1)
    share = (rough(blurred) < 0.8 * rough(plain)).float().mean().item()
    n = len(plain)
    assert abs(share - 0.3) <= 5 * np.sqrt(0.3 * 0.7 / n), share


def test_the_scripts_global_rngs_do_not_move(val_root):
    tf = T.Compose([T.CenterCrop(32), MaybeBlur(0.5), T.ToTensor(), AddNoise()])
    dl = loader(val_root, tf, batch_size=16, seed=1)
    torch.manual_seed(123), random.seed(123), np.random.seed(123)
    want = (torch.rand(3), random.random(), np.random.rand())
    torch.manual_seed(123), random.seed(123), np.random.seed(123)
    for _ in dl:
        pass
    got = (torch.rand(3), random.random(), np.random.rand())
    assert torch.equal(want[0], got[0]) and want[1:] == got[1:]


def test_an_error_in_the_python_transform_names_the_file(val_root):
    class Broken:
        def __call__(self, img):
            raise RuntimeError("no luck")

    dl = loader(val_root, T.Compose([T.CenterCrop(32), Broken(), T.ToTensor()]), batch_size=4)
    assert dl.native
    with pytest.raises(Exception, match=r"(?s)no luck.*\.JPEG|\.JPEG.*no luck"):
        next(iter(dl))


def test_unknown_output_dtype_falls_back_with_a_reason(val_root):
    class ToArray:
        def __call__(self, img):
            return np.asarray(img)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dl = HabanaDataLoader(torchvision.datasets.ImageFolder(str(val_root), T.Compose([T.CenterCrop(32), ToArray()])),
                              batch_size=4, python_tail=True)
    assert not dl.native and "output dtype is not known" in dl.fallback_reason, dl.fallback_reason
