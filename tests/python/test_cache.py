"""The local cache of remote shards from Python (media/cache_file_system.h): WebDataset(cache_dir=,
cache_limit=) over nginx on 127.0.0.1 (started here by tests/media/object_store_servers.py; the
test skips, saying why, without it) read by HabanaDataLoader natively gives the local shards'
batches, fills the cache with one entry per shard, and a second loader over the same directory
reads the same batches from it; bad cache_limit values are errors naming the argument."""

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
import torch
import torchvision.transforms as T

from habana_dataloader import HabanaDataLoader, Pipeline, WebDataset, fn, write_shards

ROOT = pathlib.Path(__file__).resolve().parents[2]
SMALL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])


@pytest.fixture(scope="module")
def served(tmp_path_factory, request):
    """(local spec, URL spec, shard count): corpus shards on disk and behind nginx."""
    val_root = request.getfixturevalue("val_root")
    out = tmp_path_factory.mktemp("cache_shards")
    paths = write_shards(str(val_root), str(out / "root" / "val-%03d.tar"), maxcount=70)
    state = out / "state"
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests/media/object_store_servers.py"), "--root",
                             str(out / "root"), "--state", str(state), "--want", "nginx", "--parent",
                             str(os.getpid()), "--lifetime", "600"])
    info = {}
    for _ in range(300):
        if (state / "servers.txt").exists():
            info = dict(line.split("=", 1) for line in (state / "servers.txt").read_text().split() if "=" in line)
            break
        time.sleep(0.1)
    if "nginx" not in info:
        proc.send_signal(signal.SIGTERM)
        pytest.skip(info.get("skip_nginx", "object_store_servers.py did not start nginx"))
    last = "%03d" % (len(paths) - 1)
    yield (str(out / "root") + "/val-{000..%s}.tar" % last,
           "http://127.0.0.1:%s/val-{000..%s}.tar" % (info["nginx"], last), len(paths))
    proc.send_signal(signal.SIGTERM)
    proc.wait(10)


def loader(spec, on_loader=False, **cache):
    """The cache options given to WebDataset, or (on_loader) to HabanaDataLoader."""
    ds = WebDataset(spec, **({} if on_loader else cache)).decode("pil").to_tuple("jpeg;jpg;png", "cls")
    return HabanaDataLoader(ds.map_tuple(SMALL, None), batch_size=16, num_threads=2, strict=True,
                            **(cache if on_loader else {}))


def batches(ld):
    assert ld.native, ld.native_notes
    return [(x.clone(), y.clone()) for x, y in ld]


def test_webdataset_over_nginx_through_the_cache(served, tmp_path):
    local_spec, url_spec, shards = served
    cache = tmp_path / "cache"
    want = batches(loader(local_spec))
    for run in range(2):  # a cold cache, then a warm one (another loader, another pipeline)
        ld = loader(url_spec, on_loader=run == 1, cache_dir=str(cache), cache_limit="256M")
        got = batches(ld)
        reader = next(o["counters"] for o in ld._pipe.stats()["operators"] if "cache_hits" in o["counters"])
        assert (reader["cache_misses"] > 0) if run == 0 else (reader["cache_misses"] == 0 < reader["cache_hits"]), reader
        assert len(got) == len(want)
        assert all(torch.equal(a, c) and torch.equal(b, d) for (a, b), (c, d) in zip(got, want))
        names = sorted(p.name for p in cache.iterdir() if p.name != ".lock")
        assert not any(n.endswith(".part") for n in names), names
        # One entry per shard (and per published .tar.idx sidecar, read whole, cached too).
        assert len([n for n in names if n.endswith(".tar")]) == shards, names


def test_pipeline_counts_hits_and_misses(served, tmp_path):
    _, url_spec, shards = served
    cache = str(tmp_path / "cache")
    runs = []
    for _ in range(2):  # a cold cache, then a warm one
        pipe = Pipeline(batch_size=32, num_threads=2, cache_dir=cache, cache_limit=1 << 30, output="numpy")
        with pipe:
            data, label, _ = fn.webdataset_reader(urls=url_spec, field="jpg;jpeg;png", label_field="cls", index="none")
            pipe.set_outputs(data, label)
        got = [(bytes(x), int(y)) for xs, ys in pipe for x, y in zip(xs, ys)]
        runs.append((got, pipe.stats()["operators"][0]["counters"]))
        pipe.close()
    assert runs[0][0] == runs[1][0] and len(runs[0][0]) > 0
    cold, warm = runs[0][1], runs[1][1]
    assert cold["cache_misses"] >= shards and cold["cache_bytes_written"] > 0, cold
    assert warm["cache_misses"] == 0 and warm["cache_hits"] >= shards and warm["cache_bytes_written"] == 0, warm
    assert warm["cache_bytes_read"] > 0


def test_bad_cache_limits_name_the_argument(served):
    local_spec = served[0]
    with pytest.raises(ValueError, match="cache_limit"):
        WebDataset(local_spec, cache_limit="10X")
    with pytest.raises(ValueError, match="cache_limit"):
        HabanaDataLoader(WebDataset(local_spec), cache_limit=-1)
    with pytest.raises(TypeError, match="cache_limit"):
        Pipeline(cache_limit=True)
    with pytest.raises(TypeError, match="cache_dir"):
        WebDataset(local_spec, cache_dir=3)
