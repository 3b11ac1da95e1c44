"""HabanaDataLoader over habana_dataloader.WebDataset: native (webdataset_reader), the same
batches as torch's DataLoader over the same WebDataset, every sample exactly once per epoch,
split across ranks with equal batches, and resumed mid-epoch with another world size."""


import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision
import torchvision.transforms as T
from torch.utils.data import DataLoader

from ranks import digest, free_port, gather_and_save
from habana_dataloader import HabanaDataLoader, WebDataset, write_shards
from habana_dataloader._wds_dataset import epoch_order

SMALL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])


@pytest.fixture(scope="module")
def shards(tmp_path_factory, request):
    val_root = request.getfixturevalue("val_root")
    out = tmp_path_factory.mktemp("shards")
    paths = write_shards(str(val_root), str(out / "val-%03d.tar"), maxcount=70)
    assert len(paths) >= 4
    return str(out) + "/val-{000..%03d}.tar" % (len(paths) - 1), len(torchvision.datasets.ImageFolder(str(val_root)))


def dataset(spec, shuffle=0, seed=None):
    ds = WebDataset(spec, seed=seed)
    if shuffle:
        ds = ds.shuffle(shuffle)
    return ds.decode("pil").to_tuple("jpeg;jpg;png", "cls").map_tuple(SMALL, None)


def test_native_batches_equal_torch_dataloaders(shards):
    spec, n = shards
    loader = HabanaDataLoader(dataset(spec), batch_size=16, num_threads=2, strict=True)
    assert loader.native
    assert any("RGB" in note for note in loader.native_notes)
    it = iter(loader)
    assert len(it) == (n + 15) // 16  # this rank's batches, known before the first
    ours = [(x, y) for x, y in it]
    theirs = [(x, y) for x, y in DataLoader(dataset(spec), batch_size=16)]
    assert len(ours) == len(theirs) == (n + 15) // 16
    for (xa, ya), (xb, yb) in zip(ours, theirs):
        assert torch.equal(ya, yb)
        assert xa.shape == xb.shape and xa.dtype == xb.dtype
        # libjpeg-turbo's decode against Pillow's: within a level or two (test_fidelity.py's bound)
        assert (xa.int() - xb.int()).abs().float().mean() < 2.0


def test_shuffled_epochs_hold_every_sample_once_and_differ(shards):
    spec, n = shards
    loader = HabanaDataLoader(dataset(spec, shuffle=100), batch_size=32, num_threads=2, seed=5, strict=True)
    epochs = []
    for _ in range(2):
        labels = torch.cat([y for _, y in loader])
        assert len(labels) == n
        epochs.append(labels.tolist())
    assert epochs[0] != epochs[1]
    assert sorted(epochs[0]) == sorted(epochs[1])


def test_epoch_order_splits_exactly_and_resumes_with_another_world_size():
    n = 1003
    for world in (1, 2, 3, 4, 8):
        parts = [epoch_order(n, True, 9, 2, r, world) for r in range(world)]
        assert len({len(p) for p in parts}) == 1                 # equal per rank
        assert set(np.concatenate(parts)) == set(range(n))        # every sample
        assert sum(len(p) for p in parts) - n < world             # padding only to even out
    # 4 ranks take 7 batches of 16, then the job resumes with 2 (and with 3).
    bs, k = 16, 7
    before = [epoch_order(n, True, 9, 2, r, 4)[: k * bs] for r in range(4)]
    consumed = k * bs * 4
    for world in (2, 3):
        after = [epoch_order(n, True, 9, 2, r, world, consumed) for r in range(world)]
        taken = np.concatenate(before + after)
        assert set(taken) == set(range(n))
        assert len(taken) - n < world                             # nothing repeated but padding


def test_state_dict_resumes_mid_epoch_and_elastically(shards, monkeypatch):
    spec, n = shards
    bs = 8

    def loader():
        return HabanaDataLoader(dataset(spec, shuffle=50, seed=11), batch_size=bs, num_threads=2, seed=3, strict=True)

    # Same world size: the remaining batches exactly.
    full = [y for _, y in loader()]
    a = loader()
    it = iter(a)
    head = [next(it)[1] for _ in range(5)]
    state = a.state_dict()
    b = loader()
    b.load_state_dict(state)
    rest = [y for _, y in b]
    assert all(torch.equal(u, v) for u, v in zip(head + rest, full)) and len(head + rest) == len(full)

    # 4 ranks, 3 batches each; resume with 2 ranks: every sample of the epoch exactly once
    # (less padding), nothing lost.
    taken = []
    states = []
    for rank in range(4):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "4")
        ld = loader()
        it = iter(ld)
        taken += [int(v) for _ in range(3) for v in next(it)[1]]
        states.append(ld.state_dict())
    assert {s["consumed"] for s in states} == {3 * bs * 4}
    for rank in range(2):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        ld = loader()
        ld.load_state_dict(states[rank])
        taken += [int(v) for _, y in ld for v in y]
    monkeypatch.delenv("RANK")
    monkeypatch.delenv("WORLD_SIZE")
    labels = sorted(int(y) for _, y in DataLoader(dataset(spec), batch_size=None))
    counts = {}
    for v in taken:
        counts[v] = counts.get(v, 0) + 1
    # Labels repeat in the corpus (several photos per class), so compare the multisets.
    want = {}
    for v in labels:
        want[v] = want.get(v, 0) + 1
    missing = {v: c - counts.get(v, 0) for v, c in want.items() if counts.get(v, 0) < c}
    assert not missing
    assert len(taken) - n < 2


def _rank(rank: int, world: int, port: int, spec: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    loader = HabanaDataLoader(dataset(spec, shuffle=100), batch_size=16, num_threads=1, strict=True)
    results = []
    for epoch in range(2):
        batches = [(x, y) for x, y in loader]
        results.append((len(batches), [digest(img) for x, _ in batches for img in x]))
    gather_and_save(results, world, out)


@pytest.mark.parametrize("world", [2, 4])
def test_ranks_as_processes_get_every_sample_once_with_equal_batches(shards, tmp_path, world):
    spec, n = shards
    out = str(tmp_path / "ranks.pt")
    mp.spawn(_rank, args=(world, free_port(), spec, out), nprocs=world, join=True)
    gathered = torch.load(out)
    everything = {digest(x) for batch, _ in HabanaDataLoader(dataset(spec), batch_size=64, num_threads=2)
                  for x in batch}
    for epoch in range(2):
        counts = {len(gathered[r][epoch][1]) for r in range(world)}
        assert len(counts) == 1                                   # equal samples per rank
        assert len({gathered[r][epoch][0] for r in range(world)}) == 1  # equal batches
        seen = [d for r in range(world) for d in gathered[r][epoch][1]]
        assert set(seen) == everything                            # every sample
        assert len(seen) - n < world                              # padding only
    assert gathered[0][0][1] != gathered[0][1][1]                 # a new order each epoch
