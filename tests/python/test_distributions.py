"""Random crops: the window distribution matches torchvision's RandomResizedCrop."""

import math

import numpy as np
import torch
import torchvision.transforms as T
from PIL import Image

from habana_dataloader import Pipeline, fn


def test_random_resized_crop_windows_match_torchvision(val_root):
    files = sorted(val_root.glob("*/*.JPEG"))
    sizes = {}
    for f in files:
        with Image.open(f) as im:
            sizes[f.relative_to(val_root).as_posix()] = im.size  # (w, h)
    pipe = Pipeline(batch_size=len(files), num_threads=2, seed=4)
    with pipe:
        enc, labels = fn.file_reader(file_root=str(val_root))
        # No resize: the output is the window itself, so its size is the crop's.
        pipe.set_outputs(fn.image_decoder(enc, random_crop="resized", scale=[0.08, 1.0]))
    ours_area, ours_ratio = [], []
    order = sorted(sizes)  # file_reader's order = ImageFolder's = sorted paths here
    for epoch in range(2):
        (windows,) = pipe.run()
        for win, name in zip(windows, order):
            w, h = sizes[name]
            ours_area.append(win.shape[0] * win.shape[1] / (w * h))
            ours_ratio.append(math.log(win.shape[1] / win.shape[0]))
        pipe.reset(epoch + 1)
    torch.manual_seed(0)
    rrc = T.RandomResizedCrop(224)
    ref_area, ref_ratio = [], []
    for _ in range(2):
        for name in order:
            w, h = sizes[name]
            _, _, ch, cw = rrc.get_params(Image.new("L", (w, h)), rrc.scale, rrc.ratio)
            ref_area.append(ch * cw / (w * h))
            ref_ratio.append(math.log(cw / ch))
    n = len(ref_area)
    # Means within 4 standard errors; quartiles close.
    for ours, ref in ((ours_area, ref_area), (ours_ratio, ref_ratio)):
        ours, ref = np.array(ours), np.array(ref)
        se = math.sqrt(ours.var() / n + ref.var() / n)
        assert abs(ours.mean() - ref.mean()) < 4 * se, (ours.mean(), ref.mean(), se)
        assert np.allclose(np.quantile(ours, [0.25, 0.5, 0.75]), np.quantile(ref, [0.25, 0.5, 0.75]), atol=0.1)
    assert min(ours_area) >= 0.07 and max(ours_area) <= 1.0
