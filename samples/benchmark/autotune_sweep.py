#!/usr/bin/env python3
"""Self-tuning against hand-set settings (issue 25): hdl-bench with every --threads T
--prefetch P in the grid, and with --autotune, side by side, round after round (the order
rotates each round so that no setting always runs first or last on a shared machine).

    samples/benchmark/autotune_sweep.py build/bin/hdl-bench build/corpus/imagenet/train \
        --rounds 3 --iterations 8

Prints each setting's median images/s; the best hand-set setting is the one with the best
median, and the headline is the median over rounds of autotune's rate over that setting's rate
in the same round (target >= 0.95), with what autotune chose. --json writes every run.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys


def run(bench, pipeline, data, extra, iterations, warmup):
    cmd = [bench, pipeline, data, "--json", "--no-progress", "--iterations", str(iterations),
           "--warmup", str(warmup)] + extra
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return {"images_per_s": doc["images_per_s"], "threads": doc["autotune"]["autotune_threads"],
            "prefetch": doc["autotune"]["autotune_prefetch_depth"],
            "first_batch_s": doc["time_to_first_batch_s"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", help="path to hdl-bench")
    ap.add_argument("data", help="ImageFolder root, e.g. build/corpus/imagenet/train")
    ap.add_argument("--pipeline", default="resnet-train")
    ap.add_argument("--threads", default=None,
                    help="hand-set thread counts, comma-separated (default: 1..the CPUs this process may use)")
    ap.add_argument("--prefetch", default="1,2,3,4", help="hand-set prefetch depths (1,2,3,4)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=8, help="batches per run (8)")
    ap.add_argument("--warmup", type=int, default=1, help="first batches left out of the rate (1)")
    ap.add_argument("--pairs", type=int, default=0,
                    help="then N back-to-back pairs of autotune and the best hand-set setting, the order "
                         "alternating: on a busy machine adjacent runs share its load (0: none)")
    ap.add_argument("--json", default=None, help="write every run here")
    a = ap.parse_args()

    cpus = len(os.sched_getaffinity(0))
    threads = [int(t) for t in a.threads.split(",")] if a.threads else list(range(1, cpus + 1))
    depths = [int(p) for p in a.prefetch.split(",")]
    settings = [("auto", ["--autotune"])]
    settings += [(f"t{t}p{p}", ["--threads", str(t), "--prefetch", str(p)]) for t in threads for p in depths]
    runs = {name: [] for name, _ in settings}
    ratios = []
    print(f"{a.pipeline} over {a.data}: {a.iterations} batches a run, {a.rounds} rounds, "
          f"{len(settings)} settings, {cpus} CPUs; load average {os.getloadavg()[0]:.1f}", flush=True)
    for r in range(a.rounds):
        k = r % len(settings)
        order = settings[k:] + settings[:k]
        this_round = {}
        for name, extra in order:
            res = run(a.bench, a.pipeline, a.data, extra, a.iterations, a.warmup)
            runs[name].append(res)
            this_round[name] = res["images_per_s"]
        best = max((v, n) for n, v in this_round.items() if n != "auto")
        ratios.append(this_round["auto"] / best[0])
        chose = runs["auto"][-1]
        print(f"round {r}: auto {this_round['auto']:.1f} images/s (chose {chose['threads']} threads, prefetch "
              f"{chose['prefetch']}), this round's fastest hand-set {best[1]} {best[0]:.1f}; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    print("median images/s per setting:")
    medians = {}
    for name, _ in settings:
        rates = [x["images_per_s"] for x in runs[name]]
        medians[name] = statistics.median(rates)
        print(f"  {name:6s} {medians[name]:8.1f}  ({', '.join(f'{x:.1f}' for x in rates)})")
    # The best hand-set setting is the one with the best median; each round compares autotune
    # with it in the same round (side by side), and the headline is the median of those ratios.
    # The maximum of each round's hand-set runs is printed too: it picks the luckiest of many
    # noisy runs, so it is biased against autotune on a busy machine.
    best = max((v, n) for n, v in medians.items() if n != "auto")[1]
    paired = [runs["auto"][r]["images_per_s"] / runs[best][r]["images_per_s"] for r in range(a.rounds)]
    print(f"autotune / best hand-set ({best}), median of per-round ratios: {statistics.median(paired):.3f} "
          f"(rounds: {', '.join(f'{x:.3f}' for x in paired)}); target >= 0.95")
    print(f"autotune / each round's fastest hand-set run, median: {statistics.median(ratios):.3f} "
          f"(rounds: {', '.join(f'{x:.3f}' for x in ratios)})")
    pairs = []
    extra = dict(settings)
    for i in range(a.pairs):
        first, second = ("auto", best) if i % 2 == 0 else (best, "auto")
        got = {n: run(a.bench, a.pipeline, a.data, extra[n], a.iterations, a.warmup) for n in (first, second)}
        pairs.append(got["auto"]["images_per_s"] / got[best]["images_per_s"])
        print(f"pair {i}: auto {got['auto']['images_per_s']:.1f} (chose {got['auto']['threads']} threads, prefetch "
              f"{got['auto']['prefetch']}), {best} {got[best]['images_per_s']:.1f}: {pairs[-1]:.3f}; "
              f"load {os.getloadavg()[0]:.1f}", flush=True)
    if pairs:
        print(f"autotune / {best}, median of {len(pairs)} back-to-back pairs: {statistics.median(pairs):.3f}; "
              f"target >= 0.95")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"runs": runs, "best": best, "paired_ratios": paired, "max_ratios": ratios,
                       "pairs": pairs}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
