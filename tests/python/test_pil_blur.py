"""pil_gaussian_blur against Pillow's ImageFilter.GaussianBlur on corpus photos (bit-exact), and
the recipes' own blur classes (DINO/BYOL, MoCo) mapped to it by HabanaDataLoader."""

import random
import warnings

import numpy as np
import pytest
import torch
import torchvision
import torchvision.transforms as T
from PIL import Image, ImageFilter

from habana_dataloader import HabanaDataLoader, Pipeline, fn

import recipes


def decoded_and_blurred(val_root, tmp_path, **blur_args):
    files = sorted(val_root.glob("*/*.JPEG"))[:12]
    lst = tmp_path / "list.txt"
    lst.write_text("".join(f"{str(f)[1:]} 0\n" for f in files))
    pipe = Pipeline(batch_size=len(files), num_threads=2, seed=3)
    with pipe:
        enc, _ = fn.file_reader(file_list=str(lst), file_root="/")
        img = fn.image_decoder(enc, output_type="rgb")
        pipe.set_outputs(img, fn.pil_gaussian_blur(img, **blur_args))
    return pipe.run()


@pytest.mark.parametrize("radius", [0.0, 0.1, 0.37, 1.0, 1.7, 2.0, 5.3, 40.0])
def test_bit_exact_with_pillow(val_root, tmp_path, radius):
    images, blurred = decoded_and_blurred(val_root, tmp_path, radius=[radius])
    for a, b in zip(images, blurred):
        want = np.asarray(Image.fromarray(a.numpy()).filter(ImageFilter.GaussianBlur(radius)))
        assert np.array_equal(want, b.numpy()), radius


def test_probability_and_random_radius(val_root, tmp_path):
    images, blurred = decoded_and_blurred(val_root, tmp_path, radius=[0.5, 3.0], probability=0.5)
    same = [torch.equal(a, b) for a, b in zip(images, blurred)]
    assert 0 < sum(same) < len(same)  # 12 coin flips: all equal has odds 2^-12
    for a, b, s in zip(images, blurred, same):  # each blurred one is some radius in the range
        if s:
            continue
        pil = Image.fromarray(a.numpy())
        lo = np.abs(np.asarray(pil.filter(ImageFilter.GaussianBlur(0.5))).astype(int) - a.numpy()).mean()
        hi = np.abs(np.asarray(pil.filter(ImageFilter.GaussianBlur(3.0))).astype(int) - a.numpy()).mean()
        got = np.abs(b.numpy().astype(int) - a.numpy()).mean()
        assert lo <= got + 1e-9 and got <= hi + 1e-9


class MocoBlur:
    def __init__(self, sigma=(0.1, 2.0)):
        self.sigma = sigma

    def __call__(self, x):
        sigma = random.uniform(self.sigma[0], self.sigma[1])
        x = x.filter(ImageFilter.GaussianBlur(radius=sigma))
        return x


class LookAlike(MocoBlur):
    def __call__(self, x):
        sigma = random.uniform(self.sigma[0], self.sigma[1]) * 2
        x = x.filter(ImageFilter.GaussianBlur(radius=sigma))
        return x


def test_recipe_blur_classes_map_natively(val_root):
    root = str(val_root)
    for blur in (recipes.GaussianBlurPIL(0.5), MocoBlur()):
        ds = torchvision.datasets.ImageFolder(root, T.Compose([T.RandomResizedCrop(64), blur, T.ToTensor()]))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            loader = HabanaDataLoader(ds, batch_size=8, threads=2, seed=0)
        assert loader.native, loader.fallback_reason
        x, _ = next(iter(loader))
        assert x.shape == (8, 3, 64, 64)
    ds = torchvision.datasets.ImageFolder(root, T.Compose([T.RandomResizedCrop(64), LookAlike(), T.ToTensor()]))
    with pytest.warns(RuntimeWarning, match="LookAlike"):
        assert not HabanaDataLoader(ds, batch_size=8).native
