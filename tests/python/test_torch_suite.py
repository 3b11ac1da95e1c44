"""PyTorch 1.13's own DataLoader test suite against HabanaDataLoader (tests/python/torch_suite).

Runs torch_suite/run_suite.py in a subprocess: the vendored suite once with torch's DataLoader
and once with HabanaDataLoader, failing on a regression (passes with torch, not with
HabanaDataLoader) that torch_suite/known_regressions.txt does not list.

The whole suite is two runs of about 10 minutes each on a loaded 2-core machine (5 to 7 without
load), so by default this runs the CI subset: everything except the duplicate
persistent-workers class and three tests that spend minutes in spawn/forkserver worker start-up
(98 of 168 tests, about 2 minutes a run on a loaded machine). HDL_TORCH_SUITE=full runs all of
it; HDL_TORCH_SUITE=0 skips it.
"""

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("torch")

RUNNER = pathlib.Path(__file__).resolve().parent / "torch_suite" / "run_suite.py"

# Left out of the CI subset (run_suite.py --exclude patterns; see the module docstring).
CI_EXCLUDES = [
    "TestDataLoaderPersistentWorkers.*",  # TestDataLoader again with persistent_workers=True
    "IntegrationTestDataLoaderDataPipe.test_shuffler_iterdatapipe",  # ~80-170 s: 2 contexts x workers
    "test_multiprocessing_contexts",  # ~30-60 s: spawn and forkserver workers
    "test_multiprocessing_iterdatapipe",  # ~20-35 s: same
]


def test_torch_dataloader_suite():
    mode = os.environ.get("HDL_TORCH_SUITE", "ci")
    if mode == "0":
        pytest.skip("HDL_TORCH_SUITE=0")
    cmd = [sys.executable, str(RUNNER)]
    if mode == "full":
        cmd += ["--timeout", "2400"]
    else:
        cmd += ["--timeout", "1200"]
        for pattern in CI_EXCLUDES:
            cmd += ["--exclude", pattern]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          stdin=subprocess.DEVNULL, timeout=5400)
    print(proc.stdout[-20000:])
    assert proc.returncode == 0, (
        f"run_suite.py exited {proc.returncode} (1: a regression not in "
        f"tests/python/torch_suite/known_regressions.txt; 2: a run failed):\n{proc.stdout[-8000:]}")
