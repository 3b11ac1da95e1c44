"""Reach: the recipes' loaders (tests/python/recipes.py) that go native, and for each, a
first batch with the structure, shapes and dtypes of torch's DataLoader's."""

import warnings

import pytest
import torch
from torch.utils.data import DataLoader

import recipes

# Raised as operators land; a drop is a regression in reach.
MIN_NATIVE = 17  # + references ta_wide+erasing+mixup, ra, augmix, autoaugment (auto_augment, augmix), DINO eval_knn


def _structure(batch):
    if isinstance(batch, torch.Tensor):
        return ("tensor", batch.dtype, tuple(batch.shape))
    return (type(batch).__name__, [_structure(x) for x in batch])


def test_reach(val_root):
    native = []
    for name in recipes.recipes():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader = recipes.build(name, str(val_root), batch_size=4)
        if loader.native:
            native.append(name)
    assert len(native) >= MIN_NATIVE, native


@pytest.mark.parametrize("name", list(recipes.recipes()))
def test_native_batches_have_torchs_structure(val_root, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = recipes.build(name, str(val_root), batch_size=4, seed=0)
    if not loader.native:
        pytest.skip(f"falls back: {loader.fallback_reason}")
    ds, kw = recipes.recipes()[name](str(val_root))
    kw.pop("shuffle", None)
    theirs = next(iter(DataLoader(ds, batch_size=4, **kw)))
    ours = next(iter(loader))
    assert _structure(ours) == _structure(theirs)
