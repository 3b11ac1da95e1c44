"""Video on the GPU: video_reader(device="mixed") decodes clips on the hardware video decoders
(NVDEC through FFmpeg's cuda hwaccel; CPU threads take what NVDEC cannot), crop_mirror_normalize
takes clips on the gpu stage, and HabanaDataLoader(VideoFolder(...), device="cuda") uses both.

Host tests check the refusals; the tests marked gpu need a CUDA device (and torch with CUDA)
and skip with the reason otherwise. On a GPU: the gpu stage's clips equal the cpu stage's bit
for bit; NVDEC's clips equal the CPU decoder's for 8-bit 4:2:0 video (the YUV -> RGB kernel
emulates libswscale's converter there; docs/VIDEO.md, "NVDEC"), within the stated bound else;
every clip is counted once, on NVDEC or on the CPU.
"""
import os

import numpy as np
import pytest
import torch

from habana_dataloader import HabanaDataLoader, Pipeline, VideoFolder, _C, fn
from habana_dataloader.video import ClipTrainTransform

CUDA = _C.cuda_status()
HAVE_GPU = bool(CUDA["available"]) and torch.cuda.is_available()
NVDEC = _C.video_hardware_status(0)
needs_gpu = pytest.mark.skipif(not HAVE_GPU, reason=f"no CUDA device: {CUDA['reason'] or 'torch has no CUDA'}")
needs_nvdec = pytest.mark.skipif(not (HAVE_GPU and NVDEC["available"]),
                                 reason=f"no NVDEC: {NVDEC['reason'] or CUDA['reason'] or 'torch has no CUDA'}")
MEAN, STD = [0.43216, 0.394666, 0.37645], [0.22803, 0.22145, 0.216989]
# The corpus clips decoded as 8-bit 4:2:0, where NVDEC + the kernel give the CPU path's bytes.
EXACT_FORMATS = ("yuv420p", "yuvj420p")
# Codecs whose decoding is exact by their standard (integer transforms): NVDEC equals libavcodec
# there; MPEG-2 / MPEG-4 Part 2 only bound their IDCT's error (tests/cuda/video_gpu_test.cc).
EXACT_CODECS = ("h264", "hevc", "vp8", "vp9", "av1")


@pytest.fixture(scope="module")
def video_root():
    root = os.path.join(os.environ.get("HDL_CORPUS_DIR", "build/corpus"), "video")
    if not os.path.isfile(os.path.join(root, "MANIFEST.tsv")):
        pytest.skip(f"video corpus not found at {root} (run tests/corpus/make_corpus.sh)")
    return root


def corpus_clips(root):
    """The corpus's clips, sorted (the reader's video index v is entry v)."""
    return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                  if f.endswith((".mp4", ".mkv", ".webm", ".avi", ".mpg", ".ogv")))


def clip_pipe(root, reader, tail, seed=3):
    paths = corpus_clips(root)
    pipe = Pipeline(batch_size=4, num_threads=3, seed=seed, device="cuda" if "cpu" != tail or reader != "cpu" else "cpu")
    with pipe:
        clips, labels, frames, videos = fn.video_reader(
            files=paths, labels=list(range(len(paths))), frames_per_clip=8, step=2, random_crop="resized",
            resize=[112, 112], shuffle=True, clips_per_video=2, device=reader, name="reader")
        coin = fn.coin_flip(probability=0.5)
        out = fn.crop_mirror_normalize(clips, mirror=coin, mean=MEAN, std=STD, output_layout="CFHW", device=tail)
        pipe.set_outputs(out, labels, frames, videos)
    return pipe


def host(x):
    return x.cpu() if isinstance(x, torch.Tensor) else torch.as_tensor(np.asarray(x))


def test_mixed_reader_without_a_device_is_refused_with_cudas_reason(video_root):
    if HAVE_GPU:
        pytest.skip("a CUDA device is present: the refusal cannot be seen here")
    with pytest.raises(ValueError) as e:
        clip_pipe(video_root, "mixed", "gpu").build()
    msg = str(e.value)
    assert 'video_reader "reader" (mixed)' in msg
    assert CUDA["reason"] and CUDA["reason"] in msg or "built without CUDA" in msg
    assert not NVDEC["available"] and NVDEC["reason"]


@needs_gpu
def test_clip_normalise_on_the_gpu_stage_equals_the_cpu_stage(video_root):
    cpu, gpu = clip_pipe(video_root, "cpu", "cpu"), clip_pipe(video_root, "cpu", "gpu")
    with cpu, gpu:
        for c, g in zip(cpu, gpu):
            assert g[0].is_cuda
            for a, b in zip(c, g):
                assert torch.equal(host(a), host(b))


@needs_nvdec
def test_mixed_reader_equals_the_cpu_reader(video_root):
    cpu, gpu = clip_pipe(video_root, "cpu", "cpu"), clip_pipe(video_root, "mixed", "gpu")
    formats = {}
    n = 0
    with cpu, gpu:
        for c, g in zip(cpu, gpu):
            for i in (1, 2, 3):
                assert torch.equal(host(c[i]), host(g[i]))
            for s, v in enumerate(host(c[3]).tolist()):
                if v not in formats:
                    info = _C.probe_video(corpus_clips(video_root)[v])
                    formats[v] = info["pixel_format"] if info["codec"] in EXACT_CODECS else info["codec"]
                a, b = host(c[0])[s], host(g[0])[s]
                if formats[v] in EXACT_FORMATS:
                    assert torch.equal(a, b), f"video {v} ({formats[v]})"
                else:  # the bound of docs/VIDEO.md, through the normalise (std ~0.22)
                    assert (a - b).abs().max().item() <= 16 / 255 / 0.216989 + 1e-4
                n += 1
        stats = gpu.stats()
    counters = next(o["counters"] for o in stats["operators"] if o["name"] == "reader")
    print("mixed reader:", n, "clips compared;", {k: v for k, v in counters.items() if k.startswith("video_")})
    assert counters["video_device_clips"] > 0
    assert counters["video_device_clips"] + counters["video_cpu_clips"] == counters["video_clips"]
    assert counters["video_device_failures"] == 0


@needs_nvdec
def test_loader_device_cuda_decodes_clips_on_nvdec(video_root):
    ds = VideoFolder(video_root, frames_per_clip=8, step=2, transform=ClipTrainTransform(crop_size=112))
    loader = HabanaDataLoader(ds, batch_size=4, device="cuda", decoder="hardware", threads=3, seed=1)
    cpu = HabanaDataLoader(ds, batch_size=4, device="cuda", threads=3, seed=1)  # auto: CPU threads
    assert loader.gpu_ops == ["crop_mirror_normalize"], loader.native_notes
    x, y = next(iter(loader))
    xc, yc = next(iter(cpu))
    assert x.is_cuda and x.shape == (4, 3, 8, 112, 112) and x.dtype == torch.float32
    assert torch.equal(y.cpu(), yc.cpu())
    assert (x - xc).abs().max().item() <= 16 / 255 / 0.216989 + 1e-4
