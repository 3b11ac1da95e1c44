"""HabanaDataLoader over .tar.gz WebDataset shards, read natively in streaming mode
(webdataset_reader mode "streaming"): the batches torch's DataLoader (and the webdataset package,
when installed) gives over the same shards, every sample once per epoch (also across 2 ranks, with
equal batches), the same order for 1 and 2 threads, the shuffle buffer's bound, a truncated shard
named under raise and skipped under skip, and a resume mid-epoch."""

import gzip
import shutil

import pytest
import torch
import torchvision.transforms as T
from torch.utils.data import DataLoader

from ranks import digest
from habana_dataloader import DataError, HabanaDataLoader, WebDataset, write_shards

SMALL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])


@pytest.fixture(scope="module")
def gz_shards(tmp_path_factory, request):
    """The val ImageFolder as gzip'ed shards of 70 samples: (spec, their paths, samples)."""
    val_root = request.getfixturevalue("val_root")
    out = tmp_path_factory.mktemp("gz")
    paths = write_shards(str(val_root), str(out / "val-%03d.tar"), maxcount=70)
    assert len(paths) >= 4
    gz = []
    for p in paths:
        with open(p, "rb") as src, gzip.open(p + ".gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        gz.append(p + ".gz")
    n = sum(1 for _ in WebDataset(gz))
    return str(out) + "/val-{000..%03d}.tar.gz" % (len(paths) - 1), gz, n


def dataset(spec, shuffle=0, seed=None, **kw):
    ds = WebDataset(spec, seed=seed, **kw)
    if shuffle:
        ds = ds.shuffle(shuffle)
    return ds.decode("pil").to_tuple("jpeg;jpg;png", "cls").map_tuple(SMALL, None)


def native(spec, shuffle=0, seed=None, threads=2, bs=16, **kw):
    loader = HabanaDataLoader(dataset(spec, shuffle, seed), batch_size=bs, num_threads=threads, strict=True, **kw)
    assert loader.native
    return loader


def test_gz_shards_stream_the_batches_torch_and_webdataset_give(gz_shards):
    spec, paths, n = gz_shards
    loader = native(spec)
    assert any("streamed" in note for note in loader.native_notes)
    ours = [(x, y) for x, y in loader]
    theirs = [(x, y) for x, y in DataLoader(dataset(spec), batch_size=16)]
    assert sum(len(y) for _, y in ours) == n and len(ours) == len(theirs) == (n + 15) // 16
    for (xa, ya), (xb, yb) in zip(ours, theirs):
        assert torch.equal(ya, yb)  # in order: shard order, then archive order
        assert xa.shape == xb.shape and (xa.int() - xb.int()).abs().float().mean() < 2.0
    try:
        import webdataset as wds
    except ImportError:
        return  # /usr/bin/python3 has no webdataset; the torch 2 venv has (.ci/torch2.sh)
    ref = (wds.WebDataset(paths, shardshuffle=False).decode("pil").to_tuple("jpeg;jpg;png", "cls")
           .map_tuple(SMALL, None))
    labels = torch.cat([y for _, y in DataLoader(ref, batch_size=16)])
    assert torch.equal(labels, torch.cat([y for _, y in ours]))


def test_shuffled_stream_is_every_sample_once_and_the_same_for_any_thread_count(gz_shards):
    spec, _, n = gz_shards
    everything = sorted(digest(img) for x, _ in native(spec) for img in x)
    runs = []
    for threads in (1, 2):
        loader = native(spec, shuffle=20, seed=4, threads=threads)
        epochs = [[digest(img) for x, _ in loader for img in x] for _ in range(2)]
        for e in epochs:
            assert sorted(e) == everything  # the same multiset of images
        assert epochs[0] != epochs[1]
        runs.append(epochs)
        peak = [c for op in loader._pipe.stats()["operators"] for k, c in op["counters"].items()
                if k == "webdataset_stream_buffer_peak"]
        assert peak == [20]  # .shuffle(20)'s buffer, reached and never passed
    assert runs[0] == runs[1]


def test_two_ranks_get_every_sample_once_with_equal_batches(gz_shards, monkeypatch):
    spec, _, n = gz_shards
    everything = sorted(digest(img) for x, _ in native(spec) for img in x)
    seen, lengths = [], set()
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        loader = native(spec, shuffle=10, seed=8, bs=8)
        batches = [x for x, _ in loader]
        lengths.add(len(batches))
        seen += [digest(img) for x in batches for img in x]
    assert len(lengths) == 1
    assert set(seen) == set(everything) and len(seen) - n < 2  # padding only to even out


def test_truncated_gz_is_named_under_raise_and_skipped_under_skip(gz_shards, tmp_path):
    _, paths, n = gz_shards
    bad = tmp_path / "bad-001.tar.gz"
    data = open(paths[1], "rb").read()
    bad.write_bytes(data[: len(data) // 2])
    spec = [paths[0], str(bad)]
    with pytest.raises(DataError, match=r'tar shard ".*bad-001\.tar\.gz".*byte \d+'):
        for _ in native(spec):
            pass
    loader = native(spec, on_error="skip")
    labels = torch.cat([y for _, y in loader]).tolist()
    first = [int(s["cls"]) for s in WebDataset(paths[0])]
    assert all(labels.count(v) >= first.count(v) for v in set(first))  # the first shard whole
    assert len(first) < len(labels) < n  # and the second up to the damage


def test_resume_mid_epoch_same_world_and_refused_with_another(gz_shards, monkeypatch):
    spec, _, _ = gz_shards
    mk = lambda: HabanaDataLoader(dataset(spec, 30, 2), batch_size=8, num_threads=2, seed=3, strict=True)
    full = [y for _, y in mk()]
    a = mk()
    it = iter(a)
    head = [next(it)[1] for _ in range(5)]
    state = a.state_dict()
    b = mk()
    b.load_state_dict(state)
    rest = [y for _, y in b]
    assert len(head + rest) == len(full) and all(torch.equal(u, v) for u, v in zip(head + rest, full))
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    c = mk()
    c.load_state_dict(state)
    with pytest.raises(ValueError, match="world size it was saved with"):
        next(iter(c))


def test_with_epoch_is_the_ranks_samples_without_counting(gz_shards):
    spec, _, _ = gz_shards
    ds = dataset(spec)
    ds.with_epoch(50)
    loader = HabanaDataLoader(ds, batch_size=10, num_threads=2, strict=True)
    assert loader.native and len(iter(loader)) == 5
    assert sum(len(y) for _, y in loader) == 50
