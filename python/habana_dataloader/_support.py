"""What this build supports, and the words for what it does not.

``Unsupported`` is the one exception every recognition and mapping step raises when a dataset,
transform or collate_fn cannot run natively; HabanaDataLoader turns it into its
``fallback_reason``. ``Unmapped`` and ``NativeOp`` are what the timm and v2 translators
(_timm.py, _v2.py) put in a chain in place of a transform: a reason it has none, or the
operator of its own that runs it. ``has_op`` / ``require_op`` look an operator and its
arguments up in the schemas of the build in use, so a build without one falls back with the
reason instead of failing at iteration.
"""

from __future__ import annotations

from typing import Any, Dict, List

from . import fn


class Unsupported(Exception):
    """The dataset or transform cannot run natively: ``reasons`` lists why, str() joins them."""

    def __init__(self, reasons: Any):
        self.reasons: List[str] = [reasons] if isinstance(reasons, str) else list(reasons)
        super().__init__("; ".join(self.reasons))


class Unmapped:
    """Stands for a transform with no native mapping (a timm or v2 one); `reason` says why."""

    def __init__(self, transform: Any, reason: str):
        self.transform, self.reason = transform, reason


class NativeOp:
    """Stands for a PIL-stage transform (keeping the image's shape) that an operator of its own
    implements: `op` with `args` (what _recipes.recipe_op returns for it)."""

    def __init__(self, transform: Any, op: str, args: Dict[str, Any]):
        self.transform, self.op, self.args = transform, op, args


def has_op(op: str, *args: str) -> bool:
    """Whether this build has operator `op` with every argument named."""
    s = fn.schemas.get(op)
    return s is not None and all(any(a["name"] == x for a in s["args"]) for x in args)


def require_op(op: str, *args: str) -> None:
    """Raises Unsupported unless this build has operator `op` with every argument named."""
    if not has_op(op, *args):
        what = f"operator {op!r}" + (f" with argument(s) {', '.join(args)}" if args else "")
        raise Unsupported(f"this build has no {what}")


def arg_default(op: str, arg: str) -> Any:
    """The schema's default for `op`'s argument `arg` (None when it has none or no such argument)."""
    s = fn.schemas.get(op) or {"args": []}
    return next((a.get("default") for a in s["args"] if a["name"] == arg), None)
