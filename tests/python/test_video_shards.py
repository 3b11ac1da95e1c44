"""Videos stored in WebDataset tar shards (write_shards) read as VideoList.from_shards: the
same clips, labels and order, natively and through torch's DataLoader, as the same files on
disk read as a VideoFolder (the independent reference: plain files, no tar involved).
Member paths "<shard>.tar/<member>" are opened through the pipeline's default file system and
_C.decode_clip's (pipeline/readers/tar/shard_member_file.h); offsets come from the .idx sidecar.
"""

import io
import pathlib
import tarfile
import warnings

import pytest
import torch
from torch.utils.data import DataLoader

from conftest import corpus_dir
from habana_dataloader import DataError, HabanaDataLoader, VideoFolder, VideoList, _C, write_shards
from habana_dataloader.video import ClipEvalTransform

FOLDER = {  # small clips of three containers / codecs, in two classes
    "a_office": ["office_h264_320x240.mp4", "webcam_mjpeg_160x120.avi"],
    "b_lab": ["puck_mpeg4asp_400x300.avi", "race1906_theora_214x160.ogv"],
}
CLIPS = dict(frames_per_clip=8, step=2, sampler="contiguous", clip_stride=24,
             transform=ClipEvalTransform(resize=(48, 64), crop_size=40))


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> pathlib.Path:
    src = corpus_dir() / "video" / "original"
    if not src.is_dir():
        pytest.skip(f"video corpus not found at {src} (run tests/corpus/make_corpus.sh build/corpus)")
    root = tmp_path_factory.mktemp("videos")
    for cls, files in FOLDER.items():
        (root / cls).mkdir()
        for f in files:
            (root / cls / f).symlink_to(src / f)
    return root


@pytest.fixture(scope="module")
def shards(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("shards")
    paths = write_shards(folder, str(out / "v-%02d.tar"), maxcount=3)
    assert len(paths) == 2  # 3 + 1 samples: a clip's videos come from both shards
    return str(out / "v-{00..01}.tar")


def native(ds, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback warning fails the test
        loader = HabanaDataLoader(ds, **kw)
    assert loader.native, loader.fallback_reason
    return loader


def assert_equal_batches(ours, theirs):
    assert len(ours) == len(theirs) > 0
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(y, v)
        assert x.shape == u.shape and torch.equal(x, u)


def test_clips_from_shards_equal_clips_from_disk(folder, shards):
    disk = VideoFolder(folder, **CLIPS)
    packed = VideoList.from_shards(shards, **CLIPS)
    assert len(packed) == len(disk) > 4
    assert packed.targets == disk.targets == [0, 0, 1, 1]
    members = [p.split(".tar/", 1)[1] for p, _ in packed.samples]
    assert members == ["a_office/office_h264_320x240.mp4", "a_office/webcam_mjpeg_160x120.avi",
                       "b_lab/puck_mpeg4asp_400x300.avi", "b_lab/race1906_theora_214x160.ogv"]
    # The index sidecar gave the members' offsets, and is kept for the next open.
    shard0 = packed.samples[0][0].split(".tar/")[0] + ".tar"
    assert pathlib.Path(shard0 + ".idx").is_file()
    with tarfile.open(shard0) as tf:  # an independent reader: Python's tarfile
        m = tf.getmember(members[0])
        assert _C.probe_video(packed.samples[0][0])["frames"] == _C.probe_video(str(folder / members[0]))["frames"]
        assert m.size == (folder / members[0]).stat().st_size
    # Natively (video_reader over member paths) and through torch's DataLoader (_C.decode_clip).
    assert_equal_batches(list(native(packed, batch_size=3, threads=2)), list(native(disk, batch_size=3, threads=2)))
    assert_equal_batches(list(DataLoader(packed, batch_size=3)), list(DataLoader(disk, batch_size=3)))


def test_shuffled_native_order_matches_torch(shards):
    packed = VideoList.from_shards(shards, **CLIPS)
    g = lambda: torch.Generator().manual_seed(5)
    ours = list(native(packed, batch_size=2, shuffle=True, generator=g(), threads=2))
    theirs = list(DataLoader(packed, batch_size=2, shuffle=True, generator=g()))
    assert len(ours) == len(theirs)
    for (x, y), (u, v) in zip(ours, theirs):
        assert torch.equal(y, v) and x.shape == u.shape
        assert (x - u).abs().max().item() <= 1 / 255 / 0.216989 + 1e-5  # the two resizes: within a uint8 step


def test_bad_fields_and_members_are_named(shards, folder, tmp_path):
    with pytest.raises(DataError, match=r'tar shard ".*v-00\.tar": key "a_office/office_h264_320x240": no webm field'):
        VideoList.from_shards(shards, field="webm")
    with pytest.raises(DataError, match=r"no 'json' field"):
        VideoList.from_shards(shards, label="json")
    with pytest.raises(ValueError, match="plain .tar"):
        VideoList.from_shards(str(folder) + "/x.tar.gz")
    bad = tmp_path / "bad.tar"  # written by Python's tarfile: a label that is no integer
    with tarfile.open(bad, "w") as tf:
        tf.add((folder / "a_office" / "office_h264_320x240.mp4").resolve(), "k1.mp4")  # the file, not the link
        info = tarfile.TarInfo("k1.cls")
        info.size = 3
        tf.addfile(info, io.BytesIO(b"two"))
    with pytest.raises(DataError, match=r'bad\.tar": key "k1": field .cls. is not an integer'):
        VideoList.from_shards(str(bad))
    assert VideoList.from_shards(str(bad), label=None, frames_per_clip=4).targets == [0]
    shard = shards.replace("{00..01}", "00")
    with pytest.raises(DataError, match=r'has no member "nope\.mp4"'):
        _C.probe_video(shard + "/nope.mp4")
    with pytest.raises(DataError, match="No such file"):  # no shard: the path's own error
        _C.probe_video(str(folder) + "/missing.tar/x.mp4")


def test_webdataset_with_a_video_field_points_to_from_shards(shards):
    from habana_dataloader import WebDataset
    ds = WebDataset(shards).decode("pil").to_tuple("mp4;avi;ogv", "cls")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loader = HabanaDataLoader(ds, batch_size=2)
    assert not loader.native and "VideoList.from_shards" in loader.fallback_reason
