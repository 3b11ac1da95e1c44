"""Video on the Python side: _C.probe_video / decode_clip, VideoFolder and its clip transforms,
HabanaDataLoader's native path against torch's DataLoader, clip indices against torchvision's
VideoClips, the MediaPipe names, and the error policy on a truncated file.

Golden values come from independent code: the corpus MANIFEST (ffprobe), the ffmpeg CLI's
frames, torchvision's VideoClips (PyAV), torch's DataLoader running the same dataset.
"""

import csv
import pathlib
import shutil
import subprocess
import warnings

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, Subset

from conftest import corpus_dir
from habana_dataloader import DataError, HabanaDataLoader, MediaPipe, Pipeline, VideoFolder, VideoList, _C, fn
from habana_dataloader.video import KINETICS_STD, ClipEvalTransform, ClipTrainTransform, GroupedClipSampler

# Small, quick-to-decode clips of several codecs and containers, in three classes.
FOLDER = {
    "a_office": ["original/office_h264_320x240.mp4", "original/webcam_mjpeg_160x120.avi"],
    "b_lab": ["original/puck_mpeg4asp_400x300.avi", "original/tree_cinepak_320x240.avi"],
    "c_film": ["original/race1906_theora_214x160.ogv"],
}
# One uint8 step after normalisation: where a resized value sits on a rounding boundary the two
# resize implementations (float32 sums in a different order) may round it differently.
ONE_STEP = 1 / 255 / min(KINETICS_STD) + 1e-5


@pytest.fixture(scope="module")
def video_root() -> pathlib.Path:
    d = corpus_dir() / "video"
    if not (d / "MANIFEST.tsv").is_file():
        pytest.skip(f"video corpus not found at {d} (run tests/corpus/make_corpus.sh build/corpus, or set HDL_CORPUS_DIR)")
    return d


@pytest.fixture(scope="module")
def manifest(video_root):
    with open(video_root / "MANIFEST.tsv") as f:
        return {r["file"]: r for r in csv.DictReader(f, delimiter="\t")}


@pytest.fixture(scope="module")
def folder(video_root, tmp_path_factory) -> pathlib.Path:
    """FOLDER as class folders of symlinks to corpus videos."""
    root = tmp_path_factory.mktemp("videos")
    for cls, files in FOLDER.items():
        (root / cls).mkdir()
        for f in files:
            (root / cls / pathlib.Path(f).name).symlink_to(video_root / f)
    return root


def native(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warning fails the test
        loader = HabanaDataLoader(*args, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def ffmpeg_frames(path, n=None) -> np.ndarray:
    if shutil.which("ffmpeg") is None:
        pytest.skip("the ffmpeg CLI is not installed")
    cmd = ["ffmpeg", "-v", "error", "-i", str(path), "-map", "0:v:0", "-fps_mode", "passthrough"]
    cmd += ["-frames:v", str(n)] if n else []
    raw = subprocess.run(cmd + ["-f", "rawvideo", "-pix_fmt", "rgb24", "-"], capture_output=True, check=True).stdout
    info = _C.probe_video(str(path))
    return np.frombuffer(raw, np.uint8).reshape(-1, info["height"], info["width"], 3)


# ---- bindings ------------------------------------------------------------------------------

def test_probe_video_matches_manifest(video_root, manifest):
    for name, row in manifest.items():
        d = _C.probe_video(str(video_root / name))
        assert d["frames"] == int(row["frames"]) == len(d["pts"]), name
        assert d["codec"] == row["codec"], name
        if name != "original/race1906_theora_214x160.ogv":  # see test_decode_clip_matches_ffmpeg
            assert (d["coded_width"], d["coded_height"]) == (int(row["width"]), int(row["height"])), name
        assert d["pts"] == sorted(d["pts"]) and d["keyframes"][0] == 0 and d["num_keyframes"] == len(d["keyframes"])
        assert d["rotation"] in (0, 90, 180, 270)
        if d["rotation"] in (90, 270):
            assert (d["width"], d["height"]) == (d["coded_height"], d["coded_width"])


@pytest.mark.parametrize("name, frames", [
    ("derived/pedestrians_h264_bframes_longgop.mkv", [99, 0, 37, 37, 63, 1]),  # B-frames, any order
    ("original/webcam_mjpeg_160x120.avi", list(range(0, 68, 5))),              # MJPEG 4:2:2 full range
    ("derived/dog_h264_rotate90_remux_1920x1080.mp4", [2, 0, 1]),               # display matrix
    # Theora: ffprobe's stream width is 214, libavcodec's frames (and the CLI's) are 218 wide.
    ("original/race1906_theora_214x160.ogv", [40, 0, 5]),
])
def test_decode_clip_matches_ffmpeg(video_root, name, frames):
    path = video_root / name
    ref = ffmpeg_frames(path, max(frames) + 1)
    got = _C.decode_clip(str(path), frames)
    assert got.dtype == np.uint8 and got.shape == (len(frames),) + ref.shape[1:]
    np.testing.assert_array_equal(got, ref[frames])


def test_decode_clip_errors_name_the_file(video_root, tmp_path):
    good = video_root / "original/office_h264_320x240.mp4"
    with pytest.raises(ValueError, match="office_h264_320x240.mp4.*frame 36"):
        _C.decode_clip(str(good), [0, 36])
    with pytest.raises(DataError, match="nothing_here.mp4") as e:
        _C.probe_video(str(tmp_path / "nothing_here.mp4"))
    assert e.value.code == "not found"
    bad = tmp_path / "half.mp4"
    data = (video_root / "derived/pedestrians_hevc_768x576.mp4").read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match="half.mp4"):
        _C.decode_clip(str(bad), [0])


# ---- VideoFolder ---------------------------------------------------------------------------

def test_video_folder_indexing(folder, manifest):
    ds = VideoFolder(folder, frames_per_clip=8, step=2, sampler="uniform", clips_per_video=3)
    assert ds.classes == sorted(FOLDER) and ds.class_to_idx == {c: i for i, c in enumerate(sorted(FOLDER))}
    expect = [(str(folder / c / pathlib.Path(f).name), i) for i, c in enumerate(sorted(FOLDER))
              for f in sorted(FOLDER[c], key=lambda f: pathlib.Path(f).name)]
    assert ds.samples == expect and ds.targets == [s[1] for s in expect]
    assert len(ds) == 3 * len(expect)
    assert [ds.clip_location(i) for i in (0, 1, 2, 3, -1)] == [(0, 0), (0, 1), (0, 2), (1, 0), (4, 2)]
    # uniform: torchvision's UniformClipSampler picks floor(linspace(0, L - S, K)).
    for v, (path, label) in enumerate(expect):
        n = int(manifest[next(f for fs in FOLDER.values() for f in fs if f.endswith(pathlib.Path(path).name))]["frames"])
        starts = torch.linspace(0, n - 15, 3).floor().long().tolist()
        for k, s in enumerate(starts):
            assert ds.clip_frames(3 * v + k) == list(range(s, s + 15, 2))
    clip, label = ds[4]
    assert clip.dtype == torch.uint8 and clip.shape == (8, 120, 160, 3) and label == 0  # webcam, 160x120
    with pytest.raises(IndexError):
        ds[len(ds)]
    # contiguous: VideoClips' count, (n - S) // stride + 1 per video.
    cont = VideoFolder(folder, frames_per_clip=8, sampler="contiguous", clip_stride=16)
    counts = [int(manifest[f]["frames"]) for c in sorted(FOLDER) for f in sorted(FOLDER[c], key=lambda f: pathlib.Path(f).name)]
    assert len(cont) == sum((n - 8) // 16 + 1 for n in counts)
    assert cont.clip_frames(1) == list(range(16, 24))


def test_video_folder_random_sampler_uses_torch_rng(folder):
    ds = VideoFolder(folder, frames_per_clip=4, sampler="random", clips_per_video=2)
    torch.manual_seed(3)
    a = [ds.clip_frames(i) for i in range(len(ds))]
    torch.manual_seed(3)
    assert [ds.clip_frames(i) for i in range(len(ds))] == a
    seeded = VideoFolder(folder, frames_per_clip=4, sampler="random", clips_per_video=2, seed=5)
    first = [seeded.clip_frames(i, seeded._generator(i)) for i in range(len(ds))]
    assert first == [seeded.clip_frames(i, seeded._generator(i)) for i in range(len(ds))]
    seeded.set_epoch(1)
    assert first != [seeded.clip_frames(i, seeded._generator(i)) for i in range(len(ds))]


# ---- native loader against torch's DataLoader ------------------------------------------------

def assert_close_batches(ours, theirs):
    assert len(ours) == len(theirs)
    n = 0
    for (x, y), (u, v) in zip(ours, theirs):
        assert x.shape == u.shape and x.dtype == u.dtype and torch.equal(y, v)
        if x.dtype == torch.uint8:
            assert torch.equal(x, u)
            continue
        diff = (x - u).abs()
        assert diff.max().item() <= ONE_STEP, diff.max().item()
        assert (diff > 1e-6).float().mean().item() < 1e-3  # a few boundary pixels at most
        n += len(y)
    return n


@pytest.mark.parametrize("sampler", ["uniform", "contiguous"])
def test_loader_matches_torch_eval(folder, sampler):
    ds = VideoFolder(folder, frames_per_clip=8, step=2, sampler=sampler, clips_per_video=2, clip_stride=24,
                     transform=ClipEvalTransform(resize=(48, 64), crop_size=40))
    g = lambda: torch.Generator().manual_seed(11)
    ours = list(native(ds, batch_size=3, shuffle=True, generator=g(), threads=2))
    theirs = list(DataLoader(ds, batch_size=3, shuffle=True, generator=g()))
    assert ours[0][0].shape == (3, 3, 8, 40, 40)  # CTHW, as torchvision's video models take
    assert assert_close_batches(ours, theirs) == len(ds)
    # Sharding through torch's DistributedSampler: rank 1 of 2, padded as torch pads.
    shard = lambda: DistributedSampler(ds, num_replicas=2, rank=1, shuffle=True, seed=4)
    ours = list(native(ds, batch_size=4, sampler=shard(), threads=2))
    assert assert_close_batches(ours, list(DataLoader(ds, batch_size=4, sampler=shard()))) == (len(ds) + 1) // 2


def test_loader_matches_torch_layouts_subset_and_uint8(folder, tmp_path):
    # TCHW layout, a Subset, drop_last, and the deterministic corner of ClipTrainTransform
    # (crop = resized size, flip always): wiring of crop, mirror and layout.
    train = ClipTrainTransform(crop_size=(32, 40), resize=(32, 40), hflip_prob=1.0, layout="TCHW")
    ds = VideoFolder(folder, frames_per_clip=4, sampler="uniform", clips_per_video=2, transform=train)
    sub = Subset(ds, [9, 0, 4, 5, 2, 7, 1])
    assert_close_batches(list(native(sub, batch_size=2, drop_last=True)), list(DataLoader(sub, batch_size=2, drop_last=True)))
    # RandomResizedCrop mode with a window that can only be the whole frame (4:3 videos).
    avi = tmp_path / "avi" / "x"
    avi.mkdir(parents=True)
    for f in folder.glob("*/*.avi"):
        (avi / f.name).symlink_to(f.resolve())
    one = VideoFolder(avi.parent, frames_per_clip=4, sampler="uniform",
                      transform=ClipTrainTransform(crop_size=24, resize=None, scale=(1.0, 1.0), ratio=(4 / 3, 4 / 3),
                                                   hflip_prob=0.0, layout="THWC"))
    assert {tuple(one[i][0].shape) for i in range(len(one))} == {(4, 24, 24, 3)}  # all three avi files are 4:3
    assert_close_batches(list(native(one, batch_size=2)), list(DataLoader(one, batch_size=2)))
    # No transform: uint8 [T, H, W, C] clips, bit-exact (one clip per batch: sizes differ).
    raw = VideoFolder(folder, frames_per_clip=3, step=5, sampler="uniform")
    assert_close_batches(list(native(raw, batch_size=1)), list(DataLoader(raw, batch_size=1)))


def test_loader_random_training_is_deterministic(folder):
    for transform in (ClipTrainTransform(crop_size=32, resize=(40, 48)),
                      ClipTrainTransform(crop_size=32, resize=None, scale=(0.2, 1.0))):
        ds = VideoFolder(folder, frames_per_clip=4, step=2, sampler="random", clips_per_video=2, transform=transform)
        runs = [list(native(ds, batch_size=4, shuffle=True, seed=5, threads=t)) for t in (1, 2, 2)]
        other = list(native(ds, batch_size=4, shuffle=True, seed=6, threads=2))
        for a, b in zip(runs[0], runs[1]):
            assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
        assert all(torch.equal(a[0], b[0]) for a, b in zip(runs[1], runs[2]))
        assert not all(torch.equal(a[0], b[0]) for a, b in zip(runs[0], other))
        assert runs[0][0][0].shape == (4, 3, 4, 32, 32)
        # The torch path runs the same dataset (its own draws).
        x, y = next(iter(DataLoader(ds, batch_size=4)))
        assert x.shape == (4, 3, 4, 32, 32) and y.dtype == torch.int64


def test_clip_train_crop_draws_as_torchvision_random_crop():
    # ClipTrainTransform(resize=...)'s window is torchvision's RandomCrop's: the same offsets
    # for the same RNG state (RandomCrop.get_params with torch's global RNG), every integer
    # offset in [0, H - h] reachable (the two ends included).
    import torchvision.transforms as T
    clip = torch.randint(0, 256, (2, 12, 16, 3), dtype=torch.uint8)
    t = ClipTrainTransform(crop_size=(5, 9), resize=(12, 16), hflip_prob=0.0, mean=None, std=None, layout="TCHW")
    resized = ClipTrainTransform(crop_size=(12, 16), resize=(12, 16), hflip_prob=0.0, mean=None, std=None,
                                 layout="TCHW")(clip)
    seen = set()
    for seed in range(300):
        torch.manual_seed(seed)
        out = t(clip)
        torch.manual_seed(seed)
        i, j, h, w = T.RandomCrop.get_params(resized, (5, 9))
        assert torch.equal(out, resized[..., i:i + h, j:j + w]), seed
        g = torch.Generator().manual_seed(seed)
        assert torch.equal(t(clip, generator=g), out)  # a generator in the same state: the same window
        seen.add((i, j))
    assert {i for i, _ in seen} == set(range(8)) and {j for _, j in seen} == set(range(8))


def test_loader_falls_back_with_reason(folder):
    ds = VideoFolder(folder, frames_per_clip=4, sampler="uniform", transform=lambda clip: clip[:, ::2])
    with pytest.warns(RuntimeWarning, match="transform is a function"):
        loader = HabanaDataLoader(ds, batch_size=1)
    assert not loader.native and "ClipTrainTransform" in loader.fallback_reason
    assert next(iter(loader))[0].shape[1] == 4


# ---- clip indices against torchvision's VideoClips -------------------------------------------

# Constant-frame-rate clips whose length is a multiple of the resampling ratio (VideoClips keeps
# ceil(n / ratio) positions, the reader floor(duration * rate): they differ by one position
# otherwise; see python/habana_dataloader/README.md).
# Intra-only or short-GOP files, so that decoding every clip stays quick.
CLIPS_FILES = ["derived/pedestrians_mjpeg_768x576.avi", "original/city_mpeg2_720x405.mpg",
               "original/webcam_mjpeg_160x120.avi", "original/puck_mpeg4asp_400x300.avi",
               "original/office_h264_320x240.mp4"]


def test_video_shorter_than_a_clip_gives_no_clip_as_video_clips(video_root, tmp_path):
    # 16 frames 2 apart: a span of 31. The corpus's puck clip has 28 frames: VideoClips gives it
    # no clip, and so do VideoFolder and the native reader (left out of len, named once).
    pytest.importorskip("av", reason="torchvision's VideoClips reads timestamps with PyAV (apt install python3-av)")
    from torchvision.datasets.video_utils import VideoClips
    files = CLIPS_FILES[2:]  # webcam 68 frames, puck 28, office 36
    paths = [str(video_root / f) for f in files]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = VideoClips(paths, clip_length_in_frames=31, frames_between_clips=1, num_workers=0)
    has_clips = {pathlib.Path(p).name: len(c) > 0 for p, c in zip(paths, vc.clips)}
    assert has_clips == {"webcam_mjpeg_160x120.avi": True, "puck_mpeg4asp_400x300.avi": False,
                         "office_h264_320x240.mp4": True}
    cls = tmp_path / "folder" / "x"
    cls.mkdir(parents=True)
    for p in paths:
        (cls / pathlib.Path(p).name).symlink_to(p)
    for sampler in ("random", "uniform", "contiguous"):
        with pytest.warns(RuntimeWarning) as caught:
            ds = VideoFolder(cls.parent, frames_per_clip=16, step=2, sampler=sampler, clips_per_video=2, clip_stride=1)
        assert len(caught) == 1, [str(w.message) for w in caught]
        assert (f"1 of 3 videos give no clip (as in torchvision's VideoClips), one clip needs 31 frames "
                f'(frames_per_clip 16, step 2): "{cls / "puck_mpeg4asp_400x300.avi"}" (28 frames)') in str(caught[0].message)
        assert [pathlib.Path(p).name for p in ds.videos_too_short] == ["puck_mpeg4asp_400x300.avi"]
        want = vc.num_clips() if sampler == "contiguous" else 2 * sum(has_clips.values())
        assert len(ds) == want, sampler
        videos = {pathlib.Path(ds.samples[ds.clip_location(i)[0]][0]).name for i in range(len(ds))}
        assert videos == {n for n, ok in has_clips.items() if ok}, sampler
        if sampler == "random":
            assert ds[len(ds) - 1][0].shape == (16, 120, 160, 3)  # the last clip: webcam, sorted after puck
        # The native reader leaves out the same video: the same len, every clip delivered.
        loader = native(ds, batch_size=1, threads=2)  # the frame sizes differ: one clip a batch
        assert len(loader) == len(ds)
        assert sum(len(y) for _, y in loader) == len(ds)
        assert reader_counters(loader)["videos_too_short"] == 1
    with pytest.raises(DataError, match=r"no video is long enough for one clip: one clip needs 79 frames .*the longest is "
                                        r'".*webcam_mjpeg_160x120.avi" \(68 frames\), the shortest ".*puck_mpeg4asp'):
        VideoFolder(cls.parent, frames_per_clip=40, step=2)


@pytest.mark.parametrize("frames, between, rate, files", [
    (8, 3, None, CLIPS_FILES),
    (5, 2, 5, CLIPS_FILES[:2]),  # 10 -> 5 and 25 -> 5 frames per second
])
def test_frame_indices_match_video_clips(video_root, tmp_path, frames, between, rate, files):
    pytest.importorskip("av", reason="torchvision's VideoClips reads timestamps with PyAV (apt install python3-av)")
    from torchvision.datasets.video_utils import VideoClips
    paths = [str(video_root / f) for f in files]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = VideoClips(paths, clip_length_in_frames=frames, frames_between_clips=between, frame_rate=rate, num_workers=0)
    lst = tmp_path / "list.txt"
    lst.write_text("".join(f"{p} {i}\n" for i, p in enumerate(paths)))
    pipe = Pipeline(batch_size=16, num_threads=2)
    with pipe:
        _, _, idx, video = fn.video_reader(file_list=str(lst), file_root="/", sampler="contiguous",
                                           frames_per_clip=frames, clip_stride=between,
                                           frame_rate=float(rate or 0), output="count")
        pipe.set_outputs(idx, video)
    got = {v: [] for v in range(len(paths))}
    for i, v in pipe:
        for clip, k in zip(i.tolist(), v.tolist()):
            got[k].append(clip)
    for v, path in enumerate(paths):
        ours = torch.tensor(got[v], dtype=torch.int64).reshape(-1, frames)
        assert ours.shape == vc.clips[v].shape, path
        # VideoClips' clips are timestamps; its own timestamp list maps our indices to them.
        assert torch.equal(vc.video_pts[v][ours], vc.clips[v]), path
        # VideoFolder picks the same frames.
        assert _C.probe_video(path)["frames"] == len(vc.video_pts[v])
    cls = tmp_path / "folder" / "x"
    cls.mkdir(parents=True)
    for p in paths:
        (cls / pathlib.Path(p).name).symlink_to(p)
    ds = VideoFolder(cls.parent, frames_per_clip=frames, sampler="contiguous", clip_stride=between, frame_rate=rate)
    assert len(ds) == vc.num_clips()
    by_name = {pathlib.Path(p).name: v for v, p in enumerate(paths)}
    for i in range(0, len(ds), 7):
        v, k = ds.clip_location(i)
        vv = by_name[pathlib.Path(ds.samples[v][0]).name]
        assert torch.equal(vc.video_pts[vv][torch.tensor(ds.clip_frames(i))], vc.clips[vv][k])


# ---- bad data and the error policy ---------------------------------------------------------

def test_truncated_video_follows_error_policy(folder, video_root, tmp_path):
    root = tmp_path / "with_bad"
    shutil.copytree(folder, root, symlinks=True)
    data = (video_root / "derived/pedestrians_hevc_768x576.mp4").read_bytes()  # its index is at the end
    (root / "b_lab" / "aa_truncated.mp4").write_bytes(data[: len(data) // 2])
    ds = VideoFolder(root, frames_per_clip=4, sampler="uniform", transform=ClipEvalTransform(resize=(24, 32), crop_size=24))
    bad = next(i for i in range(len(ds)) if ds.samples[ds.clip_location(i)[0]][0].endswith("aa_truncated.mp4"))
    with pytest.raises(DataError, match="aa_truncated.mp4"):
        ds[bad]  # the torch path names the file too
    with pytest.raises(DataError, match=r'video_reader.*"[^"]*aa_truncated\.mp4"'):
        list(native(ds, batch_size=2))
    skipped = native(ds, batch_size=2, on_error="skip", seed=0)
    batches = list(skipped)
    assert sum(len(y) for _, y in batches) == len(ds)  # the bad clip is replaced by a readable one
    stats = skipped._pipe.stats()
    assert stats["failures"] == stats["replaced"] == 1
    assert "aa_truncated.mp4" in stats["recent_errors"][0]


# ---- segments (VideoList, fn.video_reader(segments=), file_list_format) ----------------------

# The same video on several lines with different segments and labels (tree_cinepak has a
# variable frame rate: frames at 0, 0.73, 1.13, 1.6, ... s).
SEGMENTS = [("a_office/office_h264_320x240.mp4", 4, 0.25, 0.9), ("a_office/office_h264_320x240.mp4", 1, 0.5, None),
            ("b_lab/tree_cinepak_320x240.avi", 2, 1.0, 6.0), ("a_office/webcam_mjpeg_160x120.avi", 3, 0.0, 1.5)]


def frames_in(path, start, end):
    """The frames whose time (from the first frame, by ffprobe-independent PyAV-free means: the
    decoder's timestamps) lies in [start, end)."""
    d = _C.probe_video(str(path))
    num, den = d["time_base"]
    return [i for i, p in enumerate(d["pts"]) if start <= (p - d["pts"][0]) * num / den < (end or float("inf"))]


def native_frames(samples, root, **reader):
    """{entry: [frame indices of each clip]} from fn.video_reader over samples in memory."""
    pipe = Pipeline(batch_size=4, num_threads=2, seed=1)
    with pipe:
        _, _, idx, video = fn.video_reader(files=[s[0] for s in samples], labels=[s[1] for s in samples],
                                           segments=[(s[2], s[3]) for s in samples], file_root=str(root),
                                           output="count", **reader)
        pipe.set_outputs(idx, video)
    got = {}
    for i, v in pipe:
        for clip, k in zip(i.tolist(), v.tolist()):
            got.setdefault(k, []).append(clip)
    return got


@pytest.mark.parametrize("sampler", ["uniform", "contiguous"])
def test_video_list_segments_match_native_reader(folder, sampler):
    ds = VideoList(SEGMENTS, root=folder, frames_per_clip=4, step=2, sampler=sampler, clips_per_video=3, clip_stride=3)
    assert ds.samples == [(str(folder / p), y) for p, y, _, _ in SEGMENTS]
    assert ds.segments == [(a, b) for _, _, a, b in SEGMENTS] and ds.targets == [4, 1, 2, 3]
    got = native_frames(SEGMENTS, folder, frames_per_clip=4, step=2, sampler=sampler, clips_per_video=3, clip_stride=3)
    ours = {}
    for i in range(len(ds)):
        ours.setdefault(ds.clip_location(i)[0], []).append(ds.clip_frames(i))
    assert ours == got
    for v, (path, _, start, end) in enumerate(SEGMENTS):  # inside the segment; contiguous: every clip
        inside = frames_in(folder / path, start, end)
        assert all(f in inside for clip in ours[v] for f in clip), v
        if sampler == "contiguous":
            assert len(ours[v]) == (len(inside) - 7) // 3 + 1
            assert ours[v][0] == inside[0:8:2]


def test_video_list_runs_natively_and_under_torch(folder):
    ds = VideoList(SEGMENTS, root=folder, frames_per_clip=4, sampler="uniform", clips_per_video=2,
                   transform=ClipEvalTransform(resize=(48, 64), crop_size=40))
    ours = list(native(ds, batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(2), threads=2))
    theirs = list(DataLoader(ds, batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(2)))
    assert assert_close_batches(ours, theirs) == len(ds) == 8
    # A Subset, and the random sampler: every clip inside its segment on both paths.
    rnd = VideoList(SEGMENTS, root=folder, frames_per_clip=3, sampler="random", clips_per_video=5)
    torch.manual_seed(0)
    for i in range(len(rnd)):
        v, _ = rnd.clip_location(i)
        path, _, start, end = SEGMENTS[v]
        assert set(rnd.clip_frames(i)) <= set(frames_in(folder / path, start, end))
    sub = Subset(rnd, [19, 0, 7])
    assert [y.item() for _, y in native(sub, batch_size=1)] == [3, 4, 1]  # clips of different sizes


def test_video_list_from_file_list_and_bad_segments(folder, tmp_path):
    lst = tmp_path / "ann.txt"
    lst.write_text("# path label start end\n" + "".join(
        f"{folder / p} {y} {a} {'-' if b is None else b}\n" for p, y, a, b in SEGMENTS) +
        f"{folder / SEGMENTS[0][0]} 9 1.0 1.0\n"                # empty: line 6
        f"{folder / SEGMENTS[2][0]} 9 1.0 1.2\n")              # one frame, shorter than a clip: line 7
    ds = VideoList.from_file_list(lst, root="/", segments=True, frames_per_clip=4, sampler="uniform")
    assert ds.segments[:4] == [(a, b) for _, _, a, b in SEGMENTS] and ds.targets == [4, 1, 2, 3, 9, 9]
    with pytest.raises(DataError, match=r'office_h264_320x240.mp4": segment \[1 s, 1 s\) \(file_list ".*ann.txt" '
                                        r"line 6\): the end is not after the start"):
        ds[4]
    with pytest.raises(DataError, match=r"segment \[1 s, 1.2 s\) \(file_list .*line 7\): the segment has 1 frames "
                                        r"\(2 to 2\), a clip needs 4"):
        ds[5]
    # The native reader names the same file, segment and line (its samples are in memory).
    with pytest.raises(DataError, match=r"tree_cinepak_320x240.avi\": segment \[1 s, 1.2 s\) \(samples\[5\]\): "
                                        r"the segment has 1 frames \(2 to 2\), a clip needs 4"):
        list(native(Subset(ds, [5]), batch_size=1))
    pipe = Pipeline(batch_size=1, num_threads=1)
    with pipe:
        _, _, idx, _ = fn.video_reader(file_list=str(lst), file_root="/", file_list_format="path label start end",
                                       frames_per_clip=4, sampler="uniform", output="count")
        pipe.set_outputs(idx)
    with pytest.raises(DataError, match=r"segment \[1 s, 1 s\) \(file_list .*ann.txt\" line 6\)"):
        list(pipe)
    # Contiguous: no clips for the short segment, one (failing) clip for the empty one.
    cont = VideoList.from_file_list(lst, root="/", segments=True, frames_per_clip=4, sampler="contiguous")
    assert [cont.clip_location(i)[0] for i in range(len(cont))].count(4) == 1
    assert 5 not in [cont.clip_location(i)[0] for i in range(len(cont))]
    # Bad arguments name the entry.
    with pytest.raises(ValueError, match="mix"):
        VideoList([("a.mp4", 0), ("b.mp4", 1, 0.0, 1.0)])
    with pytest.raises(TypeError, match=r"samples\[0\]: start and end must be numbers"):
        VideoList([("a.mp4", 0, "x", 1.0)])
    with pytest.raises(TypeError, match="segments.*needs 'files'"):
        fn.video_reader(segments=[(0, 1)])
    with pytest.raises(TypeError, match="segments"):
        fn.file_reader(files=["a.jpg"], segments=[(0, 1)])
    with pytest.raises(ValueError, match="2 files and 1 segments"):
        _C.Samples(["a.mp4", "b.mp4"], None, "", [(0.0, 1.0)])
    with pytest.raises(TypeError, match=r"segments\[0\]: expected \(start, end\)"):
        _C.Samples(["a.mp4"], None, "", [1.0])
    with pytest.raises(ValueError, match="line 1: start"):
        VideoList.from_file_list(_write(tmp_path / "bad.txt", "a.mp4 1 x 2\n"), segments=True)


def _write(path, text):
    path.write_text(text)
    return path


# ---- metadata cache (VideoFolder / VideoList and video_reader share one file) -----------------

def reader_counters(loader):
    return next(o["counters"] for o in loader._pipe.stats()["operators"] if o["op"] == "video_reader")


@pytest.mark.parametrize("sampler", ["contiguous", "random"])
def test_metadata_cache_is_shared_by_video_folder_and_the_native_reader(folder, tmp_path, sampler):
    cache = tmp_path / "meta.bin"
    kw = dict(frames_per_clip=4, sampler=sampler, clip_stride=8, metadata_cache=cache,
              transform=ClipEvalTransform(resize=(24, 32), crop_size=24))
    first = VideoFolder(folder, **kw)
    assert cache.is_file() and first._metadata().probes == len(first.samples) == 5
    second = VideoFolder(folder, **kw)  # another run: every video from the file
    meta = second._metadata()
    assert (meta.probes, meta.hits, meta.misses, len(meta)) == (0, 5, 0, 5)
    assert len(second) == len(first) and [second.clip_location(i) for i in range(len(second))] == \
        [first.clip_location(i) for i in range(len(first))]
    # The native reader reads the same file: no probe at all.
    loader = native(second, batch_size=2, seed=0, threads=2)
    batches = list(loader)
    counters = reader_counters(loader)
    assert counters["video_probes"] == 0 and counters["video_metadata_cache_hits"] == 5, counters
    assert sum(len(y) for _, y in batches) == len(second)
    if sampler == "contiguous":  # the same clips as without a cache
        plain = VideoFolder(folder, frames_per_clip=4, sampler=sampler, clip_stride=8,
                            transform=ClipEvalTransform(resize=(24, 32), crop_size=24))
        assert_close_batches(batches, list(native(plain, batch_size=2, seed=0, threads=2)))
    # The torch path in a worker process reads the file too.
    assert len(list(DataLoader(second, batch_size=2, num_workers=1))) == (len(second) + 1) // 2


def test_metadata_cache_keys_are_relative_and_bad_files_are_handled(folder, tmp_path):
    cache = tmp_path / "meta.bin"
    VideoList(SEGMENTS, root=folder, frames_per_clip=4, metadata_cache=cache)
    meta = _C.VideoMetadataCache(str(cache))
    assert len(meta) == 3 and meta.note == ""  # office.mp4 listed twice: one entry
    # A moved tree keeps its cache: keys are relative to the root.
    moved = tmp_path / "moved"
    shutil.copytree(folder, moved, symlinks=True)
    again = VideoList(SEGMENTS, root=moved, frames_per_clip=4, metadata_cache=cache)
    assert again._metadata().probes == 0
    # Corrupt: rebuilt with one warning.
    data = bytearray(cache.read_bytes())
    data[30] ^= 0xFF
    cache.write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match=r"metadata_cache .*meta.bin' is corrupt \(checksum mismatch"):
        rebuilt = VideoList(SEGMENTS, root=folder, frames_per_clip=4, metadata_cache=cache)
    assert rebuilt._metadata().probes == 3
    assert _C.VideoMetadataCache(str(cache)).note == ""
    # Not a cache: refused, left alone.
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    with pytest.raises(ValueError, match="is not a video metadata cache.*refusing to overwrite it"):
        VideoList(SEGMENTS, root=folder, metadata_cache=other)
    assert other.read_text() == "hello\n"
    # A folder that does not exist: a warning, the dataset still works.
    with pytest.warns(RuntimeWarning, match="the metadata cache was not saved.*no_such_dir"):
        ds = VideoList(SEGMENTS, root=folder, frames_per_clip=4, sampler="uniform",
                       metadata_cache=tmp_path / "no_such_dir" / "meta.bin")
    assert ds[0][0].shape[0] == 4


# ---- MediaPipe names -----------------------------------------------------------------------

def test_mediapipe_names_map_onto_video_reader(folder):
    class VideoPipe(MediaPipe):
        def __init__(self):
            super().__init__(device="cpu", batch_size=2, num_threads=2, seed=42)
            self.reader = fn.ReadVideoDatasetFromDir(dir=str(folder), format=["mp4", "avi", "ogv"], frames_per_clip=4,
                                                     stride=2, sampler="UNIFORM_SAMPLER", clips_per_video=2,
                                                     shuffle=False, seed=42, drop_remainder=True)
            self.decode = fn.VideoDecoder(resize=[40, 32], frames_per_clip=4, output_format="RGB_P")

        def definegraph(self):
            videos, labels, resample = self.reader()
            return self.decode(videos, resample), labels, resample

    pipe = VideoPipe()
    pipe.build()
    pipe.iter_init()
    ds = VideoFolder(folder, frames_per_clip=4, step=2, sampler="uniform", clips_per_video=2)
    i = 0
    for clips, labels, resample in pipe:
        assert clips.shape == (2, 4, 3, 32, 40)  # [width, height] -> 32 x 40, planar
        for c, y, r in zip(clips, labels.tolist(), resample.tolist()):
            assert r == ds.clip_frames(i) and y == ds.samples[ds.clip_location(i)[0]][1]
            i += 1
    assert i == len(ds) // 2 * 2
    with pytest.raises(ValueError, match="fixed_clip_mode"):
        fn.ReadVideoDatasetFromDir(dir=str(folder), fixed_clip_mode=True)
    with pytest.raises(ValueError, match="sampler"):
        fn.ReadVideoDatasetFromDir(dir=str(folder), sampler="SOMETIMES")
    with pytest.raises(ValueError, match="centred window"):
        fn.VideoDecoder(resize=[40, 32], crop_after_resize=[0, 0, 20, 20])
    with pytest.raises(TypeError, match="ReadVideoDatasetFromDir"):
        fn.VideoDecoder(frames_per_clip=4)(fn.file_reader(file_root=str(folder))[0], None)


def test_group_clips_keeps_a_videos_clips_together_in_time_order(folder):
    ds = VideoFolder(folder, frames_per_clip=4, step=2, clips_per_video=3, group_clips=True, seed=3)
    # The Python path: a video's three clips are one draw (the video's generator), sorted.
    for v in range(len(ds.samples)):
        starts = [ds.clip_frames(3 * v + k, ds._video_generator(v))[0] for k in range(3)]
        assert starts == sorted(starts)
        assert starts == [ds.clip_frames(3 * v + k, ds._video_generator(v))[0] for k in range(3)]
    # The native reader: each video's clips adjacent (same label and size), the same for 1 and 2 threads.
    runs = [list(native(ds, batch_size=1, sampler=GroupedClipSampler(ds, generator=torch.Generator().manual_seed(5)),
                        seed=5, threads=t)) for t in (1, 2)]
    assert len(runs[0]) == len(ds)
    for a, b in zip(*runs):
        assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    for g in range(0, len(ds), 3):
        group = runs[0][g:g + 3]
        assert all(c[1].item() == group[0][1].item() and c[0].shape == group[0][0].shape for c in group)
    order = list(GroupedClipSampler(ds))
    assert sorted(order) == list(range(len(ds))) and all(order[g] % 3 == 0 for g in range(0, len(ds), 3))
    with pytest.raises(ValueError, match="group_clips"):
        VideoFolder(folder, sampler="contiguous", group_clips=True)
