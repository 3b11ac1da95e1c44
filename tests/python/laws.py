"""Checks that two samplers follow one law, shared by the tests of random transforms
(test_auto_augment.py, test_timm.py, test_v2.py)."""

import numpy as np


def same_law(a, b, c_alpha=1.949):
    """Two-sample Kolmogorov-Smirnov at alpha = 0.001 (c(alpha) = sqrt(-ln(alpha / 2) / 2))."""
    grid = np.sort(np.concatenate([a, b]))
    d = np.abs(np.searchsorted(np.sort(a), grid, side="right") / len(a) -
               np.searchsorted(np.sort(b), grid, side="right") / len(b)).max()
    return d <= c_alpha * np.sqrt((len(a) + len(b)) / (len(a) * len(b)))


def mean_values(loader, batches=8):
    """Per sample of the loader's first `batches` batches: the mean of its values."""
    stats = []
    for b, (x, _) in enumerate(loader):
        stats += list(x.float().flatten(1).mean(1).numpy())
        if b + 1 == batches:
            break
    return np.array(stats)
