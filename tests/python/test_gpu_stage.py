"""The gpu stage: operators with device="gpu" run as CUDA kernels on the pipeline's stream.

Host tests check the refusals; the tests marked gpu need a CUDA device (and torch with CUDA)
and skip with CUDA's reason otherwise. On a GPU they check that the gpu stage gives the cpu
stage's values bit for bit for the same seed, that batches are ordered before the consumer's
stream and their memory is reused only after the consumer's work, that memory stays flat over
epochs, and that HabanaDataLoader(device="cuda") takes this path.
"""
import gc

import pytest
import torch
import torchvision
import torchvision.transforms as T

from habana_dataloader import HabanaDataLoader, Pipeline, _C, fn

CUDA = _C.cuda_status()
HAVE_GPU = bool(CUDA["available"]) and torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no CUDA device: {CUDA['reason'] or 'torch has no CUDA'}")
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def train_pipe(root, stage, *, seed=7, batch_size=8, dtype="float32", layout="CHW", crop=None,
               threads=2, device="cuda"):
    pipe = Pipeline(batch_size=batch_size, num_threads=threads, seed=seed,
                    device=device if stage == "gpu" else "cpu")
    with pipe:
        files, labels = fn.file_reader(file_root=str(root), shuffle=True)
        images = fn.image_decoder(files, output_type="rgb", random_crop="resized", resize=[160, 160],
                                  name="decode")
        coin = fn.coin_flip(probability=0.5, name="flip")
        px = fn.random_uniform(range=[0.0, 1.0], name="px")
        args = dict(mean=MEAN, std=STD, dtype=dtype, output_layout=layout, name="normalize")
        if crop:
            args.update(crop=crop, crop_pos_x=px)
        out = fn.crop_mirror_normalize(images, mirror=coin, device=stage, **args)
        pipe.set_outputs(out, labels)
    return pipe


def test_gpu_node_without_a_device_is_refused_with_cudas_reason(train_root):
    if HAVE_GPU:
        pytest.skip("a CUDA device is present: the refusal cannot be seen here")
    with pytest.raises(ValueError) as e:
        train_pipe(train_root, "gpu").build()
    msg = str(e.value)
    assert 'crop_mirror_normalize "normalize" (gpu)' in msg
    assert CUDA["reason"] and CUDA["reason"] in msg or "built without CUDA" in msg


def test_operators_without_a_gpu_implementation_are_refused(train_root):
    pipe = Pipeline(batch_size=2)
    with pipe:
        files, labels = fn.file_reader(file_root=str(train_root))
        images = fn.image_decoder(files, output_type="rgb", resize=[64, 64])
        pipe.set_outputs(fn.gaussian_blur(images, kernel_size=[3, 3], device="gpu"), labels)
    with pytest.raises(ValueError, match='cannot run on stage "gpu"'):
        pipe.build()


def mixed_pipe(root, hw_share, *, decode="mixed", seed=7, batch_size=8, threads=2):
    """Decode (mixed: hardware engines and CPU threads; or cpu) -> RandomResizedCrop ->
    normalize: on the device, or all on the cpu stage for decode="cpu"."""
    tail = "cpu" if decode == "cpu" else "gpu"
    pipe = Pipeline(batch_size=batch_size, num_threads=threads, seed=seed, device="cpu" if decode == "cpu" else "cuda")
    with pipe:
        files, labels = fn.file_reader(file_root=str(root), shuffle=True)
        extra = {} if decode == "cpu" else {"hw_share": hw_share}
        images = fn.image_decoder(files, output_type="rgb", name="decode", device=decode, **extra)
        images = fn.random_resized_crop(images, size=[96, 96], name="rrc", device=tail)
        out = fn.crop_mirror_normalize(images, mean=MEAN, std=STD, name="normalize", device=tail)
        pipe.set_outputs(out, labels)
    return pipe


def test_mixed_decoder_decodes_whole_images(train_root):
    pipe = Pipeline(batch_size=2)
    with pipe:
        files, labels = fn.file_reader(file_root=str(train_root))
        pipe.set_outputs(fn.image_decoder(files, output_type="rgb", resize=[64, 64], device="mixed"), labels)
    with pytest.raises(ValueError, match="on the mixed stage image_decoder decodes whole images"):
        pipe.build()
    with pytest.raises(ValueError, match="hw_share"):
        fn.image_decoder(files, hw_share=1.5)


def test_mixed_decoder_without_a_device_is_refused_with_cudas_reason(train_root):
    if HAVE_GPU:
        pytest.skip("a CUDA device is present: the refusal cannot be seen here")
    with pytest.raises(ValueError) as e:
        mixed_pipe(train_root, -1).build()
    msg = str(e.value)
    assert 'image_decoder "decode" (mixed)' in msg, msg
    assert CUDA["reason"] and CUDA["reason"] in msg or "built without CUDA" in msg


@needs_gpu
def test_mixed_decoder_with_every_image_on_the_cpu_equals_the_cpu_stage(train_root):
    # hw_share=0: the host half decodes every image (libjpeg-turbo), the device half uploads
    # them, RandomResizedCrop and normalize run as kernels: the cpu pipeline's values bit for bit.
    got = _epochs(mixed_pipe(train_root, 0.0), 2)
    want = _epochs(mixed_pipe(train_root, 0.0, decode="cpu"), 2)
    assert len(got) == len(want)
    for (x, y), (u, v) in zip(got, want):
        assert torch.equal(y, v) and torch.equal(x, u)


@needs_gpu
@pytest.mark.parametrize("hw_share", [1.0, -1])
def test_mixed_decoder_on_the_hardware_engines(train_root, hw_share):
    # The engines' pixels are nvJPEG's: close to libjpeg-turbo's (docs/PARITY.md), same crops.
    pipe = mixed_pipe(train_root, hw_share)
    got = _epochs(pipe, 2)
    want = _epochs(mixed_pipe(train_root, 0.0, decode="cpu"), 2)
    std = torch.tensor(STD).view(1, 3, 1, 1)
    for (x, y), (u, v) in zip(got, want):
        assert torch.equal(y, v)
        diff = ((x - u) * std * 255).abs()
        assert diff.mean().item() <= 4.0, diff.mean().item()
    counters = {o["name"]: o["counters"] for o in pipe.stats()["operators"]}["decode"]
    total = counters["hardware_images"] + counters["cpu_images"] + counters["device_stage_cpu_images"]
    # Every image counted once: at least the ones handed out (prefetch may have started the
    # next epoch's).
    assert total >= sum(len(y) for _, y in got)
    if hw_share == 1.0:
        assert counters["hardware_images"] > 0 and counters["device_stage_cpu_images"] <= total // 10, counters
    print(f"[ mixed ] hw_share={hw_share}: {counters}")


def _epochs(pipe, epochs):
    out = []
    for _ in range(epochs):
        for images, labels in pipe:
            out.append((images.cpu(), labels.cpu()))
    return out


@needs_gpu
@pytest.mark.parametrize("dtype,layout,crop", [("float32", "CHW", None), ("float16", "HWC", None),
                                               ("bfloat16", "CHW", [128, 112]), ("uint8", "HWC", [128])])
def test_gpu_stage_equals_cpu_stage_bit_for_bit(train_root, dtype, layout, crop):
    cpu = _epochs(train_pipe(train_root, "cpu", dtype=dtype, layout=layout, crop=crop), 2)
    gpu_pipe = train_pipe(train_root, "gpu", dtype=dtype, layout=layout, crop=crop)
    first = next(iter(gpu_pipe))
    assert first[0].is_cuda and first[1].is_cuda
    gpu_pipe.reset(0)
    gpu = _epochs(gpu_pipe, 2)
    assert len(cpu) == len(gpu)
    for (ci, cl), (gi, gl) in zip(cpu, gpu):
        assert ci.dtype == gi.dtype and ci.shape == gi.shape
        assert torch.equal(ci.view(torch.uint8) if ci.dtype == torch.bfloat16 else ci,
                           gi.view(torch.uint8) if gi.dtype == torch.bfloat16 else gi)
        assert torch.equal(cl, gl)
    stats = gpu_pipe.stats()
    assert stats["device_pool"]["bytes_allocated"] > 0


@needs_gpu
def test_batches_are_ordered_on_the_consumers_stream_and_reused_after_it(train_root):
    # The consumer's stream is busy (a long sleep kernel) when each batch is handed out; it
    # reads the batch after the sleep and drops it at once, while the pipeline prefetches into
    # recycled memory. Each copy must equal the cpu stage's batch.
    ref = _epochs(train_pipe(train_root, "cpu", batch_size=4), 3)
    pipe = train_pipe(train_root, "gpu", batch_size=4)
    side = torch.cuda.Stream()
    copies = []
    with torch.cuda.stream(side):
        for _ in range(3):
            for images, labels in pipe:
                torch.cuda._sleep(20_000_000)  # ~10 ms of GPU time before the read
                copies.append((images.clone(), labels.clone()))
                del images, labels
    torch.cuda.synchronize()
    assert len(copies) == len(ref)
    for (gi, gl), (ci, cl) in zip(copies, ref):
        assert torch.equal(gi.cpu(), ci) and torch.equal(gl.cpu(), cl)


@needs_gpu
def test_device_and_pinned_memory_are_flat_across_epochs(train_root):
    # The pools reach their high-water mark early (how many batches are in flight moves a
    # little with timing); a leak of one block per epoch would pass twice the early size.
    pipe = train_pipe(train_root, "gpu", batch_size=8)
    seen = []
    for epoch in range(12):
        for images, labels in pipe:
            images.float().mean().item()
        torch.cuda.synchronize()
        s = pipe.stats()
        seen.append((s["device_pool"]["bytes_allocated"], s["pool"]["bytes_allocated"]))
    print("pool bytes per epoch (device, pinned):", seen)
    assert all(d <= 2 * seen[2][0] and p <= 2 * seen[2][1] for d, p in seen[3:]), seen


@needs_gpu
def test_early_stop_and_batches_outliving_their_pipeline(train_root):
    pipe = train_pipe(train_root, "gpu", batch_size=4)
    it = iter(pipe)
    images, labels = next(it)
    want = images.cpu().clone()
    pipe.close()
    del pipe, it
    gc.collect()
    torch.cuda.synchronize()
    assert torch.equal(images.cpu(), want)


@needs_gpu
def test_loader_device_cuda_runs_the_tail_on_the_gpu(train_root):
    t = T.Compose([T.RandomResizedCrop(160), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(str(train_root), t)
    cpu = HabanaDataLoader(ds, batch_size=8, shuffle=True, seed=3, num_workers=2)
    gpu = HabanaDataLoader(ds, batch_size=8, shuffle=True, seed=3, num_workers=2, device="cuda", decoder="cpu")
    assert cpu.native and gpu.native, (cpu.fallback_reason, gpu.fallback_reason)
    assert gpu.gpu_ops == ["crop_mirror_normalize"], gpu.native_notes
    for epoch in range(2):
        for (ci, cl), (gi, gl) in zip(cpu, gpu):
            assert gi.is_cuda and gl.is_cuda
            assert torch.equal(ci, gi.cpu()) and torch.equal(cl, gl.cpu())


@needs_gpu
@pytest.mark.parametrize("size,interpolation", [([160, 160], "bilinear"), ([128, 144], "bicubic"),
                                                ([96, 96], "nearest"), ([112, 112], "box"), ([120, 120], "lanczos"),
                                                ([100], "bilinear")])
def test_gpu_resize_equals_cpu_resize(train_root, size, interpolation):
    def pipe(stage):
        p = Pipeline(batch_size=6, num_threads=2, seed=5, device="cuda" if stage == "gpu" else "cpu")
        with p:
            files, labels = fn.file_reader(file_root=str(train_root), shuffle=True)
            images = fn.image_decoder(files, output_type="rgb", random_crop="resized")
            p.set_outputs(fn.resize(images, size=size, interpolation=interpolation, device=stage), labels)
        return p
    cpu, gpu = pipe("cpu"), pipe("gpu")
    for (ci, cl), (gi, gl) in zip(cpu, gpu):
        if isinstance(ci, list):  # [s]: sizes differ per image
            assert len(ci) == len(gi) and all(g.is_cuda and torch.equal(c, g.cpu()) for c, g in zip(ci, gi))
        else:
            assert gi.is_cuda and torch.equal(ci, gi.cpu())
        assert torch.equal(cl, gl.cpu())


def test_loader_gpu_tail_moves_the_end_of_the_chain_and_splits_the_fused_resize(train_root, monkeypatch):
    # What HabanaDataLoader(device="cuda") does to its graph, checked without a GPU.
    from habana_dataloader import loader
    from habana_dataloader.loader import _gpu_tail
    monkeypatch.setattr(loader, "_SPLIT_RESIZE", True)

    def chain():
        files, _ = fn.file_reader(file_root=str(train_root))
        images = fn.image_decoder(files, output_type="rgb", random_crop="resized", resize=[64, 64],
                                  dct_scaling=False)
        coin = fn.coin_flip(probability=0.5)
        jitter = fn.color_jitter(images, brightness=0.4)
        return images, fn.crop_mirror_normalize(jitter, mirror=coin, mean=MEAN, std=STD)

    with Pipeline(batch_size=2):
        images, out = chain()
        assert _gpu_tail([out]) == ["crop_mirror_normalize", "color_jitter", "resize"]
        assert "resize" not in images.node.args and images.node.stage == "cpu"
        jitter = out.node.inputs[0].node
        assert jitter.stage == "gpu" and jitter.inputs[0].node.op == "resize"
        assert jitter.inputs[0].node.args["size"] == [64, 64] and jitter.inputs[0].node.stage == "gpu"
    with Pipeline(batch_size=2):
        images, out = chain()
        assert _gpu_tail([out], limit=1) == ["crop_mirror_normalize"]
        assert out.node.inputs[0].node.stage == "cpu" and images.node.args["resize"] == [64, 64]
    monkeypatch.setattr(loader, "_SPLIT_RESIZE", False)  # the default: the decode keeps its resize
    with Pipeline(batch_size=2):
        images, out = chain()
        assert _gpu_tail([out]) == ["crop_mirror_normalize", "color_jitter"]
        assert images.node.args["resize"] == [64, 64]


def test_loader_puts_its_decoder_on_the_mixed_stage(train_root):
    # The rewiring HabanaDataLoader(device="cuda") applies where the GPU has hardware JPEG
    # engines (checked here on the graph alone: no device needed).
    from habana_dataloader._graph import collect
    from habana_dataloader.loader import _gpu_tail, _hardware_decode
    files, _ = fn.file_reader(file_root=str(train_root))
    train = fn.image_decoder(files, output_type="rgb", random_crop="resized", resize=[160, 128],
                             scale=[0.2, 1.0], interpolation="bicubic", dct_scaling=False, name="decode")
    train = fn.crop_mirror_normalize(fn.random_flip(train, probability=0.5), mean=MEAN, std=STD)
    _gpu_tail([train])
    notes = _hardware_decode([train])
    assert notes == []
    nodes = {n.op: n for n in collect([train])}
    dec, rrc = nodes["image_decoder"], nodes["random_resized_crop"]
    assert dec.stage == "mixed" and not {"random_crop", "resize", "scale", "dct_scaling"} & set(dec.args)
    assert rrc.stage == "gpu" and rrc.inputs[0].node is dec
    assert rrc.args["size"] == [160, 128] and rrc.args["scale"] == [0.2, 1.0] and rrc.args["interpolation"] == "bicubic"
    assert nodes["random_flip"].inputs[0].node is rrc and nodes["random_flip"].stage == "gpu"
    # Resize [s] without a center crop: a gpu resize. A Pillow-exact resize or a center crop:
    # the decoder stays on the CPU, said so.
    files, _ = fn.file_reader(file_root=str(train_root))
    short = fn.crop_mirror_normalize(fn.image_decoder(files, resize=[64], antialias=False), mean=MEAN, std=STD)
    _gpu_tail([short])
    notes = _hardware_decode([short])
    nodes = {n.op: n for n in collect([short])}
    assert nodes["image_decoder"].stage == "mixed" and nodes["resize"].stage == "gpu"
    assert nodes["resize"].args["size"] == [64] and nodes["resize"].args["antialias"] is False
    files, _ = fn.file_reader(file_root=str(train_root))
    evaluation = fn.crop_mirror_normalize(fn.image_decoder(files, resize=[72], center_crop=[64], pillow=True),
                                          mean=MEAN, std=STD)
    _gpu_tail([evaluation])
    notes = _hardware_decode([evaluation])
    assert [n.stage for n in collect([evaluation]) if n.op == "image_decoder"] == ["cpu"]
    assert notes and "center crop" in notes[0]


def test_loader_decoder_argument(train_root):
    ds = torchvision.datasets.ImageFolder(str(train_root), T.Compose([T.RandomResizedCrop(64), T.ToTensor()]))
    with pytest.raises(ValueError, match="'decoder' must be 'auto', 'hardware' or 'cpu'"):
        HabanaDataLoader(ds, batch_size=4, decoder="gpu")
    if HAVE_GPU and _C.hardware_jpeg_status(0)["available"]:
        pytest.skip("hardware engines present: see test_mixed_decoder_*")
    # decoder="hardware" without engines: an explicit choice that cannot be met raises, naming
    # the argument (as device="cuda" without CUDA does), never torch's DataLoader (issue 26).
    device = "cuda" if HAVE_GPU else None
    for dev in (device, "auto"):
        with pytest.raises(ValueError, match="decoder='hardware'"):
            HabanaDataLoader(ds, batch_size=4, decoder="hardware", device=dev)
    with pytest.raises(ValueError, match="decoder='hardware'"):
        HabanaDataLoader(ds, batch_size=4, decoder="hardware", device=device, strict=True)
    loader = HabanaDataLoader(ds, batch_size=4, threads=2)  # auto: the CPU here, nothing said
    assert loader.native and not loader._hw_decode


@needs_gpu
def test_loader_device_cuda_decodes_on_the_hardware_engines(train_root):
    if not _C.hardware_jpeg_status(0)["available"]:
        pytest.skip(f"no hardware JPEG engines: {_C.hardware_jpeg_status(0)['reason']}")
    t = T.Compose([T.RandomResizedCrop(160), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(MEAN, STD)])
    ds = torchvision.datasets.ImageFolder(str(train_root), t)
    auto = HabanaDataLoader(ds, batch_size=8, shuffle=True, seed=3, num_workers=2, device="cuda")
    assert auto.native and not auto._hw_decode  # auto: CPU threads, the faster path measured (docs/CUDA.md)
    gpu = HabanaDataLoader(ds, batch_size=8, shuffle=True, seed=3, num_workers=2, device="cuda", decoder="hardware")
    assert gpu.native and gpu._hw_decode, (gpu.fallback_reason, gpu.native_notes)
    assert "random_resized_crop" in gpu.gpu_ops, gpu.gpu_ops
    n = 0
    for epoch in range(2):
        for images, labels in gpu:
            assert images.is_cuda and labels.is_cuda and images.shape[1:] == (3, 160, 160)
            assert images.isfinite().all()
            n += len(labels)
    assert n == 2 * len(ds)
    counters = {o["name"]: o["counters"] for o in gpu._pipe.stats()["operators"]}
    print(f"[ loader hw ] {counters}")
