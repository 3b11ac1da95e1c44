"""habana_dataloader: a hardware-accelerated media data loader for PyTorch.

- ``HabanaDataLoader``: a drop-in for ``torch.utils.data.DataLoader``; runs torchvision
  ImageFolder pipelines natively (threads, no worker processes, no pickling) and falls back
  to torch for anything else, saying why.
- ``Pipeline`` / ``MediaPipe`` + ``fn``: build your own graph of operators.
- ``VideoFolder`` / ``VideoList`` + ``video.ClipTrainTransform`` / ``ClipEvalTransform``: clips
  of a folder of videos or of listed videos or segments, torch Datasets that HabanaDataLoader
  runs natively (``fn.video_reader``).
- ``WebDataset`` (+ ``wds``: splitters, handlers) and ``write_shards``: WebDataset tar shards,
  read with webdataset's fluent interface as a torch IterableDataset, and written from an
  ImageFolder or a file list (CLI: ``python3 -m habana_dataloader.shards``, ``hdl-shards``).
- ``DataError``: a sample could not be produced (``.code`` names the status).
"""

from . import _C
from . import fn
from ._C import DataError
from ._graph import DataNode
from .loader import HabanaDataLoader
from .pipeline import MediaPipe, Pipeline
from . import video
from .video import VideoFolder, VideoList
from . import wds
from .wds import WebDataset


def __getattr__(name: str):
    # write_shards is loaded on first use, so that `python3 -m habana_dataloader.shards` (the
    # hdl-shards CLI) runs the module once, not after the package has imported it.
    if name == "write_shards":
        from .shards import write_shards
        return write_shards
    raise AttributeError(f"module 'habana_dataloader' has no attribute {name!r}")


__version__ = "0.1.0"
__all__ = ["DataError", "DataNode", "HabanaDataLoader", "MediaPipe", "Pipeline", "VideoFolder", "VideoList", "WebDataset", "fn", "video",
           "wds", "write_shards",
           "__version__"]
