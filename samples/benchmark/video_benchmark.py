#!/usr/bin/python3
"""Video side-by-side benchmark: one command, one run, ratios.

On the same files and cores (--threads N, default: all), in rounds of back-to-back runs:
  decode only, every frame of every video, no pixel conversion:
    - this library: hdl-bench video-decode DATA --threads N --batch-size 1 --warmup 0;
    - ffmpeg, sequential: `ffmpeg -v error -threads N -i F -map 0:v:0 -f null -` over every file,
      one after another, as a user would run it (plus `-progress pipe:1` to read its frame count);
    - ffmpeg, parallel: the same command at -threads 1, N files at a time (second baseline);
    each as whole processes: total frames / total wall time.
  random clips (frames_per_clip, step and clips_per_video read from video_clips.json; 16 frames
  2 apart, 2 clips per video), decoded to RGB uint8, no augmentation:
    - this library: hdl-bench samples/benchmark/video_clips.json LIST --batch-size 8 --warmup 0
      (build, metadata probing and every batch measured; wall and CPU as hdl-bench's JSON gives
      them, inside its process, as the Python sides measure theirs around their loops; the
      whole process's CPU, exec, loading and exit included, is reported beside it); with --group-clips the spec's reader
      gets group_clips=true: each video's clips drawn together, adjacent in the epoch, in time
      order, decoded by one thread going on from one clip to the next (torchcodec's semantics;
      the PyAV baselines stay per clip);
    - torchvision VideoClips + PyAV backend: clip_length_in_frames = (frames - 1) * step + 1 = 31,
      frames_between_clips = 1, then clip[::step], which is exactly frames i, i+2, ..., i+30;
      its indexing pass (VideoClips(num_workers=N), which decodes or demuxes every video) is
      timed once and added to an "end to end" figure;
    - PyAV seeking: container.seek(start pts, backward=True, any_frame=False), decode until the
      clip's frames are collected, frame.to_ndarray(format="rgb24") for those frames only;
    - torchcodec (PyPI, built against the system's FFmpeg), in pip's torch 2.x venv
      (--torch2-python, default BUILD/venv-torch2/bin/python; .ci/torch2.sh pins it): per video,
      VideoDecoder(path) (its default seek_mode "exact" scans the file, as our probe does) and
      torchcodec.samplers.clips_at_random_indices(num_clips=clips_per_video,
      num_frames_per_clip=frames, num_indices_between_frames=step), RGB uint8, one FFmpeg thread
      per decoder, the videos in a ThreadPool of N threads (torchcodec releases the GIL while
      decoding). Its own random starts; the same number of clips. Where torchcodec cannot be
      imported, a "torchcodec: skipped: <reason>" line says why and the rest runs.
    Both baselines load the same clips (random, fixed seed per round, from VideoClips' index)
    in a ThreadPool of N threads (PyAV releases the GIL while decoding; a DataLoader's worker
    processes were slower in a trial, most likely because every clip's frames travel back to
    the main process).
Files that VideoClips cannot index (no average frame rate: its indexer raises TypeError) or
that are shorter than a clip are left out of all three clip measurements, and listed.

    /usr/bin/python3 samples/benchmark/video_benchmark.py [--build build] [--data DIR]
        [--threads N] [--repeats 3] [--torch2-python PY] [--group-clips] [--json FILE] [--markdown]

Needs /usr/bin/python3 with torch, torchvision and PyAV (python3-av), ffmpeg on PATH, and
build/bin/hdl-bench (.ci/build.sh); torchcodec optionally (above).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import random
import re
import resource
import shlex
import shutil
import statistics
import sys
import tempfile
import time

from run_benchmark import sh, verdict  # beside this script (its folder is on sys.path)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.path.join(ROOT, "samples/benchmark/video_clips.json")
EXTS = (".mp4", ".avi", ".mkv", ".webm", ".mov", ".m4v", ".mpg", ".mpeg", ".ogv", ".flv", ".wmv", ".3gp", ".ts")
LABELS = {"ours_decode": "decode: hdl-bench video-decode",
          "ffmpeg_seq": "decode: ffmpeg -threads N, files in sequence",
          "ffmpeg_par": "decode: ffmpeg -threads 1, N files in parallel",
          "ours_clips": "clips: hdl-bench video_clips.json",
          "videoclips": "clips: VideoClips + PyAV (loading)",
          "videoclips_e2e": "clips: VideoClips + PyAV (end to end, + indexing)",
          "pyav_seek": "clips: PyAV seek + decode",
          "torchcodec": "clips: torchcodec clips_at_random_indices"}


def cpu_now(who) -> float:
    u = resource.getrusage(who)
    return u.ru_utime + u.ru_stime


def clip_spec() -> dict:
    with open(SPEC) as f:
        node = next(n for n in json.load(f)["nodes"] if n["op"] == "video_reader")
    a = node["args"]
    return {"frames": a["frames_per_clip"], "step": a.get("step", 1), "per_video": a.get("clips_per_video", 1)}


# ---- Python baselines, in their own process (video_benchmark.py --worker ...), stderr kept ----
def video_clips(a: argparse.Namespace, meta=None):
    from torchvision.datasets.video_utils import VideoClips
    s = clip_spec()
    span = (s["frames"] - 1) * s["step"] + 1
    return VideoClips(a.paths, clip_length_in_frames=span, frames_between_clips=1, num_workers=a.threads,
                      _precomputed_metadata=meta), s


def worker_index(a: argparse.Namespace) -> dict:
    import av
    paths, no_rate = [], []
    for p in a.paths:  # VideoClips' indexer raises TypeError on a stream without average_rate
        with av.open(p, metadata_errors="ignore") as c:
            (paths if c.streams.video and c.streams.video[0].average_rate is not None else no_rate).append(p)
    a.paths = paths
    t0, c0 = time.perf_counter(), cpu_now(resource.RUSAGE_SELF) + cpu_now(resource.RUSAGE_CHILDREN)
    vc, _ = video_clips(a)
    seconds = time.perf_counter() - t0
    cpu = cpu_now(resource.RUSAGE_SELF) + cpu_now(resource.RUSAGE_CHILDREN) - c0
    with open(a.meta, "wb") as f:
        pickle.dump(vc.metadata, f)
    counts = [len(c) for c in vc.clips]
    return {"seconds": seconds, "cpu_s": cpu, "no_frame_rate": no_rate,
            "too_short": [p for p, n in zip(paths, counts) if n == 0],
            "eligible": [p for p, n in zip(paths, counts) if n > 0],
            "frames": [len(p) for p in vc.video_pts]}


def pick_clips(vc, per_video: int, seed: int) -> list:
    rng = random.Random(seed)
    clips = [(v, rng.randrange(len(c))) for v, c in enumerate(vc.clips) if len(c) for _ in range(per_video)]
    rng.shuffle(clips)
    return clips


def load_videoclips(vc, s: dict, v: int, c: int) -> dict:
    flat = (vc.cumulative_sizes[v - 1] if v else 0) + c
    try:
        video = vc.get_clip(flat)[0][::s["step"]]
        return {"frames": int(video.shape[0]), "short": 0}
    except AssertionError:  # read_video returned fewer frames than the clip's pts span
        return {"frames": 0, "short": 1, "path": vc.video_paths[v]}


def load_pyav_seek(vc, s: dict, v: int, c: int) -> dict:
    import av
    pts = vc.clips[v][c].tolist()
    want, start, last = set(pts[::s["step"]]), pts[0], pts[-1]
    out, decoded, fallback = {}, 0, 0
    for attempt in (0, 1):
        with av.open(vc.video_paths[v], metadata_errors="ignore") as cont:
            stream = cont.streams.video[0]
            if attempt == 0:
                cont.seek(start, backward=True, any_frame=False, stream=stream)
            past, first = 0, None
            for f in cont.decode(stream):
                decoded += 1
                if f.pts is None:
                    continue
                first = f.pts if first is None else first
                if attempt == 0 and first > start:
                    break  # the seek overshot (MPEG-PS, packed B-frames): decode from the start instead
                if f.pts in want and f.pts not in out:
                    out[f.pts] = f.to_ndarray(format="rgb24")
                past += f.pts > last  # frames can come out of pts order: a few past the end
                if len(out) == len(want) or past > 4:
                    break
        if len(out) == len(want) or attempt == 1 or not (first is not None and first > start):
            break
        fallback, out = 1, {}
    return {"frames": len(out), "short": int(len(out) < len(want)), "decoded": decoded, "fallback": fallback}


def worker_clips(a: argparse.Namespace) -> dict:
    from multiprocessing.pool import ThreadPool
    with open(a.meta, "rb") as f:
        meta = pickle.load(f)
    a.paths = meta["video_paths"]
    vc, s = video_clips(a, meta)
    clips = pick_clips(vc, s["per_video"], a.seed)
    res = {}
    order = [("videoclips", load_videoclips), ("pyav_seek", load_pyav_seek)]
    for name, fn in (order if a.seed % 2 == 0 else order[::-1]):
        t0, c0 = time.perf_counter(), cpu_now(resource.RUSAGE_SELF)
        with ThreadPool(a.threads) as pool:
            got = pool.starmap(fn, [(vc, s, v, c) for v, c in clips], chunksize=1)
        seconds, cpu = time.perf_counter() - t0, cpu_now(resource.RUSAGE_SELF) - c0
        frames = sum(g["frames"] for g in got)
        res[name] = {"clips": len(clips), "frames": frames, "seconds": seconds, "cpu_s": cpu,
                     "short_clips": sum(g["short"] for g in got),
                     "short_in": sorted({os.path.basename(g["path"]) for g in got if g.get("path")}),
                     "decoded_frames": sum(g.get("decoded", 0) for g in got) or None,
                     "seek_fallbacks": sum(g.get("fallback", 0) for g in got) if name == "pyav_seek" else None}
    return res


def worker_torchcodec(a: argparse.Namespace) -> dict:
    """torchcodec's random-clip sampler over the videos listed in a.meta, one VideoDecoder per
    video, in a ThreadPool; runs in the torch 2.x venv (no torchvision needed)."""
    from multiprocessing.pool import ThreadPool
    import torch
    from torchcodec.decoders import VideoDecoder
    from torchcodec.samplers import clips_at_random_indices
    with open(a.meta) as f:
        job = json.load(f)
    paths = list(job["paths"])
    random.Random(a.seed).shuffle(paths)
    torch.manual_seed(a.seed)
    torch.set_num_threads(1)

    asked = {}  # path -> the frame indices the sampler asked the decoder for

    def load(path: str) -> int:
        dec = VideoDecoder(path, num_ffmpeg_threads=1)
        get_frames_at = dec.get_frames_at

        def spy(indices):  # records the sampler's indices (a list append: nothing measurable)
            asked[path] = [int(i) for i in indices]
            return get_frames_at(indices=indices)
        dec.get_frames_at = spy
        clips = clips_at_random_indices(dec, num_clips=job["per_video"], num_frames_per_clip=job["frames"],
                                        num_indices_between_frames=job["step"])
        return int(clips.data.shape[0] * clips.data.shape[1])

    t0, c0 = time.perf_counter(), cpu_now(resource.RUSAGE_SELF)
    with ThreadPool(a.threads) as pool:
        frames = sum(pool.map(load, paths, chunksize=1))
    seconds, cpu = time.perf_counter() - t0, cpu_now(resource.RUSAGE_SELF) - c0
    import torchcodec
    # Frames its decoder decodes, modelled (not counted: torchcodec has no counter), after the
    # timed part: the asked frames in ascending order; for each, decoding goes on from the last
    # decoded frame when no keyframe lies between them, else from the keyframe at or before it.
    # Reordering delay and frames past the last one are left out, so it is a lower bound.
    modelled = 0
    for path, indices in asked.items():
        keys = sorted(int(k) for k in VideoDecoder(path, num_ffmpeg_threads=1)._get_key_frame_indices())
        last = -1
        for t in sorted(set(indices)):
            k = max((x for x in keys if x <= t), default=0)
            modelled += t - last if k <= last else t - k + 1
            last = t
    return {"torchcodec": {"clips": len(paths) * job["per_video"], "frames": frames, "seconds": seconds, "cpu_s": cpu,
                           "decoded_frames_modelled": modelled,
                           "version": torchcodec.__version__, "torch": torch.__version__}}


def torchcodec_status(python: str) -> str:
    """"" when `python` imports torchcodec (and loads its FFmpeg libraries), else why not."""
    if not os.path.exists(python):
        return f"no torch 2.x Python at {python} (.ci/torch2.sh builds it; --torch2-python)"
    import subprocess
    r = subprocess.run([python, "-c", "import torchcodec.decoders, torchcodec.samplers"], capture_output=True, text=True)
    if r.returncode == 0:
        return ""
    lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
    return lines[-1] if lines else f"exit status {r.returncode}"


# ---- the driver ------------------------------------------------------------------------------
def rates(frames: int, clips: int, seconds: float, cpu: float) -> dict:
    return {"frames": frames, "clips": clips, "seconds": seconds, "cpu_s": cpu, "frames_per_s": frames / seconds,
            "clips_per_s": clips / seconds, "cpu_ms_per_frame": 1e3 * cpu / frames if frames else None}


class Runner:
    def __init__(self, a: argparse.Namespace, tmp: str):
        self.a = a
        build = a.build if os.path.isabs(a.build) else os.path.join(ROOT, a.build)
        self.bench = os.path.join(build, "bin/hdl-bench")
        if not os.path.exists(self.bench):
            raise SystemExit(f"{self.bench} is missing: build with .ci/build.sh")
        self.files = sorted(os.path.join(dp, f) for dp, _, fs in os.walk(a.data) for f in fs
                            if f.lower().endswith(EXTS) and os.path.relpath(dp, a.data) != ".")
        self.meta = os.path.join(tmp, "videoclips_meta.pkl")
        self.torchcodec_job = os.path.join(tmp, "torchcodec_job.json")
        self.torch2 = a.torch2_python or os.path.join(build, "venv-torch2/bin/python")
        self.list = os.path.join(tmp, "clips.txt")  # the videos every clip measurement reads
        self.spec = SPEC
        if a.group_clips:  # the same spec, its reader grouping each video's clips
            with open(SPEC) as f:
                spec = json.load(f)
            next(n for n in spec["nodes"] if n["op"] == "video_reader")["args"]["group_clips"] = True
            self.spec = os.path.join(tmp, "video_clips_grouped.json")
            with open(self.spec, "w") as f:
                json.dump(spec, f, indent=1)
        self.commands = {}

    def timed(self, key: str, cmds: list, parallel: int = 1) -> tuple:
        """Runs the commands (parallel at a time); wall seconds, children's CPU seconds, stdouts."""
        from multiprocessing.pool import ThreadPool
        self.commands.setdefault(key, shlex.join(cmds[0]) + (f"   # and the other files, {parallel} at a time"
                                                             if parallel > 1 else ""))
        t0, c0 = time.perf_counter(), cpu_now(resource.RUSAGE_CHILDREN)
        with ThreadPool(parallel) as pool:
            outs = pool.map(sh, cmds, chunksize=1)
        return time.perf_counter() - t0, cpu_now(resource.RUSAGE_CHILDREN) - c0, outs

    def ours_decode(self) -> dict:
        cmd = [self.bench, "video-decode", self.a.data, "--threads", str(self.a.threads), "--batch-size", "1",
               "--warmup", "0", "--json", "--no-progress"]
        wall, cpu, (out,) = self.timed("ours_decode", [cmd])
        j = json.loads(out)
        r = rates(j["measured_frames"], j["dataset_videos"], wall, cpu)
        r.update(internal_frames_per_s=j["frames_per_s"], failures=j["failures"])
        return r

    def ffmpeg(self, key: str, threads: int, parallel: int) -> dict:
        cmds = [["ffmpeg", "-v", "error", "-progress", "pipe:1", "-threads", str(threads), "-i", f, "-map", "0:v:0",
                 "-f", "null", "-"] for f in self.files]
        wall, cpu, outs = self.timed(key, cmds, parallel)
        frames = sum(int(re.findall(r"^frame=(\d+)", o, re.M)[-1]) for o in outs)
        return rates(frames, len(self.files), wall, cpu)

    def ours_clips(self, seed: int) -> dict:
        cmd = [self.bench, self.spec, self.list, "--file-root", self.a.data, "--threads", str(self.a.threads),
               "--batch-size", "8", "--warmup", "0", "--seed", str(seed), "--json", "--no-progress"]
        _, process_cpu, (out,) = self.timed("ours_clips", [cmd])
        j = json.loads(out)
        counters = j["operators"][0]["counters"]
        # Like for like with the Python sides (their CPU: getrusage around their clip loop in a
        # warm process): hdl-bench's own getrusage from building the pipeline (probing every
        # video, as torchcodec's VideoDecoder scans its file) to the last batch (--warmup 0), so
        # without exec, dynamic loading and exit; the whole process's CPU is kept beside it.
        cpu = j["cpu"]["user_seconds"] + j["cpu"]["system_seconds"]
        r = rates(j["measured_frames"], j["measured_images"], j["measured_seconds"], cpu)
        r.update(decoded_frames=counters.get("video_frames_decoded"), continued=counters.get("video_clips_continued"),
                 decoded_clips=counters.get("video_clips"), failures=j["failures"],
                 time_to_first_batch_s=j["time_to_first_batch_s"], process_cpu_s=process_cpu,
                 process_cpu_ms_per_frame=1e3 * process_cpu / j["measured_frames"] if j["measured_frames"] else None)
        return r

    def worker(self, kind: str, seed: int = 0, paths=(), python: str = "/usr/bin/python3", meta: str = "") -> dict:
        cmd = [python, os.path.abspath(__file__), "--worker", kind, "--threads", str(self.a.threads),
               "--seed", str(seed), "--meta", meta or self.meta, *paths]
        self.commands.setdefault(f"worker {kind}", shlex.join(cmd[:8] + ["..."]))
        return json.loads(sh(cmd).strip().splitlines()[-1])

    def python_clips(self, seed: int) -> dict:
        """VideoClips and PyAV seeking on the same clips, in one worker process."""
        return {name: rates(v["frames"], v["clips"], v["seconds"], v["cpu_s"]) | v
                for name, v in self.worker("clips", seed=seed).items()}

    def torchcodec(self, seed: int) -> dict:
        v = self.worker("torchcodec", seed=seed, python=self.torch2, meta=self.torchcodec_job)["torchcodec"]
        return rates(v["frames"], v["clips"], v["seconds"], v["cpu_s"]) | v

    def index(self) -> dict:
        idx = self.worker("index", paths=self.files)
        classes = sorted({os.path.relpath(p, self.a.data).split(os.sep)[0] for p in self.files})
        with open(self.list, "w") as f:
            for p in idx["eligible"]:
                rel = os.path.relpath(p, self.a.data)
                f.write(f"{rel} {classes.index(rel.split(os.sep)[0])}\n")
        with open(self.torchcodec_job, "w") as f:
            json.dump(dict(clip_spec(), paths=idx["eligible"]), f)
        return idx


def run(a: argparse.Namespace, tmp: str) -> dict:
    r = Runner(a, tmp)
    log = lambda m: print(m, file=sys.stderr, flush=True)
    ffv = sh(["ffmpeg", "-version"]).split("\n")[0]
    osr = dict(l.split("=", 1) for l in open("/etc/os-release").read().splitlines() if "=" in l)
    res = {"machine": {"cores": os.cpu_count(), "os": osr.get("PRETTY_NAME", "").strip('"'),
                       "kernel": platform.release(), "ffmpeg": ffv, "load_before": os.getloadavg()[0]},
           "data": a.data, "threads": a.threads, "repeats": a.repeats, "files": len(r.files), "spec": clip_spec(),
           "group_clips": a.group_clips}
    if a.group_clips:
        LABELS["ours_clips"] += " (group_clips)"
    for p in r.files:  # page cache: every run reads from memory
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass
    log(f"VideoClips indexing pass ({len(r.files)} files, num_workers={a.threads})")
    idx = r.index()
    res["videoclips_index"] = {k: idx[k] for k in ("seconds", "cpu_s")}
    res["excluded_from_clips"] = {"no_frame_rate (VideoClips cannot index)": [os.path.relpath(p, a.data) for p in idx["no_frame_rate"]],
                                  "shorter_than_a_clip": [os.path.relpath(p, a.data) for p in idx["too_short"]]}
    res["clip_videos"] = len(idx["eligible"])
    res["torchcodec_skipped"] = torchcodec_status(r.torch2)
    if res["torchcodec_skipped"]:
        log(f"torchcodec: skipped: {res['torchcodec_skipped']}")
    keys = [k for k in LABELS if k != "torchcodec" or not res["torchcodec_skipped"]]
    rounds = []
    for k in range(a.repeats):
        log(f"[round {k + 1}/{a.repeats}] decode: hdl-bench, ffmpeg sequential, ffmpeg parallel; "
            "clips: hdl-bench, VideoClips, PyAV seek" + ("" if res["torchcodec_skipped"] else ", torchcodec"))
        rd = {}
        decode = [("ours_decode", r.ours_decode), ("ffmpeg_seq", lambda: r.ffmpeg("ffmpeg_seq", a.threads, 1)),
                  ("ffmpeg_par", lambda: r.ffmpeg("ffmpeg_par", 1, a.threads))]
        for name, fn in decode[k % 3:] + decode[:k % 3]:  # rotate the order between rounds
            rd[name] = fn()
        clips = [lambda: rd.update(ours_clips=r.ours_clips(k)), lambda: rd.update(r.python_clips(k))]
        if not res["torchcodec_skipped"]:
            clips.append(lambda: rd.update(torchcodec=r.torchcodec(k)))
        for fn in clips[k % len(clips):] + clips[:k % len(clips)]:  # rotate the order between rounds
            fn()
        ix = res["videoclips_index"]
        v = rd["videoclips"]
        rd["videoclips_e2e"] = rates(v["frames"], v["clips"], v["seconds"] + ix["seconds"], v["cpu_s"] + ix["cpu_s"])
        rounds.append(rd)
    res["rounds"] = rounds
    res["median"] = {}
    for key in keys:
        runs = sorted(rounds, key=lambda rd: rd[key]["frames_per_s"])
        res["median"][key] = dict(runs[len(runs) // 2][key], runs=[round(rd[key]["frames_per_s"], 1) for rd in runs])
    med = lambda a_, b_, f="frames_per_s": statistics.median(rd[a_][f] / rd[b_][f] for rd in rounds)
    cpu = lambda a_, b_: statistics.median(rd[b_]["cpu_ms_per_frame"] / rd[a_]["cpu_ms_per_frame"] for rd in rounds)
    res["ratios"] = [
        ("decode frames/s: hdl-bench / ffmpeg sequential", med("ours_decode", "ffmpeg_seq"), ">= 0.9"),
        ("decode frames/s: hdl-bench / ffmpeg N files in parallel", med("ours_decode", "ffmpeg_par"), "(info)"),
        ("decode CPU per frame: ffmpeg sequential / hdl-bench", cpu("ours_decode", "ffmpeg_seq"), "(info)"),
        ("clips/s: hdl-bench / VideoClips + PyAV (loading)", med("ours_clips", "videoclips", "clips_per_s"), ">= 5.0"),
        ("clips/s: hdl-bench / VideoClips + PyAV (end to end)", med("ours_clips", "videoclips_e2e", "clips_per_s"), "(info)"),
        ("clips/s: hdl-bench / PyAV seek", med("ours_clips", "pyav_seek", "clips_per_s"), ">= 2.0"),
        ("clip CPU per frame: VideoClips / hdl-bench", cpu("ours_clips", "videoclips"), "(info)"),
        ("clip CPU per frame: PyAV seek / hdl-bench", cpu("ours_clips", "pyav_seek"), ">= 1.0"),
    ]
    if not res["torchcodec_skipped"]:
        res["ratios"] += [
            ("clips/s: hdl-bench / torchcodec", med("ours_clips", "torchcodec", "clips_per_s"), ">= 1.0"),
            ("clip CPU per frame: torchcodec / hdl-bench", cpu("ours_clips", "torchcodec"), ">= 1.0"),
            ("clip CPU per frame: torchcodec / hdl-bench whole process", statistics.median(
                rd["torchcodec"]["cpu_ms_per_frame"] / rd["ours_clips"]["process_cpu_ms_per_frame"] for rd in rounds), "(info)"),
        ]
    res["commands"] = r.commands
    res["load_after"] = os.getloadavg()[0]
    return res


def tables(res: dict, md: bool) -> str:
    rows = [(LABELS[k], v) for k, v in res["median"].items()]
    fmt = lambda x, p: "-" if x is None else f"{x:.{p}f}"
    if md:
        out = ["| measurement | frames/s | clips/s | CPU ms/frame | frames/s of each run |", "|---|---|---|---|---|"]
        out += [f"| {n} | {v['frames_per_s']:.0f} | {v['clips_per_s']:.2f} | {fmt(v['cpu_ms_per_frame'], 2)} | {v['runs']} |"
                for n, v in rows]
        out += ["", "| ratio (median of the rounds' ratios) | measured | target | |", "|---|---|---|---|"]
        out += [f"| {n} | {v:.2f} | {t} | {verdict(v, t)} |" for n, v, t in res["ratios"]]
        return "\n".join(out)
    out = [f"{'measurement':52s} {'frames/s':>9s} {'clips/s':>8s} {'CPU ms/frame':>12s}  frames/s of each run"]
    out += [f"{n:52s} {v['frames_per_s']:9.0f} {v['clips_per_s']:8.2f} {fmt(v['cpu_ms_per_frame'], 2):>12s}  {v['runs']}"
            for n, v in rows]
    out += ["", f"{'ratio (median of the rounds ratios)':58s} {'measured':>9s}  target"]
    out += [f"{n:58s} {v:9.2f}  {t} {verdict(v, t)}" for n, v, t in res["ratios"]]
    return "\n".join(out)


def notes(res: dict) -> str:
    m, ix = res["median"], res["videoclips_index"]
    ex = "; ".join(f"{k}: {', '.join(v)}" for k, v in res["excluded_from_clips"].items() if v) or "none"
    tc = (f"torchcodec: skipped: {res['torchcodec_skipped']}. " if res["torchcodec_skipped"] else
          f"torchcodec {m['torchcodec']['version']} (torch {m['torchcodec']['torch']}; its decoded frames per clip, "
          f"modelled from the frames its sampler asked for and the keyframes, a lower bound: "
          f"{m['torchcodec']['decoded_frames_modelled'] / m['torchcodec']['clips']:.1f}). ")
    return tc + (f"{res['files']} videos for decode; {res['clip_videos']} for clips "
            f"({res['spec']['per_video']} clips of {res['spec']['frames']} frames, step {res['spec']['step']}, per video "
            f"per round); excluded from the clips: {ex}. VideoClips indexing pass (once): {ix['seconds']:.2f} s, "
            f"{ix['cpu_s']:.2f} CPU s. Decoded frames per clip: hdl-bench "
            f"{m['ours_clips']['decoded_frames'] / m['ours_clips']['clips']:.1f} "
            f"({m['ours_clips']['decoded_clips']} clips decoded for {m['ours_clips']['clips']} delivered, "
            f"{m['ours_clips']['continued']} continued a held session"
            f"{', group_clips' if res['group_clips'] else ''}; whole-process CPU "
            f"{m['ours_clips']['process_cpu_ms_per_frame']:.2f} ms per frame against "
            f"{m['ours_clips']['cpu_ms_per_frame']:.2f} in the process), PyAV seek "
            f"{m['pyav_seek']['decoded_frames'] / m['pyav_seek']['clips']:.1f} ({m['pyav_seek']['seek_fallbacks']} seeks "
            f"overshot: decoded from the start). VideoClips clips short of frames (AssertionError, still counted): "
            f"{m['videoclips']['short_clips']} {m['videoclips']['short_in']}; failures: hdl-bench decode "
            f"{m['ours_decode']['failures']}, clips {m['ours_clips']['failures']}. Frames: hdl-bench "
            f"{m['ours_decode']['frames']}, ffmpeg {m['ffmpeg_seq']['frames']}. Load average "
            f"{res['machine']['load_before']:.2f} before, {res['load_after']:.2f} after; {res['seconds']:.0f} s in all.")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus = os.environ.get("HDL_CORPUS_DIR", os.path.join(ROOT, "build/corpus"))
    p.add_argument("--build", default="build", help="build folder (default: build)")
    p.add_argument("--data", default=os.path.join(corpus, "video"), help="class folders of videos "
                   "(default: $HDL_CORPUS_DIR/video, else build/corpus/video)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="threads / files in parallel / pool size (default: all cores)")
    p.add_argument("--repeats", "--repeat", type=int, default=3, help="rounds of interleaved runs, medians kept (default 3)")
    p.add_argument("--torch2-python", help="the torch 2.x venv's python, for torchcodec (default: BUILD/venv-torch2/bin/python)")
    p.add_argument("--group-clips", action="store_true", help="our reader keeps each video's clips together, in "
                   "time order, decoded in one pass where they do not overlap (video_reader group_clips; "
                   "torchcodec's clips_at_random_indices semantics)")
    p.add_argument("--json", help="write every number here")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown (docs/PERFORMANCE.md)")
    p.add_argument("--worker", choices=["index", "clips", "torchcodec"], help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--meta", help=argparse.SUPPRESS)
    p.add_argument("paths", nargs="*", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        import warnings
        warnings.filterwarnings("ignore")
        work = {"index": worker_index, "clips": worker_clips, "torchcodec": worker_torchcodec}[a.worker]
        print(json.dumps(work(a)))
        return
    if not a.torch2_python:
        build = a.build if os.path.isabs(a.build) else os.path.join(ROOT, a.build)
        a.torch2_python = os.path.join(build, "venv-torch2/bin/python")
    try:
        import av  # noqa: F401
    except ImportError:
        raise SystemExit("PyAV is missing: apt-get install python3-av")
    a.data = os.path.abspath(a.data)
    t0 = time.perf_counter()
    tmp = tempfile.mkdtemp(prefix="video_benchmark.")
    try:
        res = run(a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    res["seconds"] = time.perf_counter() - t0
    print("\n" + tables(res, a.markdown) + "\n\n" + notes(res))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
