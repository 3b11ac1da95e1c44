"""The data loaders of widely used training recipes, written as the recipes write them, for
measuring HabanaDataLoader's reach (how many go native) and speed against torch's DataLoader.

Each entry builds ``(dataset, loader_kwargs)`` for an ImageFolder root. The transforms follow
the recipes' published code (classes re-typed here with the same behaviour, since the
recipes are not packages): pytorch/examples imagenet; torchvision's classification
references (presets.py with their auto-augment, random-erasing and MixUp/CutMix options, and
``weights.transforms()``; with --use-v2 too, torchvision.transforms.v2, where torchvision has
it: v2_recipes()); DINO (training multi-crop, and eval_knn.py's ReturnIndexDataset);
MoCo v2 and v3; BYOL; SimCLR. timm's create_transform (and the recipes built on it: DeiT, MAE
fine-tuning) and timm's own train.py / validate.py loaders (create_dataset's ImageDataset,
fast_collate) need timm, which is not a dependency: those are built by timm_recipes() (listed
in TIMM_RECIPES) only where timm is installed.

    PYTHONPATH=build/python /usr/bin/python3 tests/python/recipes.py [--root DIR] [--bench]

prints, per loader, native or the fallback reason (and with --bench, images/s of both).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import torch
import torchvision
import torchvision.transforms as T
from PIL import ImageFilter, ImageOps
from torch.utils.data import default_collate

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
BILINEAR, BICUBIC = T.InterpolationMode.BILINEAR, T.InterpolationMode.BICUBIC


# ---- torchvision references/classification ------------------------------------------------

class ClassificationPresetTrain:
    """presets.py: RRC, flip, optional auto-augment, tensor, normalize, optional erasing."""

    def __init__(self, *, crop_size, mean=MEAN, std=STD, interpolation=BILINEAR, hflip_prob=0.5,
                 auto_augment_policy=None, ra_magnitude=9, augmix_severity=3, random_erase_prob=0.0):
        trans = [T.RandomResizedCrop(crop_size, interpolation=interpolation)]
        if hflip_prob > 0:
            trans.append(T.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy is not None:
            if auto_augment_policy == "ra":
                trans.append(T.RandAugment(interpolation=interpolation, magnitude=ra_magnitude))
            elif auto_augment_policy == "ta_wide":
                trans.append(T.TrivialAugmentWide(interpolation=interpolation))
            elif auto_augment_policy == "augmix":
                trans.append(T.AugMix(interpolation=interpolation, severity=augmix_severity))
            else:
                trans.append(T.AutoAugment(policy=T.AutoAugmentPolicy(auto_augment_policy), interpolation=interpolation))
        trans.extend([T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(mean=mean, std=std)])
        if random_erase_prob > 0:
            trans.append(T.RandomErasing(p=random_erase_prob))
        self.transforms = T.Compose(trans)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEval:
    def __init__(self, *, crop_size, resize_size=256, mean=MEAN, std=STD, interpolation=BILINEAR):
        self.transforms = T.Compose([T.Resize(resize_size, interpolation=interpolation), T.CenterCrop(crop_size),
                                     T.PILToTensor(), T.ConvertImageDtype(torch.float), T.Normalize(mean=mean, std=std)])

    def __call__(self, img):
        return self.transforms(img)


class RandomMixup(torch.nn.Module):
    """references' transforms.py RandomMixup on a batch (one-hot targets)."""

    def __init__(self, num_classes, p=0.5, alpha=1.0):
        super().__init__()
        self.num_classes, self.p, self.alpha = num_classes, p, alpha

    def forward(self, batch, target):
        batch = batch.clone()
        target = torch.nn.functional.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
        lam = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        batch_rolled.mul_(1.0 - lam)
        batch.mul_(lam).add_(batch_rolled)
        target_rolled.mul_(1.0 - lam)
        target.mul_(lam).add_(target_rolled)
        return batch, target


class RandomCutmix(RandomMixup):
    def forward(self, batch, target):
        batch = batch.clone()
        target = torch.nn.functional.one_hot(target, num_classes=self.num_classes).to(dtype=batch.dtype)
        if torch.rand(1).item() >= self.p:
            return batch, target
        batch_rolled, target_rolled = batch.roll(1, 0), target.roll(1, 0)
        lam = float(torch._sample_dirichlet(torch.tensor([self.alpha, self.alpha]))[0])
        h, w = batch.shape[-2:]
        r_x, r_y = torch.randint(w, (1,)), torch.randint(h, (1,))
        r = 0.5 * (1.0 - lam) ** 0.5
        r_w_half, r_h_half = int(r * w), int(r * h)
        x1, y1 = int(torch.clamp(r_x - r_w_half, min=0)), int(torch.clamp(r_y - r_h_half, min=0))
        x2, y2 = int(torch.clamp(r_x + r_w_half, max=w)), int(torch.clamp(r_y + r_h_half, max=h))
        batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
        lam = float(1.0 - (x2 - x1) * (y2 - y1) / (w * h))
        target_rolled.mul_(1.0 - lam)
        target.mul_(lam).add_(target_rolled)
        return batch, target


def mixup_cutmix_collate(num_classes):
    mixupcutmix = T.RandomChoice([RandomMixup(num_classes, p=1.0, alpha=0.2), RandomCutmix(num_classes, p=1.0, alpha=1.0)])

    def collate_fn(batch):
        return mixupcutmix(*default_collate(batch))

    return collate_fn


# ---- self-supervised recipes: their own PIL augmentations -----------------------------------

class GaussianBlurPIL:
    """DINO / BYOL style: blur with probability p, radius uniform in [radius_min, radius_max]."""

    def __init__(self, p=0.5, radius_min=0.1, radius_max=2.0):
        self.prob, self.radius_min, self.radius_max = p, radius_min, radius_max

    def __call__(self, img):
        do_it = random.random() <= self.prob
        if not do_it:
            return img
        return img.filter(ImageFilter.GaussianBlur(radius=random.uniform(self.radius_min, self.radius_max)))


class Solarization:
    """DINO / BYOL style: ImageOps.solarize with probability p."""

    def __init__(self, p):
        self.p = p

    def __call__(self, img):
        if random.random() < self.p:
            return ImageOps.solarize(img)
        return img


class DataAugmentationDINO:
    def __init__(self, global_crops_scale=(0.4, 1.0), local_crops_scale=(0.05, 0.4), local_crops_number=8):
        flip_and_color_jitter = T.Compose([
            T.RandomHorizontalFlip(p=0.5),
            T.RandomApply([T.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)], p=0.8),
            T.RandomGrayscale(p=0.2)])
        normalize = T.Compose([T.ToTensor(), T.Normalize(MEAN, STD)])
        self.global_transfo1 = T.Compose([T.RandomResizedCrop(224, scale=global_crops_scale, interpolation=BICUBIC),
                                          flip_and_color_jitter, GaussianBlurPIL(1.0), normalize])
        self.global_transfo2 = T.Compose([T.RandomResizedCrop(224, scale=global_crops_scale, interpolation=BICUBIC),
                                          flip_and_color_jitter, GaussianBlurPIL(0.1), Solarization(0.2), normalize])
        self.local_crops_number = local_crops_number
        self.local_transfo = T.Compose([T.RandomResizedCrop(96, scale=local_crops_scale, interpolation=BICUBIC),
                                        flip_and_color_jitter, GaussianBlurPIL(p=0.5), normalize])

    def __call__(self, image):
        crops = []
        crops.append(self.global_transfo1(image))
        crops.append(self.global_transfo2(image))
        for _ in range(self.local_crops_number):
            crops.append(self.local_transfo(image))
        return crops


class TwoCropsTransform:
    """MoCo v3 (two different augmentations) and BYOL."""

    def __init__(self, base_transform1, base_transform2):
        self.base_transform1 = base_transform1
        self.base_transform2 = base_transform2

    def __call__(self, x):
        im1 = self.base_transform1(x)
        im2 = self.base_transform2(x)
        return [im1, im2]


class TwoCropsSame:
    """MoCo v2 / SimCLR: the same augmentation twice."""

    def __init__(self, base_transform):
        self.base_transform = base_transform

    def __call__(self, x):
        q = self.base_transform(x)
        k = self.base_transform(x)
        return [q, k]


def _byol_like(blur_p, solarize_p, use_pil_blur=True):
    blur = GaussianBlurPIL(blur_p) if use_pil_blur else T.RandomApply([T.GaussianBlur(23, sigma=(0.1, 2.0))], p=blur_p)
    return T.Compose([
        T.RandomResizedCrop(224, scale=(0.08, 1.0)),
        T.RandomApply([T.ColorJitter(0.4, 0.4, 0.2, 0.1)], p=0.8),
        T.RandomGrayscale(p=0.2), blur, Solarization(solarize_p),
        T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])


class ReturnIndexDataset(torchvision.datasets.ImageFolder):
    """DINO eval_knn.py: the index in place of the label (to gather the features by index)."""

    def __getitem__(self, idx):
        img, lab = super(ReturnIndexDataset, self).__getitem__(idx)
        return img, idx


# ---- the recipes' loaders ----------------------------------------------------------------

Builder = Callable[[str], Tuple[Any, Dict[str, Any]]]


def _folder(transform) -> Callable[[str], Any]:
    return lambda root: torchvision.datasets.ImageFolder(root, transform)


def _plain(transform, **kw) -> Builder:
    return lambda root: (torchvision.datasets.ImageFolder(root, transform), dict(kw))


def _with_mixup(transform) -> Builder:
    def build(root):
        ds = torchvision.datasets.ImageFolder(root, transform)
        return ds, {"collate_fn": mixup_cutmix_collate(len(ds.classes))}
    return build


def recipes() -> Dict[str, Builder]:
    simclr = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                        T.RandomApply([T.ColorJitter(0.8, 0.8, 0.8, 0.2)], p=0.8), T.RandomGrayscale(p=0.2),
                        T.GaussianBlur(23, sigma=(0.1, 2.0)), T.ToTensor(), T.Normalize(MEAN, STD)])
    moco_v2 = T.Compose([T.RandomResizedCrop(224, scale=(0.2, 1.0)),
                         T.RandomApply([T.ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8), T.RandomGrayscale(p=0.2),
                         T.RandomApply([T.GaussianBlur(23, sigma=(0.1, 2.0))], p=0.5),
                         T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    return {
        "examples/imagenet train": _plain(T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(),
                                                     T.ToTensor(), T.Normalize(MEAN, STD)]), shuffle=True),
        "examples/imagenet val": _plain(T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(),
                                                   T.Normalize(MEAN, STD)])),
        "references train (default)": _plain(ClassificationPresetTrain(crop_size=224), shuffle=True),
        "references train ta_wide + erasing + mixup (ResNet50 v2)": _with_mixup(
            ClassificationPresetTrain(crop_size=176, auto_augment_policy="ta_wide", random_erase_prob=0.1)),
        "references train ra": _plain(ClassificationPresetTrain(crop_size=224, auto_augment_policy="ra")),
        "references train augmix": _plain(ClassificationPresetTrain(crop_size=224, auto_augment_policy="augmix")),
        "references train autoaugment imagenet": _plain(
            ClassificationPresetTrain(crop_size=224, auto_augment_policy="imagenet")),
        "references train erasing": _plain(ClassificationPresetTrain(crop_size=224, random_erase_prob=0.25)),
        "references train mixup/cutmix": _with_mixup(ClassificationPresetTrain(crop_size=224)),
        "references eval": _plain(ClassificationPresetEval(crop_size=224, resize_size=232)),
        "weights.transforms() eval": _plain(torchvision.models.ResNet50_Weights.IMAGENET1K_V2.transforms()),
        "DINO multi-crop": _plain(DataAugmentationDINO(local_crops_number=8), shuffle=True, drop_last=True),
        "MoCo v3 two crops": _plain(TwoCropsTransform(_byol_like(1.0, 0.0), _byol_like(0.1, 0.2)), shuffle=True),
        "MoCo v2 two crops": _plain(TwoCropsSame(moco_v2), shuffle=True),
        "BYOL two views": _plain(TwoCropsTransform(_byol_like(1.0, 0.0, use_pil_blur=False),
                                                   _byol_like(0.1, 0.2, use_pil_blur=False)), shuffle=True),
        "SimCLR pairs": _plain(TwoCropsSame(simclr), shuffle=True),
        # eval_knn.py: Resize(256, interpolation=3), the features of train and val in index order.
        "DINO eval_knn ReturnIndexDataset": lambda root: (
            ReturnIndexDataset(root, T.Compose([T.Resize(256, interpolation=BICUBIC), T.CenterCrop(224), T.ToTensor(),
                                                T.Normalize(MEAN, STD)])), {"pin_memory": True}),
        **v2_recipes(),  # torchvision.transforms.v2's presets, where torchvision has v2
    }


# ---- torchvision references/classification with --use-v2 ---------------------------------
# presets.py with use_v2=True: torchvision.transforms.v2, ToDtype(torch.float, scale=True) in
# place of ConvertImageDtype, ToPureTensor last; backend "pil" (train.py's default: PILToTensor
# after the PIL-stage transforms) or "tv_tensor" (ToImage first: tensor kernels from there on).
# MixUp/CutMix: train.py's get_mixup_cutmix(use_v2=True) in its collate_fn.

def _transforms_v2():
    try:
        from torchvision.transforms import v2
    except ImportError:  # torchvision before 0.15 (Debian's 0.14)
        return None
    return v2


class ClassificationPresetTrainV2:
    """presets.py ClassificationPresetTrain(use_v2=True, backend=...)."""

    def __init__(self, *, crop_size, mean=MEAN, std=STD, interpolation=BILINEAR, hflip_prob=0.5,
                 auto_augment_policy=None, ra_magnitude=9, augmix_severity=3, random_erase_prob=0.0, backend="pil"):
        v2 = _transforms_v2()
        trans = [v2.ToImage()] if backend == "tv_tensor" else []
        trans.append(v2.RandomResizedCrop(crop_size, interpolation=interpolation, antialias=True))
        if hflip_prob > 0:
            trans.append(v2.RandomHorizontalFlip(hflip_prob))
        if auto_augment_policy is not None:
            if auto_augment_policy == "ra":
                trans.append(v2.RandAugment(interpolation=interpolation, magnitude=ra_magnitude))
            elif auto_augment_policy == "ta_wide":
                trans.append(v2.TrivialAugmentWide(interpolation=interpolation))
            elif auto_augment_policy == "augmix":
                trans.append(v2.AugMix(interpolation=interpolation, severity=augmix_severity))
            else:
                trans.append(v2.AutoAugment(policy=v2.AutoAugmentPolicy(auto_augment_policy),
                                            interpolation=interpolation))
        if backend == "pil":
            trans.append(v2.PILToTensor())
        trans.extend([v2.ToDtype(torch.float, scale=True), v2.Normalize(mean=mean, std=std)])
        if random_erase_prob > 0:
            trans.append(v2.RandomErasing(p=random_erase_prob))
        trans.append(v2.ToPureTensor())
        self.transforms = v2.Compose(trans)

    def __call__(self, img):
        return self.transforms(img)


class ClassificationPresetEvalV2:
    """presets.py ClassificationPresetEval(use_v2=True, backend=...)."""

    def __init__(self, *, crop_size, resize_size=256, mean=MEAN, std=STD, interpolation=BILINEAR, backend="pil"):
        v2 = _transforms_v2()
        trans = [v2.ToImage()] if backend == "tv_tensor" else []
        trans += [v2.Resize(resize_size, interpolation=interpolation, antialias=True), v2.CenterCrop(crop_size)]
        if backend == "pil":
            trans.append(v2.PILToTensor())
        trans += [v2.ToDtype(torch.float, scale=True), v2.Normalize(mean=mean, std=std), v2.ToPureTensor()]
        self.transforms = v2.Compose(trans)

    def __call__(self, img):
        return self.transforms(img)


def mixup_cutmix_collate_v2(num_classes):
    """train.py with --use-v2 --mixup-alpha 0.2 --cutmix-alpha 1.0."""
    v2 = _transforms_v2()
    mixup_cutmix = v2.RandomChoice([v2.MixUp(alpha=0.2, num_classes=num_classes),
                                    v2.CutMix(alpha=1.0, num_classes=num_classes)])

    def collate_fn(batch):
        return mixup_cutmix(*default_collate(batch))

    return collate_fn


def _with_mixup_v2(transform) -> Builder:
    def build(root):
        ds = torchvision.datasets.ImageFolder(root, transform)
        return ds, {"collate_fn": mixup_cutmix_collate_v2(len(ds.classes))}
    return build


def v2_recipes() -> Dict[str, Builder]:
    """The references' loaders with --use-v2 (their names start with "v2 "); {} without v2."""
    if _transforms_v2() is None:
        return {}
    train, evaluate = ClassificationPresetTrainV2, ClassificationPresetEvalV2
    return {
        "v2 references train (default)": _plain(train(crop_size=224), shuffle=True),
        "v2 references train ta_wide + erasing + mixup (ResNet50 v2)": _with_mixup_v2(
            train(crop_size=176, auto_augment_policy="ta_wide", random_erase_prob=0.1)),
        "v2 references train ra": _plain(train(crop_size=224, auto_augment_policy="ra")),
        "v2 references train augmix": _plain(train(crop_size=224, auto_augment_policy="augmix")),
        "v2 references train autoaugment imagenet": _plain(train(crop_size=224, auto_augment_policy="imagenet")),
        "v2 references train erasing": _plain(train(crop_size=224, random_erase_prob=0.25)),
        "v2 references train mixup/cutmix": _with_mixup_v2(train(crop_size=224)),
        "v2 references eval": _plain(evaluate(crop_size=224, resize_size=232)),
        "v2 references train (tv_tensor backend)": _plain(train(crop_size=224, backend="tv_tensor"), shuffle=True),
        "v2 references eval (tv_tensor backend)": _plain(evaluate(crop_size=224, resize_size=232,
                                                                  backend="tv_tensor")),
    }


# Recipes built on timm (create_transform, timm's RandAugment strings, RandomErasing; DeiT and
# MAE apply timm's Mixup to the batch in their training loop, not in the loader): measured only
# where timm is installed (tests/python/test_timm.py, or this script run with timm).
TIMM_RECIPES = ["timm create_transform train (rand-m9-mstd0.5-inc1, reprob 0.25)", "timm eval",
                "timm create_transform train (default)", "DeiT train", "MAE fine-tune train",
                "timm train.py (ImageDataset, prefetcher: ToNumpy + fast_collate)",
                "timm validate.py (ImageDataset, prefetcher: ToNumpy + fast_collate)",
                "timm create_transform train (augmix-m5-w4-d2, reprob 0.25)"]
TIMM_MIN_NATIVE = 8  # all: timm's RandAugment / AugMix (timm_augment), ImageDataset and fast_collate are native


def _timm_folder(transform, split: str, **kw) -> Builder:
    """timm's create_dataset('', root) (an ImageDataset over the folder, in timm's order) with
    the transform create_loader gives it, and fast_collate (create_loader's collate_fn with the
    prefetcher, timm's default: PrefetchLoader then normalises, and erases, on the GPU)."""
    from timm.data import create_dataset
    from timm.data.loader import fast_collate

    def build(root):
        ds = create_dataset("", root=root, split=split, is_training=split == "train")
        ds.transform = transform
        return ds, dict(kw, collate_fn=fast_collate)
    return build


def timm_recipes() -> Dict[str, Builder]:
    """TIMM_RECIPES' builders, as the recipes call create_transform; {} without timm."""
    try:
        from timm.data import create_transform
    except ImportError:
        return {}
    # DeiT main.py / MAE main_finetune.py build_transform (is_training=True): the same call.
    deit = create_transform(input_size=224, is_training=True, color_jitter=0.3, auto_augment="rand-m9-mstd0.5-inc1",
                            interpolation="bicubic", re_prob=0.25, re_mode="pixel", re_count=1)
    mae = create_transform(input_size=224, is_training=True, color_jitter=None, auto_augment="rand-m9-mstd0.5-inc1",
                           interpolation="bicubic", re_prob=0.25, re_mode="pixel", re_count=1, mean=MEAN, std=STD)
    return {
        TIMM_RECIPES[0]: _plain(create_transform(224, is_training=True, auto_augment="rand-m9-mstd0.5-inc1",
                                                 re_prob=0.25, interpolation="bicubic"), shuffle=True),
        TIMM_RECIPES[1]: _plain(create_transform(224, crop_pct=0.875, interpolation="bicubic")),
        TIMM_RECIPES[2]: _plain(create_transform(224, is_training=True), shuffle=True),
        TIMM_RECIPES[3]: _plain(deit, shuffle=True, drop_last=True),
        TIMM_RECIPES[4]: _plain(mae, shuffle=True, drop_last=True),
        # train.py / validate.py with their defaults (--aa None, --reprob 0, prefetcher on,
        # --train-interpolation random).
        TIMM_RECIPES[5]: _timm_folder(create_transform(224, is_training=True, use_prefetcher=True,
                                                       interpolation="random"), "train",
                                      shuffle=True, drop_last=True),
        TIMM_RECIPES[6]: _timm_folder(create_transform(224, crop_pct=0.875, interpolation="bicubic",
                                                       use_prefetcher=True), "validation"),
        TIMM_RECIPES[7]: _plain(create_transform(224, is_training=True, auto_augment="augmix-m5-w4-d2",
                                                 re_prob=0.25, interpolation="random"), shuffle=True),
    }


def build(name: str, root: str, batch_size: int = 32, threads: int = 2, builders=None, **extra):
    from habana_dataloader import HabanaDataLoader
    ds, kw = (builders or recipes())[name](root)
    kw.update(extra)
    return HabanaDataLoader(ds, batch_size=batch_size, threads=threads, num_workers=threads, **kw)


def _rate(loader, batches: int) -> float:
    it = iter(loader)
    next(it)  # warm-up: workers / pipeline start
    n, t0 = 0, time.perf_counter()
    for _ in range(batches):
        try:
            b = next(it)
        except StopIteration:
            break
        n += len(b[-1])
    return n / (time.perf_counter() - t0)


def main() -> None:
    import warnings
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default="build/corpus/imagenet/train")
    ap.add_argument("--bench", action="store_true", help="images/s, ours and torch's (num_workers=threads)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--batches", type=int, default=8)
    ap.add_argument("--only", action="append", default=[], help="loaders whose name contains this (repeatable)")
    a = ap.parse_args()
    native = 0
    builders = {**recipes(), **timm_recipes()}
    names = [n for n in builders if not a.only or any(o in n for o in a.only)]
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            loader = build(name, a.root, a.batch, a.threads, builders=builders)
        native += loader.native
        line = f"{'native  ' if loader.native else 'fallback'} {name}"
        if a.bench:
            ours = _rate(loader, a.batches)
            ds, kw = builders[name](a.root)
            theirs = _rate(torch.utils.data.DataLoader(ds, batch_size=a.batch, num_workers=a.threads, **kw), a.batches)
            line += f": {ours:7.1f} images/s vs torch {theirs:7.1f} ({ours / theirs:.2f}x)"
        print(line + ("" if loader.native else f"\n           {loader.fallback_reason}"))
        sys.stdout.flush()
    skipped = "" if timm_recipes() else f" ({len(TIMM_RECIPES)} timm-based ones not counted: no timm)"
    print(f"{native} of {len(names)} recipe loaders native{skipped}")


if __name__ == "__main__":
    main()
