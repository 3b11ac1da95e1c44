"""DistributedSampler with 2 ranks in 2 processes (gloo on 127.0.0.1)."""

import os

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torchvision
import torchvision.transforms as T
from torch.utils.data.distributed import DistributedSampler

from ranks import digest, free_port, gather_and_save
from habana_dataloader import HabanaDataLoader

SMALL = T.Compose([T.Resize(40), T.CenterCrop(32), T.PILToTensor()])


def _rank(rank: int, world: int, port: int, root: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    ds = torchvision.datasets.ImageFolder(root, SMALL)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=3, drop_last=False)
    loader = HabanaDataLoader(ds, batch_size=16, sampler=sampler, threads=1, strict=True)
    results = []
    for epoch in range(2):
        sampler.set_epoch(epoch)
        batches = [(x, y) for x, y in loader]
        results.append((len(batches), [digest(img) for x, _ in batches for img in x],
                        [list(sampler)]))
    gather_and_save(results, world, out)


def test_two_ranks_are_disjoint_complete_and_equal(val_root, tmp_path):
    out = str(tmp_path / "ranks.pt")
    mp.spawn(_rank, args=(2, free_port(), str(val_root), out), nprocs=2, join=True)
    gathered = torch.load(out)
    ds = torchvision.datasets.ImageFolder(str(val_root), SMALL)
    everything = {digest(x) for batch, _ in HabanaDataLoader(ds, batch_size=64, threads=2, strict=True) for x in batch}
    assert len(everything) == len(ds)
    for epoch in range(2):
        (n0, d0, _), (n1, d1, _) = gathered[0][epoch], gathered[1][epoch]
        assert n0 == n1 == (len(ds) // 2 + 15) // 16          # equal batch counts
        assert len(d0) == len(d1) == len(ds) // 2
        assert not set(d0) & set(d1)                          # disjoint
        assert set(d0) | set(d1) == everything                # complete
    assert gathered[0][0][1] != gathered[0][1][1]             # set_epoch reshuffles
