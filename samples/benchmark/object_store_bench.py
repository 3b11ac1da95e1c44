"""Shards in object stores, side by side in one run (issue 24's targets; not a test).

    /usr/bin/python3 samples/benchmark/object_store_bench.py faults --root DIR [--rounds 3]
    build/venv-torch2/bin/python samples/benchmark/object_store_bench.py moto --root DIR
    /usr/bin/python3 samples/benchmark/object_store_bench.py curl-cpu --root DIR

DIR holds plain WebDataset tar shards "shard-NNN.tar" (.jpg + .cls). The servers are
tests/media/object_store_servers.py's (Debian's nginx, moto's S3 server, the fault proxy), on
127.0.0.1.

faults    hdl-bench resnet-train over nginx behind the fault proxy at 0% and at --fail-rate
          (default 1%) of requests failing, rounds alternating, default RemoteOptions; prints
          images/s, the retries and stalls, samples lost (failures, images short of the
          dataset), and the median ratio (target >= 0.8x).
moto      resnet-train from moto's S3: HabanaDataLoader(habana_dataloader.WebDataset("s3://..."))
          against webdataset.WebDataset("pipe:curl -s <presigned URL>") + torch's DataLoader
          (num_workers = cores), the same torchvision transforms, the same server; prints
          images/s, the ratio (target >= 3x) and moto's own CPU seconds per run.
curl-cpu  CPU seconds per MB fetching the same objects from nginx: whole shards and ranged
          reads of every sample's JPEG, through our client (hdl-fetch-bench) and through the
          curl CLI; prints the ratio (target <= 1).
"""

import argparse
import glob
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))


class Servers:
    """object_store_servers.py, started for one benchmark; ports from its servers.txt."""

    def __init__(self, root, want, fail_rate=0.0, seed=7, stall_s=3.0):
        self.state = tempfile.mkdtemp(prefix="hdl_osb_")
        self.proc = subprocess.Popen(
            [sys.executable if "venv" not in sys.executable else "/usr/bin/python3",
             os.path.join(SRC, "tests/media/object_store_servers.py"), "--root", root, "--state", self.state,
             "--want", want, "--fail-rate", str(fail_rate), "--seed", str(seed), "--stall-s", str(stall_s),
             "--parent", str(os.getpid()), "--lifetime", "3600"])
        path = os.path.join(self.state, "servers.txt")
        for _ in range(1200):
            if os.path.exists(path):
                break
            time.sleep(0.1)
        self.info = dict(line.split("=", 1) for line in open(path).read().split() if "=" in line)
        for name in want.split(","):
            if name not in self.info:
                raise SystemExit(f"{name}: {self.info.get('skip_' + name, 'did not start')}")

    def url(self, name):
        return f"http://127.0.0.1:{self.info[name]}"

    def faults(self, name):
        p = os.path.join(self.state, f"faults_{name}.log")
        return open(p).read().split("\n")[:-1] if os.path.exists(p) else []

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)


def shards(root):
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(root, "shard-*.tar")))
    if not names:
        raise SystemExit(f"no shard-NNN.tar in {root}")
    return names


def spec(names):
    return "shard-{%s..%s}.tar" % (names[0][6:9], names[-1][6:9])


def hdl_bench(build, data, args, env=None):
    out = subprocess.run([os.path.join(build, "bin/hdl-bench"), "resnet-train", data, "--json", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, check=True).stdout
    return json.loads(out)


def counters(report):
    c = {}
    for op in report["operators"]:
        c.update(op["counters"])
    return c


def run_faults(a):
    names = shards(a.root)
    clean = Servers(a.root, "nginx", 0.0, a.seed, a.stall_s)
    faulty = Servers(a.root, "nginx", a.fail_rate, a.seed, a.stall_s)
    args = ["--threads", str(a.threads), "--batch-size", "64", "--epochs", str(a.epochs)]
    rows, ratios = [], []
    try:
        for r in range(a.rounds):
            got = {}
            for label, srv in (("0%", clean), (f"{a.fail_rate:.0%}", faulty)):
                before = len(srv.faults("nginx"))
                rep = hdl_bench(a.build, srv.url("proxy_nginx") + "/" + spec(names), args)
                c = counters(rep)
                lost = rep["failures"] + rep["dataset_images"] * a.epochs - rep["images"]
                got[label] = rep["images_per_s"]
                faults = srv.faults("nginx")[before:]
                kinds = {k: sum(1 for f in faults if f.startswith(k + " ")) for k in ("500", "503", "cut", "drop", "stall")}
                rows.append((r, label, rep["images_per_s"], c.get("remote_requests", 0), c.get("remote_retries", 0),
                             c.get("remote_stalls", 0), len(faults), kinds, lost))
                print(f"round {r} {label:>3}: {rep['images_per_s']:7.1f} images/s, {c.get('remote_requests', 0)} requests, "
                      f"{c.get('remote_retries', 0)} retries, {c.get('remote_stalls', 0)} stalls cut short, "
                      f"{len(faults)} faults {kinds}, samples lost {lost}", flush=True)
            ratios.append(got[f"{a.fail_rate:.0%}"] / got["0%"])
    finally:
        clean.stop()
        faulty.stop()
    print(f"ratio {a.fail_rate:.0%} faults / 0% (median of {len(ratios)} rounds): {statistics.median(ratios):.2f}x "
          f"(each: {', '.join(f'{x:.2f}' for x in ratios)}; target >= 0.8x)")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    f = sub.add_parser("faults")
    f.add_argument("--fail-rate", type=float, default=0.01)
    f.add_argument("--stall-s", type=float, default=3.0)
    f.add_argument("--seed", type=int, default=7)
    f.add_argument("--rounds", type=int, default=3)
    f.add_argument("--epochs", type=int, default=1)
    f.add_argument("--threads", type=int, default=os.cpu_count())
    for s in sub.choices.values():
        s.add_argument("--root", required=True)
        s.add_argument("--build", default=os.path.join(SRC, "build"))
    a = p.parse_args()
    {"faults": run_faults}[a.what](a)


if __name__ == "__main__":
    main()
