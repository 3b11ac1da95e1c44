#!/usr/bin/python3
"""Video start-up: time to the first batch and videos probed, without and with video_reader's
metadata cache (cold: the file is written; warm: a second run reads it).

    /usr/bin/python3 samples/benchmark/video_startup.py [--build build] [--data DIR]
        [--copies 10] [--threads N] [--rounds 3] [--videoclips] [--markdown] [--json FILE]

The dataset is a class-folder tree of --copies folders, each holding a symlink to every video
of DATA (default build/corpus/video: 22 videos), so --copies 10 is 220 videos whose bytes
sit in the page cache after the first read (the figures are the CPU cost of reading
metadata, not of a cold disk: there a probe reads the whole file and a cache check 128 KiB).
Each measurement is one fresh `hdl-bench video-train TREE --iterations 1 --warmup 0 --json`
process (16 frames 2 apart, RandomResizedCrop 112, batch 8), for the random and the
contiguous samplers:
  - none:  no metadata cache (contiguous: every video probed while the pipeline is built;
           random: each video probed on its first clip, so the first batch probes about 8);
  - cold:  --metadata-cache FILE with FILE removed first: every video probed while the
           pipeline is built, and FILE written;
  - warm:  the same command again: FILE read, every video checked (size, mtime, hash of its
           first and last 64 KiB), none probed.
Rounds interleave the configurations; the table gives medians and the counters of the last
round (video_probes, video_metadata_cache_hits). --videoclips also times torchvision's
VideoClips indexing pass (PyAV; num_workers = threads) over the same files, once.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXTS = (".mp4", ".avi", ".mkv", ".webm", ".mov", ".m4v", ".mpg", ".mpeg", ".ogv", ".flv", ".wmv", ".3gp", ".ts")


def videos(data: str):
    out = []
    for d, _, names in sorted(os.walk(data)):
        out += [os.path.join(d, n) for n in sorted(names) if n.lower().endswith(EXTS)]
    return out


def make_tree(files, copies: int, root: str) -> int:
    for c in range(copies):
        folder = os.path.join(root, f"c{c:03d}")
        os.makedirs(folder)
        for i, f in enumerate(files):
            os.symlink(os.path.abspath(f), os.path.join(folder, f"{i:03d}_{os.path.basename(f)}"))
    return copies * len(files)


def bench(hdl_bench: str, tree: str, threads: int, sampler: str, cache) -> dict:
    cmd = [hdl_bench, "video-train", tree, "--sampler", sampler, "--iterations", "1", "--warmup", "0",
           "--threads", str(threads), "--json", "--no-progress", "--skip-errors"]
    if cache:
        cmd += ["--metadata-cache", cache]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{r.stderr}")
    j = json.loads(r.stdout)
    counters = next(op["counters"] for op in j["operators"] if op["op"] == "video_reader")
    return {"first_batch_s": j["time_to_first_batch_s"], "build_s": j["build_seconds"], "process_s": wall,
            "probes": counters.get("video_probes", 0), "hits": counters.get("video_metadata_cache_hits", 0),
            "command": " ".join(cmd)}


def videoclips_index(paths, threads: int):
    """(seconds, videos indexed): VideoClips' indexing pass over the videos it can index
    (its indexer raises TypeError on a stream without an average frame rate, e.g. Theora in
    Ogg: those are left out, found by reading their headers with PyAV)."""
    import warnings

    import av
    from torchvision.datasets.video_utils import VideoClips

    def indexable(p: str) -> bool:
        with av.open(p) as c:
            return bool(c.streams.video) and c.streams.video[0].average_rate is not None

    paths = [p for p in paths if indexable(p)]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        VideoClips(paths, clip_length_in_frames=31, frames_between_clips=1, num_workers=threads)
    return time.perf_counter() - t0, len(paths)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--data", default=os.path.join(ROOT, "build", "corpus", "video"))
    ap.add_argument("--copies", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--videoclips", action="store_true")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--json")
    a = ap.parse_args()
    hdl_bench = os.path.join(a.build, "bin", "hdl-bench")
    files = videos(a.data)
    if not files:
        sys.exit(f"no videos under {a.data}")
    results = {}
    with tempfile.TemporaryDirectory(prefix="hdl_video_startup_") as tmp:
        tree = os.path.join(tmp, "tree")
        n = make_tree(files, a.copies, tree)
        cache = os.path.join(tmp, "meta.bin")
        subprocess.run([hdl_bench, "video-decode", tree, "--iterations", "1", "--threads", str(a.threads),
                        "--no-progress", "--json"], capture_output=True)  # page cache, dynamic loader: warm
        for _ in range(a.rounds):
            for sampler in ("random", "contiguous"):
                runs = [("none", None)]
                if os.path.exists(cache):
                    os.remove(cache)
                runs += [("cold", cache), ("warm", cache)]
                for name, c in runs:
                    results.setdefault((sampler, name), []).append(bench(hdl_bench, tree, a.threads, sampler, c))
        cache_bytes = os.path.getsize(cache)
        vc = videoclips_index([os.path.join(tree, d, f) for d in sorted(os.listdir(tree))
                               for f in sorted(os.listdir(os.path.join(tree, d)))], a.threads) if a.videoclips else None
    rows = []
    for (sampler, name), rs in results.items():
        rows.append({"sampler": sampler, "cache": name,
                     "first_batch_s": statistics.median(r["first_batch_s"] for r in rs),
                     "build_s": statistics.median(r["build_s"] for r in rs),
                     "process_s": statistics.median(r["process_s"] for r in rs),
                     "probes": rs[-1]["probes"], "hits": rs[-1]["hits"], "command": rs[-1]["command"],
                     "first_batch_runs_s": [r["first_batch_s"] for r in rs]})
    header = (f"{n} videos ({len(files)} files x {a.copies} copies), {a.threads} threads, {a.rounds} rounds; "
              f"cache file {cache_bytes} bytes")
    if a.markdown:
        print(header + "\n")
        print("| sampler | metadata cache | time to first batch (s) | of which building (s) | process (s) | probes | cache hits | first batch, each round (s) |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            each = ", ".join(f"{x:.2f}" for x in r["first_batch_runs_s"])
            print(f"| {r['sampler']} | {r['cache']} | {r['first_batch_s']:.3f} | {r['build_s']:.3f} | "
                  f"{r['process_s']:.3f} | {r['probes']} | {r['hits']} | {each} |")
        if vc is not None:
            print(f"\ntorchvision VideoClips indexing pass (PyAV, num_workers={a.threads}) over the {vc[1]} videos "
                  f"it can index: {vc[0]:.2f} s")
    else:
        print(header)
        for r in rows:
            print(f"{r['sampler']:>10} {r['cache']:>5}: first batch {r['first_batch_s']:.3f} s "
                  f"(build {r['build_s']:.3f} s), probes {r['probes']}, hits {r['hits']}")
        if vc is not None:
            print(f"VideoClips indexing ({vc[1]} videos): {vc[0]:.2f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"videos": n, "threads": a.threads, "rows": rows, "videoclips": vc,
                       "cache_bytes": cache_bytes}, f, indent=1)


if __name__ == "__main__":
    main()
