"""``fn``: one function per operator, generated at import time from the operator schemas.

    files, labels = fn.file_reader(file_root="train", shuffle=True)
    images = fn.image_decoder(files, output_type="rgb")
    images = fn.resize(images, size=256)
    flip = fn.coin_flip(probability=0.5)
    images = fn.flip(images, horizontal=flip)      # a per-sample argument input

Positional arguments are the operator's inputs; keyword arguments its arguments (a DataNode
for a per-sample argument input); ``name=`` names the node (and keys its random stream);
``stage=`` picks the stage ("cpu", "mixed", "gpu"). ``device=``, DALI's spelling, is accepted
for ``stage=`` and converted at the call (it is not the accelerator of ``Pipeline(device=)``).
Each function's docstring is the operator's reference entry (docs/operators.md). Mistakes
raise at the call: TypeError for an unknown argument, a wrong type or a wrong number of inputs;
ValueError for a bad value. ``fn.python_function(*inputs, function=f)`` runs a Python callable
(see its docstring).

Habana MediaPipe's video names, ``fn.ReadVideoDatasetFromDir`` and ``fn.VideoDecoder``, keep
MediaPipe's convention (construct with arguments, call in ``definegraph``) and map onto
``video_reader``; their docstrings give the mapping argument by argument.

The generated functions live in ``_ops`` and the MediaPipe names, written on top of them, in
``_mediapipe_ops``; this module only gathers both.
"""

from __future__ import annotations

from typing import List

from . import _ops
from ._ops import *  # noqa: F401,F403 (every operator's function)
from ._ops import schemas  # noqa: F401 (name -> schema dict)
from ._mediapipe_ops import ReadVideoDatasetFromDir, VideoDecoder  # noqa: F401 (MediaPipe names)

__all__: List[str] = list(_ops.__all__) + ["ReadVideoDatasetFromDir", "VideoDecoder"]
