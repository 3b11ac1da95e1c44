"""Mapping a split chain onto operators: a pipeline graph from encoded bytes to the batch's
images, one node per view.

The leading RandomResizedCrop / Resize / CenterCrop become image_decoder arguments (the
entries' ``fuse``: the decoder then decodes only the region it needs); every other PIL-stage
transform becomes its entry's operator with its entry's arguments (``map_one``: one generic
rule, no per-transform code here), ToTensor + Normalize one crop_mirror_normalize pass to
float32 CHW, then RandomErasing. Random application (RandomGrayscale, RandomSolarize,
RandomInvert, RandomApply) is the operators' ``probability`` argument; a RandomApply of several
transforms binds one coin_flip to all of them (one draw: all or none). Every operator and
argument is looked up in the build's schemas first; what is missing becomes a fallback reason.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import torchvision.transforms as T

from . import fn
from ._chain import OnTensor, random_apply_items, split
from ._graph import DataNode
from ._python_tail import with_tail
from ._recipes import recipe_op
from ._support import Unsupported, arg_default, has_op, require_op
from ._transform_table import Entry, entry_of, is_v1
from ._views import views_of


def _times(p: Any, q: float) -> Any:
    """The probability of applying a transform of probability `q` inside one of probability `p`
    (a float, or a shared 0/1 coin_flip, which random_apply_reasons allows only with q 0 or 1)."""
    if q >= 1:
        return p
    if isinstance(p, DataNode):
        if q <= 0:
            return 0.0
        raise Unsupported("a random transform inside a RandomApply of several transforms (two draws)")
    return float(p) * float(q)


def _prob(op: str, p: Any) -> Dict[str, Any]:
    """`op`'s probability argument for `p` (none when it always applies and that is the default)."""
    default = arg_default(op, "probability")
    if not isinstance(p, DataNode) and p >= 1 and (default is None or default >= 1):
        return {}
    require_op(op, "probability")
    return {"probability": p if isinstance(p, DataNode) else float(p)}


def _apply(e: Entry, t: Any, x: DataNode, p: Any = 1.0) -> DataNode:
    """`e`'s operator on x with `e`'s arguments for `t`, applied with probability `p` (times
    `t.p` for a transform with a probability of its own)."""
    args = e.args(t)
    require_op(e.op, *args)
    if e.own_p:
        args.update(_prob(e.op, _times(p, float(t.p))))
    elif e.random_apply is not None:  # keeps the shape: may run under a RandomApply's probability
        args.update(_prob(e.op, p))
    return getattr(fn, e.op)(x, **args)


def _map_recipe(t: Any, op: Tuple[str, Dict[str, Any]], x: DataNode, p: Any) -> DataNode:
    name, args = op
    require_op(name, *args)
    if isinstance(p, DataNode):  # the shared draw of a RandomApply of several transforms
        if float(args.get("probability", 1.0)) < 1:
            raise Unsupported(f"{type(t).__name__} (p < 1) inside a RandomApply of several transforms has no native mapping")
        require_op(name, "probability")
        args = dict(args, probability=p)
    elif p < 1:  # RandomApply([recipe class], p): the probabilities multiply
        require_op(name, "probability")
        args = dict(args, probability=float(p) * float(args.get("probability", 1.0)))
    return getattr(fn, name)(x, **args)


def map_one(t: Any, x: DataNode, p: Any = 1.0) -> DataNode:
    """`t` applied to x with probability `p` (a float or a shared coin_flip; only transforms
    that keep the image's shape take one below 1, see random_apply_reasons)."""
    if isinstance(t, OnTensor):
        e = entry_of(t.t)
        args = e.on_tensor(t.t, t.antialias())
        require_op(e.op, *args)
        return getattr(fn, e.op)(x, **args)
    op = recipe_op(t)
    if op is not None:
        return _map_recipe(t, op, x, p)
    e = entry_of(t)
    if e is not None and e.v1 is T.RandomApply:
        items, p = random_apply_items(t), _times(p, float(t.p))
        if len(items) == 1:
            return map_one(items[0], x, p)
        if not (isinstance(p, DataNode) or p >= 1 or p <= 0):  # else already shared, always, or never
            require_op("coin_flip")
            p = fn.coin_flip(probability=float(p))  # one draw for all of them
        for item in items:
            x = map_one(item, x, p)
        return x
    if e is None or e.op is None:
        raise Unsupported(f"transform {type(t).__name__} has no native mapping")
    return _apply(e, t, x, p)


def _check(t: Any) -> None:
    """Raises Unsupported now, rather than at iteration, when `t`'s operator or one of its
    arguments is missing or one of its values has no native mapping."""
    op = recipe_op(t)
    if op is not None:
        require_op(op[0], *op[1])
        return
    e = entry_of(t.t if isinstance(t, OnTensor) else t)
    if e is not None and e.op is not None and not isinstance(t, OnTensor):
        require_op(e.op, *e.args(t))


def fused_decoder(pil: List[Any]) -> Tuple[Dict[str, Any], int]:
    """image_decoder arguments taking over the leading transforms (their entries' ``fuse``, in
    ``fuse_order``), and how many it took."""
    args: Dict[str, Any] = {"output_type": "rgb"}
    if has_op("image_decoder", "dct_scaling"):
        args["dct_scaling"] = False  # exact: same pixels as decode + crop + resize
    if not has_op("image_decoder", "random_crop", "scale", "ratio", "resize", "max_size", "interpolation",
                  "antialias", "center_crop"):
        return args, 0
    i, order = 0, -1
    while i < len(pil):
        t = pil[i].t if isinstance(pil[i], OnTensor) else pil[i]
        e = entry_of(t)
        if e is None or e.fuse is None or e.fuse_order <= order:
            break
        args.update(e.fuse(t, pil[i].antialias() if isinstance(pil[i], OnTensor) else None))
        i, order = i + 1, e.fuse_order
    return args, i


def _floats(v: Any) -> List[float]:
    return [float(v)] if isinstance(v, (int, float)) else [float(m) for m in v]


def view_graph(transform: Any, fuse: bool, jpeg_index_mb: Optional[int], tail: bool = False):
    """(image_decoder arguments, a function wiring the rest onto decoded images) for one
    view. With `fuse`, the leading crop/resize go into the decoder (it then decodes only the
    region it needs); without, the decoder decodes whole images for several views to share.
    With `tail`, transforms that cannot be mapped run in Python (_python_tail.with_tail)."""
    try:
        pil, float_out, normalize, erasing = split(transform)
    except Unsupported as e:
        if not tail:
            raise
        return with_tail(transform, fuse, jpeg_index_mb, e.reasons, view_graph)
    dec_args, taken = fused_decoder(pil if fuse else [])
    if jpeg_index_mb is not None and has_op("image_decoder", "index_cache_mb"):
        dec_args["index_cache_mb"] = int(jpeg_index_mb)
    rest = pil[taken:]
    for t in rest:  # fail now rather than at iteration
        _check(t)
    require_op("crop_mirror_normalize" if float_out else "transpose")
    for t in erasing:
        _check(t)

    # A horizontal flip last before the tensor conversion becomes crop_mirror_normalize's mirror,
    # drawn by a coin_flip of the same probability: one pass over the pixels instead of two.
    mirror_p = None
    if float_out and rest and is_v1(rest[-1], T.RandomHorizontalFlip) and has_op("crop_mirror_normalize", "mirror"):
        mirror_p = float(rest[-1].p)
        rest = rest[:-1]

    def after(x: DataNode) -> DataNode:
        for t in rest:
            x = map_one(t, x)
        if not float_out:
            return fn.transpose(x, output_layout="CHW")
        extra = {} if mirror_p is None else {"mirror": fn.coin_flip(probability=mirror_p)}
        mean = [] if normalize is None else _floats(normalize.mean)
        std = [] if normalize is None else _floats(normalize.std)
        x = fn.crop_mirror_normalize(x, mean=mean, std=std, scale=255.0, dtype="float32", output_layout="CHW", **extra)
        for t in erasing:
            x = map_one(t, x)
        return x

    return dec_args, after


def image_graph(transform: Any, jpeg_index_mb: Optional[int] = None,
                python_tail: bool = False) -> Callable[[DataNode], List[DataNode]]:
    """A function wiring ``transform`` onto encoded bytes, checked now (raises Unsupported
    listing every blocker), returning one node per view (one, or a multi-view wrapper's).
    ``jpeg_index_mb``: the decoder's index_cache_mb (None: its default). ``python_tail``:
    transforms that cannot be mapped run in Python inside the pipeline (PythonTail) after the
    mappable ones before them; the function's ``python_tails`` lists them (empty: none)."""
    require_op("image_decoder")
    views = views_of(transform)
    if views is None:
        dec_args, after = view_graph(transform, True, jpeg_index_mb, python_tail)
        wire = lambda encoded: [after(fn.image_decoder(encoded, **dec_args))]  # noqa: E731
        wire.python_tails = [after.python_tail] if hasattr(after, "python_tail") else []
        return wire
    graphs, reasons = [], []
    for v in views:
        try:
            graphs.append(view_graph(v, False, None, python_tail))
        except Unsupported as e:
            reasons += [r for r in e.reasons if r not in reasons]
    if reasons:
        raise Unsupported(reasons)
    dec_args = graphs[0][0]

    def wire(encoded: DataNode) -> List[DataNode]:
        x = fn.image_decoder(encoded, **dec_args)  # decoded once, shared by the views
        return [after(x) for _, after in graphs]

    wire.python_tails = [after.python_tail for _, after in graphs if hasattr(after, "python_tail")]
    return wire
