"""The image operators with a gpu-stage implementation: flip, random_flip, crop, random_crop, pad,
random_resized_crop, color_space_conversion, grayscale, brightness, contrast, saturation, hue and color_jitter.

Host tests check that their schemas list the gpu stage, that a pipeline running one on the gpu
stage without a usable device is refused naming the node and CUDA's reason, and that what the
gpu stage cannot do (padding modes other than constant, ycbcr) is refused when the graph is
built, on any machine. The tests marked gpu need a CUDA device (and torch with CUDA) and skip
with CUDA's reason otherwise: each operator on the gpu stage must give the cpu stage's batches
bit for bit, over two epochs with the same seed, with its per-sample arguments and random draws
(the same Philox streams on both stages).
"""
import functools
import os
import pytest
import torch

from habana_dataloader import Pipeline, _C, fn

CUDA = _C.cuda_status()
HAVE_GPU = bool(CUDA["available"]) and torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no CUDA device: {CUDA['reason'] or 'torch has no CUDA'}")

GPU_OPS = ["flip", "random_flip", "crop", "random_crop", "pad", "random_resized_crop", "color_space_conversion", "grayscale",
           "brightness", "contrast", "saturation", "hue", "color_jitter"]


def _uniform(lo, hi, name):
    return fn.random_uniform(range=[lo, hi], name=name)


# Each case: (id, decoder output_type, the first gpu node's operator, build(images, stage) -> the
# node(s) under test). The first gpu node is always named "op" (the device stage names it when it
# refuses to start).
def _flip(images, stage):
    return fn.flip(images, horizontal=fn.coin_flip(probability=0.5, name="h"),
                   vertical=fn.coin_flip(probability=0.3, name="v"), device=stage, name="op")


def _flip_float32(images, stage):
    # Any dtype: a float32 image (cast on the cpu stage) flipped on the gpu stage.
    f = fn.cast(images, dtype="float32", name="to_float")
    return fn.flip(f, horizontal=fn.coin_flip(probability=0.5, name="h"), vertical=1, device=stage, name="op")


def _random_flip(images, stage):
    return fn.random_flip(images, probability=0.5, device=stage, name="op")


def _random_vflip(images, stage):
    return fn.random_flip(images, probability=0.4, direction="vertical", device=stage, name="op")


def _crop(images, stage):
    return fn.crop(images, crop=[128, 112], crop_pos_x=_uniform(0, 1, "px"), crop_pos_y=_uniform(0, 1, "py"),
                   device=stage, name="op")


def _center_crop_larger_than_image(images, stage):
    return fn.crop(images, crop=[176, 170], fill=[1.0, 2.0, 3.0], device=stage, name="op")


def _random_crop(images, stage):
    return fn.random_crop(images, size=[144, 144], padding=[4], fill=[10.0, 20.0, 30.0], device=stage, name="op")


def _random_crop_pad_if_needed(images, stage):
    return fn.random_crop(images, size=[176, 168], padding=[2, 1], pad_if_needed=True, fill=[7.0], device=stage,
                          name="op")


def _random_resized_crop(images, stage):
    return fn.random_resized_crop(images, size=[96, 112], scale=[0.2, 1.0], device=stage, name="op")


def _random_resized_crop_random_filter(images, stage):
    return fn.random_resized_crop(images, size=[64], random_interpolation=["bilinear", "bicubic"], device=stage,
                                  name="op")


def _pad(images, stage):
    return fn.pad(images, padding=[3, 5, 7, 2], fill=[9.0], device=stage, name="op")


def _pad_negative(images, stage):
    return fn.pad(images, padding=[-4, 6], device=stage, name="op")


def _convert(image_type, output_type):
    def build(images, stage):
        return fn.color_space_conversion(images, image_type=image_type, output_type=output_type, device=stage,
                                         name="op")
    return build


def _grayscale(images, stage):
    return fn.grayscale(images, num_output_channels=1, device=stage, name="op")


def _random_grayscale(images, stage):
    return fn.grayscale(images, num_output_channels=0, probability=0.5, device=stage, name="op")


def _adjust(op, lo, hi, probability=0.5):
    def build(images, stage):
        return getattr(fn, op)(images, factor=_uniform(lo, hi, "factor"), probability=probability, device=stage,
                               name="op")
    return build


def _color_jitter(images, stage):
    return fn.color_jitter(images, brightness=[0.4], contrast=[0.4], saturation=[0.4], hue=[0.1],
                           probability=0.8, device=stage, name="op")


def _color_jitter_ranges(images, stage):
    return fn.color_jitter(images, brightness=[0.2, 1.8], contrast=[0.0, 2.0], saturation=[0.5, 1.5],
                           hue=[-0.5, 0.5], device=stage, name="op")


def _chain(images, stage):
    # gpu-stage nodes reading gpu-stage outputs: RandomCrop(144, padding=4), RandomHorizontalFlip,
    # ColorJitter, RandomGrayscale.
    x = fn.random_crop(images, size=[144, 144], padding=[4], device=stage, name="op")
    x = fn.random_flip(x, device=stage, name="op_flip")
    x = fn.color_jitter(x, brightness=[0.4], contrast=[0.4], saturation=[0.4], hue=[0.1], device=stage,
                        name="op_jitter")
    return fn.grayscale(x, num_output_channels=0, probability=0.2, device=stage, name="op_gray")


CASES = [
    ("flip", "rgb", "flip", _flip),
    ("flip_float32", "rgb", "flip", _flip_float32),
    ("random_flip", "rgb", "random_flip", _random_flip),
    ("random_flip_vertical", "gray", "random_flip", _random_vflip),
    ("crop", "rgb", "crop", _crop),
    ("center_crop_larger_than_image", "rgb", "crop", _center_crop_larger_than_image),
    ("random_crop", "rgb", "random_crop", _random_crop),
    ("random_crop_pad_if_needed", "rgb", "random_crop", _random_crop_pad_if_needed),
    ("pad", "rgb", "pad", _pad),
    ("random_resized_crop", "rgb", "random_resized_crop", _random_resized_crop),
    ("random_resized_crop_random_filter", "rgb", "random_resized_crop", _random_resized_crop_random_filter),
    ("pad_negative", "rgb", "pad", _pad_negative),
    ("rgb_to_bgr", "rgb", "color_space_conversion", _convert("rgb", "bgr")),
    ("bgr_to_rgb", "bgr", "color_space_conversion", _convert("bgr", "rgb")),
    ("rgb_to_gray", "rgb", "color_space_conversion", _convert("rgb", "gray")),
    ("bgr_to_gray", "bgr", "color_space_conversion", _convert("bgr", "gray")),
    ("gray_to_rgb", "gray", "color_space_conversion", _convert("gray", "rgb")),
    ("gray_to_bgr", "gray", "color_space_conversion", _convert("gray", "bgr")),
    ("rgb_to_rgb", "rgb", "color_space_conversion", _convert("rgb", "rgb")),
    ("grayscale", "rgb", "grayscale", _grayscale),
    ("random_grayscale", "rgb", "grayscale", _random_grayscale),
    ("brightness", "rgb", "brightness", _adjust("brightness", 0.5, 1.5)),
    ("contrast", "rgb", "contrast", _adjust("contrast", 0.5, 1.5)),
    ("contrast_gray", "gray", "contrast", _adjust("contrast", 0.0, 2.0, probability=1.0)),
    ("saturation", "rgb", "saturation", _adjust("saturation", 0.0, 2.0)),
    ("hue", "rgb", "hue", _adjust("hue", -0.5, 0.5)),
    ("color_jitter", "rgb", "color_jitter", _color_jitter),
    ("color_jitter_ranges", "rgb", "color_jitter", _color_jitter_ranges),
    ("color_jitter_gray", "gray", "color_jitter", _color_jitter),
    ("chain", "rgb", "random_crop", _chain),
]
CASE_IDS = [c[0] for c in CASES]


@functools.lru_cache(maxsize=None)
def _shards(root) -> int:
    """About 160 photos per shard (the whole corpus: 16 shards; a GPU machine's slice: 1)."""
    n = sum(1 for _, _, fs in os.walk(root) for f in fs if f.endswith(".JPEG"))
    return max(1, n // 160)


def op_pipe(root, build, stage, *, output_type="rgb", seed=11, batch_size=10):
    # About 160 photos: some 17 batches, the last one partial.
    shards = _shards(str(root))
    pipe = Pipeline(batch_size=batch_size, num_threads=2, seed=seed, device="cuda" if stage == "gpu" else "cpu")
    with pipe:
        files, labels = fn.file_reader(file_root=str(root), shuffle=True, num_shards=shards, shard_id=min(3, shards - 1))
        images = fn.image_decoder(files, output_type=output_type, random_crop="resized", resize=[160, 160],
                                  name="decode")
        pipe.set_outputs(build(images, stage), labels)
    return pipe


def _epochs(pipe, epochs):
    """Every batch of `epochs` epochs, copied to the host at once: (images, labels, were on the device)."""
    out = []
    for _ in range(epochs):
        for images, labels in pipe:
            out.append((images.cpu(), labels.cpu(), images.is_cuda and labels.is_cuda))
    pipe.close()
    return out


def test_gpu_ops_list_the_gpu_stage():
    stages = {s["name"]: s["stages"] for s in _C.schemas()}
    for op in GPU_OPS:
        assert stages[op] == ["cpu", "gpu"], (op, stages[op])


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_gpu_op_without_a_device_is_refused_with_cudas_reason(train_root, case):
    if HAVE_GPU:
        pytest.skip("a CUDA device is present: the refusal cannot be seen here")
    _, output_type, first_op, build = case
    pipe = op_pipe(train_root, build, "gpu", output_type=output_type)
    with pytest.raises(ValueError) as e:
        pipe.build()
    msg = str(e.value)
    assert f'{first_op} "op" (gpu)' in msg, msg
    assert CUDA["reason"] and CUDA["reason"] in msg or "built without CUDA" in msg, msg


@pytest.mark.parametrize("op,kwargs,message", [
    ("random_crop", dict(size=[96], padding=[4], padding_mode="reflect"), 'on the gpu stage "padding_mode" must be "constant"'),
    ("pad", dict(padding=[4], padding_mode="edge"), 'on the gpu stage "padding_mode" must be "constant"'),
    ("color_space_conversion", dict(image_type="rgb", output_type="ycbcr"), "ycbcr runs on the cpu stage"),
    ("random_resized_crop", dict(size=[32], pillow=True), "pillow rounding runs on the cpu stage"),
])
def test_what_the_gpu_stage_cannot_do_is_refused_when_the_graph_is_built(train_root, op, kwargs, message):
    def pipe(stage):
        p = Pipeline(batch_size=2, device="cuda" if stage == "gpu" else "cpu")
        with p:
            files, labels = fn.file_reader(file_root=str(train_root))
            images = fn.image_decoder(files, output_type="rgb", resize=[64, 64])
            p.set_outputs(getattr(fn, op)(images, device=stage, name="op", **kwargs), labels)
        return p
    with pytest.raises(ValueError) as e:
        pipe("gpu").build()
    assert f'{op} "op"' in str(e.value) and message in str(e.value), str(e.value)
    pipe("cpu").build().close()  # the cpu stage takes it


@needs_gpu
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_gpu_op_equals_cpu_op_bit_for_bit(train_root, case):
    _, output_type, _, build = case
    cpu = _epochs(op_pipe(train_root, build, "cpu", output_type=output_type), 2)
    gpu = _epochs(op_pipe(train_root, build, "gpu", output_type=output_type), 2)
    assert len(cpu) == len(gpu) and len(cpu) > 2
    for (ci, cl, _), (gi, gl, on_device) in zip(cpu, gpu):
        assert on_device
        assert ci.dtype == gi.dtype and ci.shape == gi.shape, (ci.dtype, ci.shape, gi.dtype, gi.shape)
        assert torch.equal(ci, gi), (ci.int() - gi.int()).abs().max().item()
        assert torch.equal(cl, gl)
