#!/usr/bin/env python3
"""PyTorch's own DataLoader test suite, run against torch's DataLoader and HabanaDataLoader.

Runs the vendored upstream file for the running torch (unmodified; upstream_select.py picks it
by torch's major version: upstream_test_dataloader_1_13.py for torch 1,
upstream_test_dataloader_2.py for torch 2) with unittest twice, each in its own subprocess (a
crash or hang loses one test, not the run: the child is restarted on the tests left, while the
run's time lasts):

  torch: as is (torch.utils.data.DataLoader);
  hdl:   through hdl_patched_suite.py, where the suite's ``DataLoader`` and its
         ``torch.utils.data.DataLoader`` are HabanaDataLoader (torch itself is not patched).

A REGRESSION is a test that passes with torch and does not with HabanaDataLoader; what torch's
own run skips or fails on this machine is never one. Exit status: 0, or 1 when a regression is
not listed in the known-regressions file of that upstream file (known_regressions.txt for 1.13,
known_regressions_2.txt for 2; one test id, ``Class.test_name``, per line; ``#`` starts a
comment), or 2 when a run could not be made at all (or there is no vendored file for this
torch). Entries listed but now passing are printed as STALE (not an error: remove them).

  /usr/bin/python3 tests/python/torch_suite/run_suite.py [-k PATTERN]... [--exclude PATTERN]...
                   [--timeout S] [--only-hdl] [--json FILE] [-v]

-k works as unittest's (a substring of ``Class.test_name``, or an fnmatch pattern with ``*``);
--exclude leaves out what it matches, the same way.
--only-hdl skips the torch run and compares against torch's results cached by an earlier run
on this machine (.cache/torch_suite/ in the repository, keyed by torch's version and the
upstream file's hash); tests that have no cached result get a torch run first, as without it.
PYTHONPATH must reach habana_dataloader (build/python); it is found there when unset.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from typing import Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import upstream_select  # noqa: E402  (beside this script)

MODES = ("torch", "hdl")
LABELS = {"torch": "torch.utils.data.DataLoader", "hdl": "habana_dataloader.HabanaDataLoader"}
STATUSES = ("pass", "fail", "error", "skip", "xfail", "upass", "crash", "notrun")


# ---- the child: one unittest run, results as JSON lines ---------------------------------------

def _first_line(err) -> str:
    etype, value, _ = err
    lines = [l for l in traceback.format_exception_only(etype, value) if l.strip()]
    text = "".join(lines).strip()
    return text.splitlines()[0] if text else etype.__name__


def _matches(tid: str, patterns: List[str]) -> bool:
    return any(fnmatch.fnmatchcase(tid, p if "*" in p else f"*{p}*") for p in patterns)


def child(mode: str, out_path: str, patterns: List[str], excludes: List[str],
          skip_file: Optional[str]) -> int:
    import unittest

    sys.argv = [sys.argv[0]]  # torch's common_utils parses sys.argv when imported
    sys.path.insert(0, HERE)
    out = open(out_path, "a", buffering=1)

    def emit(**rec):
        out.write(json.dumps(rec) + "\n")
        out.flush()

    # the upstream file the parent chose (upstream_select.ENV, exported by main())
    module_name = (upstream_select.module_name(upstream_select.upstream_file()) if mode == "torch"
                   else "hdl_patched_suite")
    skip = set()
    if skip_file:
        with open(skip_file) as f:
            skip = {l.strip() for l in f if l.strip()}
    try:
        module = __import__(module_name)
        loader = unittest.TestLoader()
        if patterns:
            loader.testNamePatterns = [p if "*" in p else f"*{p}*" for p in patterns]
        suite = loader.loadTestsFromModule(module)
    except BaseException:
        emit(event="import_error", msg=traceback.format_exc())
        return 3

    def short(test) -> str:
        tid = test.id()
        return tid[len(module_name) + 1:] if tid.startswith(module_name + ".") else tid

    def flat(s):
        for t in s:
            if isinstance(t, unittest.TestSuite):
                yield from flat(t)
            else:
                yield t

    tests = [t for t in flat(suite) if short(t) not in skip and not _matches(short(t), excludes)]
    emit(event="tests", ids=[short(t) for t in tests])

    class Result(unittest.TestResult):
        def startTest(self, test):
            super().startTest(test)
            self._t0, self._status, self._msg = time.monotonic(), None, ""
            emit(event="start", id=short(test))

        def _set(self, status, msg=""):
            if self._status in (None, "pass") or (self._status == "skip" and status != "skip"):
                self._status, self._msg = status, msg

        def addSuccess(self, test):
            super().addSuccess(test)
            self._set("pass")

        def addFailure(self, test, err):
            super().addFailure(test, err)
            self._set("fail", _first_line(err))

        def addError(self, test, err):
            super().addError(test, err)
            # setUpClass / tearDownClass errors arrive with a _ErrorHolder, not the test
            if isinstance(test, unittest.TestCase):
                self._set("error", _first_line(err))
            else:
                emit(event="class_error", id=str(test), msg=_first_line(err))

        def addSkip(self, test, reason):
            super().addSkip(test, reason)
            if isinstance(test, unittest.TestCase):
                self._set("skip", str(reason).splitlines()[0] if reason else "")
            else:  # a skipped class: its tests are never started
                emit(event="class_skip", id=str(test), msg=str(reason))

        def addExpectedFailure(self, test, err):
            super().addExpectedFailure(test, err)
            self._set("xfail", _first_line(err))

        def addUnexpectedSuccess(self, test):
            super().addUnexpectedSuccess(test)
            self._set("upass")

        def addSubTest(self, test, subtest, err):
            super().addSubTest(test, subtest, err)
            if err is not None:
                failed = issubclass(err[0], test.failureException)
                self._set("fail" if failed else "error", f"{subtest._subDescription()}: {_first_line(err)}")

        def stopTest(self, test):
            super().stopTest(test)
            emit(event="result", id=short(test), status=self._status or "pass", msg=self._msg,
                 seconds=round(time.monotonic() - self._t0, 3))

    result = Result()
    run_suite = unittest.TestSuite(tests)
    run_suite.run(result)
    # Tests of a class whose setUpClass raised or that was skipped whole are never started.
    emit(event="done")
    out.close()
    return 0


# ---- the parent: runs, comparison, report -----------------------------------------------------

def _env() -> Dict[str, str]:
    env = dict(os.environ)
    # absolute: the test processes run in this directory, not the caller's
    paths = [HERE] + [os.path.abspath(p) for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if not any(os.path.isdir(os.path.join(p, "habana_dataloader")) for p in paths):
        paths.append(os.path.join(ROOT, "build", "python"))
    if importlib.util.find_spec("expecttest") is None:
        # torch.testing._internal imports it; a stand-in when it is not installed (pip: expecttest)
        paths.append(os.path.join(HERE, "_stubs"))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTORCH_DISABLE_RUNNING_SCRIPT_CHK"] = "1"  # tests are loaded by this script, not run as __main__
    # CI=... changes torch's test setup (XML reports, psutil required); both runs as a developer's
    env.pop("CI", None)
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def run_mode(mode: str, patterns: List[str], excludes: List[str], timeout: float, verbose: bool) -> dict:
    """{'results': {id: {status, msg, seconds}}, 'seconds': wall, 'notes': [...]}"""
    t0 = time.monotonic()
    results: Dict[str, dict] = {}
    listed: Optional[List[str]] = None
    notes: List[str] = []
    tmp = tempfile.mkdtemp(prefix=f"hdl_torch_suite_{mode}_")
    attempt = 0
    while True:
        attempt += 1
        out_path = os.path.join(tmp, f"out{attempt}.jsonl")
        skip_path = os.path.join(tmp, f"skip{attempt}.txt")
        with open(skip_path, "w") as f:
            f.write("\n".join(results) + "\n")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--out", out_path,
               "--skip-file", skip_path]
        for p in patterns:
            cmd += ["-k", p]
        for p in excludes:
            cmd += ["--exclude", p]
        left = timeout - (time.monotonic() - t0)
        log_path = os.path.join(tmp, f"log{attempt}.txt")
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=HERE, env=_env(), stdin=subprocess.DEVNULL,
                                    stdout=None if verbose else log, stderr=subprocess.STDOUT if not verbose else None,
                                    start_new_session=True)
            timed_out = False
            try:
                rc = proc.wait(timeout=max(1.0, left))
            except subprocess.TimeoutExpired:
                timed_out = True
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                rc = proc.wait()
        # Worker processes the suite started in the child's session go with it.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        running, done = None, False
        if os.path.exists(out_path):
            with open(out_path) as f:
                for line in f:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue  # a line cut by the kill
                    ev = rec.get("event")
                    if ev == "tests" and listed is None:
                        listed = rec["ids"]
                    elif ev == "start":
                        running = rec["id"]
                    elif ev == "result":
                        results[rec["id"]] = {k: rec[k] for k in ("status", "msg", "seconds")}
                        running = None
                    elif ev == "import_error":
                        notes.append(f"{mode}: the suite could not be imported:\n{rec['msg']}")
                    elif ev == "done":
                        done = True
        if done:
            break
        if listed is None:
            with open(log_path, "rb") as f:
                tail = f.read()[-3000:].decode(errors="replace")
            notes.append(f"{mode}: the run died before listing its tests (rc {rc}):\n{tail}")
            break
        why = f"run timeout ({timeout:.0f} s)" if timed_out else f"the test process died (rc {rc})"
        if running is not None:
            results[running] = {"status": "crash", "msg": why, "seconds": None}
            notes.append(f"{mode}: {running}: {why}")
        if timed_out or time.monotonic() - t0 >= timeout or running is None:
            if not timed_out and running is None:
                notes.append(f"{mode}: the test process exited (rc {rc}) between tests")
            break
    why = ("never started (its class's setUpClass failed or skipped)" if done
           else "not reached before the run ended")
    for tid in listed or []:
        results.setdefault(tid, {"status": "notrun", "msg": why, "seconds": None})
    if notes:
        notes.append(f"{mode}: the test processes' output is kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return {"results": results, "seconds": time.monotonic() - t0, "notes": notes, "ok": listed is not None}


def _cache_path() -> str:
    import torch  # the parent imports torch only for its version
    with open(upstream_select.upstream_file(), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    return os.path.join(ROOT, ".cache", "torch_suite", f"torch-{torch.__version__}-{digest}.json")


def _load_cache() -> Dict[str, dict]:
    try:
        with open(_cache_path()) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _save_cache(results: Dict[str, dict]) -> None:
    path = _cache_path()
    merged = _load_cache()
    merged.update({k: v for k, v in results.items() if v["status"] not in ("crash", "notrun")})
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(merged, f, indent=0, sort_keys=True)
    os.replace(tmp, path)


def read_known(path: str) -> Dict[str, str]:
    known: Dict[str, str] = {}
    if not os.path.exists(path):
        return known
    with open(path) as f:
        for line in f:
            tid, _, reason = line.partition("#")
            tid = tid.strip()
            if tid:
                known[tid] = reason.strip()
    return known


def counts(results: Dict[str, dict]) -> str:
    c = {s: 0 for s in STATUSES}
    for r in results.values():
        c[r["status"]] += 1
    return ", ".join(f"{c[s]} {s}" for s in STATUSES if c[s] or s in ("pass", "fail", "error", "skip"))


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", dest="patterns", action="append", default=[],
                    help="only tests whose Class.test_name matches (substring or fnmatch *); repeatable")
    ap.add_argument("--exclude", action="append", default=[],
                    help="leave out tests matching this (as -k); repeatable")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds for each run (default 1200)")
    ap.add_argument("--only-hdl", action="store_true",
                    help="skip the torch run; compare with torch's results cached by an earlier run")
    ap.add_argument("--known", help="known regressions file (default: the one upstream_select.py pairs "
                    "with the upstream file, beside this script)")
    ap.add_argument("--json", help="write both runs' results to this file")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the test processes' output")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--skip-file", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        return child(a.child, a.out, a.patterns, a.exclude, a.skip_file)

    tv = upstream_select.torch_version()
    upstream = upstream_select.upstream_file(tv)
    if upstream is None or not os.path.exists(upstream):
        print(f"run_suite: ERROR: no vendored test_dataloader.py for torch {tv} "
              f"({upstream or 'none mapped in upstream_select.UPSTREAMS'})")
        return 2
    # The test processes (and the suite's spawned helpers) import the same file.
    os.environ[upstream_select.ENV] = os.path.basename(upstream)
    if a.known is None:
        a.known = upstream_select.known_file(tv)
    print(f"run_suite: torch {tv}: {os.path.relpath(upstream)} "
          f"(known regressions: {os.path.relpath(a.known)})")

    if importlib.util.find_spec("expecttest") is None:
        print("run_suite: expecttest is not installed: using _stubs/expecttest.py (no assertExpected* "
              "in this suite)")
    runs: Dict[str, dict] = {}
    torch_results: Optional[Dict[str, dict]] = None
    if a.only_hdl:
        cached = _load_cache()
        runs["hdl"] = run_mode("hdl", a.patterns, a.exclude, a.timeout, a.verbose)
        missing = [t for t in runs["hdl"]["results"] if t not in cached]
        if missing:
            print(f"run_suite: {len(missing)} tests have no cached torch result ({_cache_path()}): "
                  "running torch's run for them")
            pats = missing if len(missing) <= 50 else a.patterns
            fresh = run_mode("torch", pats, a.exclude, a.timeout, a.verbose)
            if fresh["ok"]:
                _save_cache(fresh["results"])
            cached.update(fresh["results"])
            runs["torch"] = dict(fresh, cached=True)
        else:
            runs["torch"] = {"results": {}, "seconds": 0.0, "notes": [], "ok": True, "cached": True}
        torch_results = {t: cached[t] for t in runs["hdl"]["results"] if t in cached}
        runs["torch"]["results"] = torch_results
    else:
        runs["torch"] = run_mode("torch", a.patterns, a.exclude, a.timeout, a.verbose)
        if runs["torch"]["ok"]:
            _save_cache(runs["torch"]["results"])
        runs["hdl"] = run_mode("hdl", a.patterns, a.exclude, a.timeout, a.verbose)
        torch_results = runs["torch"]["results"]
    hdl_results = runs["hdl"]["results"]

    for mode in ("torch", "hdl"):
        r = runs[mode]
        how = "cached results" if r.get("cached") and not r["seconds"] else f"{r['seconds']:.1f} s"
        print(f"{mode:5} ({LABELS[mode]}): {len(r['results'])} tests ({how}): {counts(r['results'])}")
        for note in r["notes"]:
            print(f"  note: {note}")
    if not runs["torch"]["ok"] or not runs["hdl"]["ok"] or not torch_results:
        print("run_suite: ERROR: a run did not produce results (see the notes above)")
        return 2

    known = read_known(a.known)
    regressions = []
    for tid in sorted(torch_results):
        if torch_results[tid]["status"] != "pass":
            continue  # skipped or failing with torch here: not a regression
        h = hdl_results.get(tid, {"status": "notrun", "msg": "not in the HabanaDataLoader run"})
        if h["status"] != "pass":
            regressions.append((tid, h))
    new = [(t, h) for t, h in regressions if t not in known]
    print(f"\nREGRESSIONS: {len(regressions)} pass with torch but not with HabanaDataLoader "
          f"({len(regressions) - len(new)} known, {len(new)} new)")
    for tid, h in regressions:
        tag = "known" if tid in known else "NEW  "
        print(f"  [{tag}] {tid}: {h['status']}: {h['msg']}")
    regressed = {t for t, _ in regressions}
    stale = [t for t in known if t in hdl_results and t not in regressed]
    if stale:
        print(f"\nSTALE entries in {os.path.relpath(a.known)} (no longer a regression; remove them):")
        for tid in stale:
            h, t = hdl_results[tid], torch_results.get(tid, {"status": "?"})
            print(f"  {tid}: HabanaDataLoader {h['status']}, torch {t['status']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({m: runs[m] for m in runs}, f, indent=1, sort_keys=True)
    if new:
        print(f"\nrun_suite: FAIL: {len(new)} regression(s) not in {os.path.relpath(a.known)}")
        return 1
    print("\nrun_suite: OK: no regression beyond the known ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())
