"""What the tests of torch.distributed jobs share: a free port on 127.0.0.1 for gloo, an image's
digest, and rank 0 saving what every rank saw."""

import hashlib
import socket

import torch
import torch.distributed as dist


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def digest(image: torch.Tensor) -> str:
    return hashlib.sha1(image.contiguous().numpy().tobytes()).hexdigest()


def gather_and_save(results, world: int, out: str) -> None:
    """Every rank's `results` gathered; rank 0 saves the list (rank order) to `out`. Ends the
    process group."""
    gathered = [None] * world
    dist.all_gather_object(gathered, results)
    if dist.get_rank() == 0:
        torch.save(gathered, out)
    dist.destroy_process_group()
