"""PyTorch's test_dataloader.py with DataLoader replaced by HabanaDataLoader.

The upstream file for the running torch (chosen by upstream_select.py: the one run_suite.py
exported in HDL_TORCH_SUITE_UPSTREAM, else by torch's major version; unmodified) is executed in
this module's namespace, then two names are rebound here and nowhere else:

- ``DataLoader`` (the tests' ``from torch.utils.data import DataLoader``) -> HabanaDataLoader;
- ``torch`` -> a view of torch whose ``torch.utils.data.DataLoader`` is HabanaDataLoader (two
  helpers call ``torch.utils.data.DataLoader(...)``); every other attribute is torch's own.

torch itself is not patched, so HabanaDataLoader, which builds torch's DataLoader internally,
still gets the real one. Being a real module (not a patched copy made at run time), this one is
what the suite's spawned helper processes import when they unpickle a test function, so they
run HabanaDataLoader too.

Not covered: the few tests that start a fresh interpreter with ``subprocess`` and a source
string of their own (test_fd_limit_exceeded, test_early_exit): those exercise torch's loader.
"""

import os as _hdl_os
import sys as _hdl_sys

import torch as _hdl_torch
import torch.utils.data as _hdl_torch_data  # noqa: F401  (torch.utils.data loaded for the view)

from habana_dataloader import HabanaDataLoader as _HDL_LOADER

_hdl_sys.path.insert(0, _hdl_os.path.dirname(_hdl_os.path.abspath(__file__)))
import upstream_select as _hdl_upstream_select  # noqa: E402

_HDL_UPSTREAM = _hdl_upstream_select.upstream_file()
if _HDL_UPSTREAM is None:
    raise ImportError(f"no vendored test_dataloader.py for torch {_hdl_torch.__version__} "
                      "(upstream_select.UPSTREAMS)")


class _HdlView:
    """Attribute access as ``real``'s, except the names given."""

    def __init__(self, real, **overrides):
        self.__dict__["_hdl_real"] = real
        self.__dict__.update(overrides)

    def __getattr__(self, name):
        return getattr(self.__dict__["_hdl_real"], name)

    def __setattr__(self, name, value):
        setattr(self.__dict__["_hdl_real"], name, value)

    def __repr__(self):
        return f"<HabanaDataLoader view of {self.__dict__['_hdl_real']!r}>"


with open(_HDL_UPSTREAM, "rb") as _hdl_f:
    exec(compile(_hdl_f.read(), _HDL_UPSTREAM, "exec"), globals())
del _hdl_f

DataLoader = _HDL_LOADER  # noqa: F811
torch = _HdlView(_hdl_torch, utils=_HdlView(  # noqa: F811
    _hdl_torch.utils, data=_HdlView(_hdl_torch.utils.data, DataLoader=_HDL_LOADER)))
