"""Which vendored test_dataloader.py goes with the running torch: one place for run_suite.py,
hdl_patched_suite.py and tests/python/test_torch_suite.py.

By torch's major version (UPSTREAMS). run_suite.py resolves it once and exports the file name
in HDL_TORCH_SUITE_UPSTREAM to its test processes (and so to the suite's spawned helpers), so
the torch run, the HabanaDataLoader run and the cache all use the same file; that variable,
set by hand, also overrides the choice (a file name in this directory).
"""

import os
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = "HDL_TORCH_SUITE_UPSTREAM"

# torch major version -> (vendored upstream file, its known-regressions file), both in HERE.
UPSTREAMS = {
    1: ("upstream_test_dataloader_1_13.py", "known_regressions.txt"),
    2: ("upstream_test_dataloader_2.py", "known_regressions_2.txt"),
}


def torch_version() -> str:
    import torch
    return torch.__version__


def _entry(version: Optional[str] = None):
    name = os.environ.get(ENV)
    if name:
        for entry in UPSTREAMS.values():
            if entry[0] == name:
                return entry
        return (name, "known_regressions.txt")
    version = torch_version() if version is None else version
    try:
        major = int(version.split(".")[0])
    except ValueError:
        return None
    return UPSTREAMS.get(major)


def upstream_file(version: Optional[str] = None) -> Optional[str]:
    """Absolute path of the upstream file for this torch (or ``version``); None if there is none."""
    entry = _entry(version)
    return os.path.join(HERE, entry[0]) if entry else None


def known_file(version: Optional[str] = None) -> Optional[str]:
    """Absolute path of the known-regressions file that goes with it."""
    entry = _entry(version)
    return os.path.join(HERE, entry[1]) if entry else None


def module_name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]
