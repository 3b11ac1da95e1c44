#!/usr/bin/env python3
"""The local cache of remote shards (media/cache_file_system.h) against local disk and plain
HTTP: hdl-bench resnet-train over the same tar shards from local disk, from nginx on 127.0.0.1
(tests/media/object_store_servers.py), and from nginx through a cold and then a warm cache,
in alternating rounds; prints each run and the medians of the per-round ratios to local disk
(images/s and CPU seconds per epoch, which a loaded machine changes less).

    PYTHONPATH=build/python python3 samples/benchmark/cache_bench.py \\
        --images build/corpus/imagenet/train --hdl-bench build/bin/hdl-bench [--rounds 3]

Figures: docs/PERFORMANCE.md, "Shards over HTTP through the local cache".
"""
import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", required=True, help="an ImageFolder root to write shards from")
    ap.add_argument("--hdl-bench", default=str(ROOT / "build/bin/hdl-bench"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shards", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    from habana_dataloader import write_shards

    work = pathlib.Path(tempfile.mkdtemp(prefix="hdl_cache_bench_"))
    try:
        n = sum(1 for _ in pathlib.Path(a.images).rglob("*.*"))
        paths = write_shards(a.images, str(work / "root" / "shard-%03d.tar"), maxcount=-(-n // a.shards))
        (work / "local").mkdir()
        for p in paths:  # a separate copy, so that the local runs' .idx sidecars are not served
            shutil.copy(p, work / "local")
        last = "%03d" % (len(paths) - 1)
        servers = subprocess.Popen([sys.executable, str(ROOT / "tests/media/object_store_servers.py"), "--root",
                                    str(work / "root"), "--state", str(work / "state"), "--want", "nginx",
                                    "--parent", str(os.getpid()), "--lifetime", "7200"])
        state = work / "state" / "servers.txt"
        for _ in range(300):
            if state.exists():
                break
            time.sleep(0.1)
        info = dict(l.split("=", 1) for l in state.read_text().split() if "=" in l) if state.exists() else {}
        if "nginx" not in info:
            sys.exit("no nginx: " + info.get("skip_nginx", "object_store_servers.py did not start"))
        url = "http://127.0.0.1:%s/shard-{000..%s}.tar" % (info["nginx"], last)
        local = str(work / "local") + "/shard-{000..%s}.tar" % last
        cache = ["--cache-dir", str(work / "cache"), "--cache-limit", "64G"]
        runs = {"local": [local], "nginx": [url], "cold": [url] + cache, "warm": [url] + cache}
        got = {k: [] for k in runs}
        env = dict(os.environ, HDL_HTTP_TIMEOUT_MS="1000")
        for r in range(a.rounds):
            shutil.rmtree(work / "cache", ignore_errors=True)
            for name, args in runs.items():
                out = subprocess.run([a.hdl_bench, "resnet-train", *args, "--threads", str(a.threads), "--batch-size",
                                      "64", "--no-progress", "--json"], env=env, check=True, capture_output=True,
                                     text=True).stdout
                d = json.loads(out)
                c = {k: v for op in d["operators"] for k, v in op["counters"].items()}
                cpu = d["cpu"]["user_seconds"] + d["cpu"]["system_seconds"]
                got[name].append((d["images_per_s"], cpu))
                print(f"round {r} {name:5s} {d['images_per_s']:7.1f} images/s  cpu {cpu:5.2f} s  "
                      f"requests {c.get('remote_requests', 0)}  remote MB {c.get('remote_bytes', 0) / 1e6:.0f}  "
                      f"hits {c.get('cache_hits', '-')}  misses {c.get('cache_misses', '-')}  "
                      f"written MB {c.get('cache_bytes_written', 0) / 1e6:.0f}  load {os.getloadavg()[0]:.1f}",
                      flush=True)
        for name in runs:
            ips = statistics.median(g[0] / l[0] for g, l in zip(got[name], got["local"]))
            cpu = statistics.median(g[1] / l[1] for g, l in zip(got[name], got["local"]))
            print(f"{name:5s}: images/s {ips:.2f}x local, CPU per epoch {cpu:.2f}x local (medians of per-round ratios)")
        servers.terminate()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
