#!/usr/bin/env python3
"""NVDEC against CPU threads on the same videos, one run (the video issue's GPU target: NVDEC
decode >= 3x the 16-core CPU decode rate on H.264 1080p).

The videos (default: the corpus's 1080p H.264 phone clip) are repeated through symlinks into a
folder tree of COPIES files, and in ROUNDS rounds, back to back:
  - cpu:    hdl-bench video-decode TREE --threads THREADS  (libavcodec on THREADS threads, every
            frame decoded, no pixel conversion);
  - nvdec:  hdl-bench video-decode TREE --threads THREADS --device cuda --decoder hardware
            (each worker thread drives its own NVDEC session; no conversion either);
and the same pair for video-train (16-frame clips 2 apart, RandomResizedCrop 112, flip,
normalise; with --device cuda the normalise is on the gpu stage and NVDEC's frames go through
the YUV -> RGB kernel and the device resize). Prints frames/s of each and the ratios (medians
of the rounds' ratios), CPU seconds per frame, and the JSON with --json.

    python3 samples/benchmark/nvdec_bench.py --build build-device [--video F ...] [--threads 16]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd: list) -> dict:
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-3000:]}")
    out = r.stdout
    return json.loads(out[out.index("{"):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--video", action="append", help="video file(s) to repeat (default: the corpus's 1080p H.264 clip)")
    ap.add_argument("--copies", type=int, default=64)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--decode-batch", type=int, default=16,
                    help="videos per batch in video-decode (one whole video a sample: a batch of 1 keeps only the "
                         "prefetched batches' videos in flight, far fewer than the threads)")
    ap.add_argument("--modes", default="decode cpu,decode nvdec,train cpu,train nvdec",
                    help="comma-separated subset of the four runs (a host without a GPU: 'decode cpu,train cpu')")
    ap.add_argument("--json")
    a = ap.parse_args()
    corpus = os.environ.get("HDL_CORPUS_DIR", os.path.join(ROOT, "build/corpus"))
    videos = a.video or [os.path.join(corpus, "video/original/dog_phone_h264_1920x1080.mp4")]
    for v in videos:
        if not os.path.isfile(v):
            raise SystemExit(f"{v} not found (run tests/corpus/make_corpus.sh build/corpus, or give --video)")
    bench = os.path.join(a.build if os.path.isabs(a.build) else os.path.join(ROOT, a.build), "bin/hdl-bench")
    results = {"videos": videos, "copies": a.copies, "threads": a.threads, "rounds": []}
    with tempfile.TemporaryDirectory() as tree:
        for i in range(a.copies):
            d = os.path.join(tree, f"c{i % 4}")
            os.makedirs(d, exist_ok=True)
            src = videos[i % len(videos)]
            os.symlink(os.path.abspath(src), os.path.join(d, f"{i:04d}{os.path.splitext(src)[1]}"))
        common = ["--threads", str(a.threads), "--json", "--no-progress", "--warmup", "0"]
        modes = {
            "decode cpu": ["video-decode", tree, "--batch-size", str(a.decode_batch), "--epochs", "1"],
            "decode nvdec": ["video-decode", tree, "--batch-size", str(a.decode_batch), "--epochs", "1", "--device", "cuda",
                             "--decoder", "hardware"],
            "train cpu": ["video-train", tree, "--batch-size", "8", "--epochs", "2"],
            "train nvdec": ["video-train", tree, "--batch-size", "8", "--epochs", "2", "--device", "cuda",
                            "--decoder", "hardware"],
        }
        modes = {k: v for k, v in modes.items() if k in a.modes.split(",")}
        for r in range(a.rounds):
            row = {}
            for name, args in modes.items():
                j = run([bench, *args, *common])
                row[name] = {"frames_per_s": j["frames_per_s"], "clips_per_s": j["clips_per_s"],
                             "cpu_seconds": j["cpu"]["user_seconds"] + j["cpu"]["system_seconds"],
                             "measured_frames": j["measured_frames"], "counters": j["operators"][0].get("counters", {})}
                print(f"round {r}: {name:13s} {row[name]['frames_per_s']:9.1f} frames/s", file=sys.stderr, flush=True)
            results["rounds"].append(row)
    def ratio(a_, b_):
        return statistics.median(row[a_]["frames_per_s"] / max(row[b_]["frames_per_s"], 1e-9) for row in results["rounds"])
    results["ratios"] = {f"{k} nvdec / cpu": ratio(f"{k} nvdec", f"{k} cpu") for k in ("decode", "train")
                         if f"{k} nvdec" in modes and f"{k} cpu" in modes}
    for name in modes:
        fps = statistics.median(row[name]["frames_per_s"] for row in results["rounds"])
        cpu_ms = statistics.median(1e3 * row[name]["cpu_seconds"] / max(row[name]["measured_frames"], 1)
                                   for row in results["rounds"])
        print(f"{name:13s} frames/s (median) {fps:9.1f}  CPU ms/frame {cpu_ms:6.2f}  counters "
              f"{results['rounds'][-1][name]['counters']}")
    for k, v in results["ratios"].items():
        verdict = "" if "train" in k else ("  target >= 3.0: " + ("met" if v >= 3.0 else "MISSED"))
        print(f"{k}: {v:.2f}x{verdict}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
