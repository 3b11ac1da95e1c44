"""Shards in object stores, side by side in one run (issue 24's targets; not a test).

    /usr/bin/python3 samples/benchmark/object_store_bench.py faults --root DIR [--rounds 3]
    build/venv-torch2/bin/python samples/benchmark/object_store_bench.py moto --root DIR
    /usr/bin/python3 samples/benchmark/object_store_bench.py curl-cpu --root DIR
    /usr/bin/python3 samples/benchmark/object_store_bench.py in-flight --root DIR [--latency-ms 20]
    /usr/bin/python3 samples/benchmark/object_store_bench.py ab --root DIR --base-build OLD [--rounds 3]

DIR holds plain WebDataset tar shards "shard-NNN.tar" (.jpg + .cls). The servers are
tests/media/object_store_servers.py's (Debian's nginx, moto's S3 server, the fault proxy), on
127.0.0.1.

faults    hdl-bench resnet-train over nginx behind the fault proxy at 0% and at --fail-rate
          (default 1%) of requests failing, rounds alternating, default RemoteOptions; prints
          images/s, the retries and stalls, samples lost (failures, images short of the
          dataset), and the median ratio (target >= 0.8x).
moto      resnet-train from moto's S3: hdl-bench resnet-train s3://hdl/shard-{...}.tar (threads = cores)
          against webdataset.WebDataset("pipe:curl -s --aws-sigv4 ... URL") + torch's DataLoader
          (num_workers = cores), the same torchvision transforms, the same server; prints
          images/s, the ratio (target >= 3x) and moto's own CPU seconds per run. Our side in
          one or more of --arms: "indexed" (a range GET per sample, the index built from the
          header blocks over the network; alone), "sidecar" (the same with "<shard>.idx" sidecars
          published beside the shards: no header reads), "cache" (sidecars, and --cache-dir
          in a fresh folder each round: whole shards downloaded once in 8 MiB range GETs,
          read locally after), "streaming" (sidecars, --shard-mode streaming: each shard read
          front to back in 8 MiB range GETs through a 1000-sample shuffle buffer, as
          webdataset reads it; no cache). moto answers a range GET by reading the whole object, so
          what each arm costs the server is printed beside its rate.
curl-cpu  CPU seconds per MB fetching the same objects from nginx: whole shards and ranged
          reads of every sample's JPEG, through our client (samples/benchmark/fetch_bench:
          url_file_system(), one HEAD per object, reads into a reused buffer) and through one
          curl CLI process per set (-K: every URL and range, connections reused), writing to
          /dev/null (the bytes discarded unseen) and to a file on /dev/shm (the bytes land in
          memory, as ours do); CPU = the process's user + system time (wait4). Two figures:
          one pass per process (start-up included) and the marginal cost of --passes passes
          less one pass (what a long-running loader pays per MB); prints the ratios (target
          <= 1).
ab        this build's hdl-bench against another's (--base-build: an earlier commit built
          alike), rounds alternating the order, resnet-train --threads 2 for --epochs epochs:
          nginx (indexed, no cache), nginx through a warm local cache (a first run fills
          it), moto's S3 without signature checking (the base may predate signing that
          stores accept; streaming mode: moto reads the whole object for each range); prints images/s and CPU seconds per epoch of each and the medians
          of the per-round ratios (issue 34's target: no arm below 0.95x).
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

    def __init__(self, root, want, fail_rate=0.0, seed=7, stall_s=3.0, latency_ms=0.0):
        self.state = tempfile.mkdtemp(prefix="hdl_osb_")
        self.proc = subprocess.Popen(
            [sys.executable if "venv" not in sys.executable else "/usr/bin/python3",
             os.path.join(SRC, "tests/media/object_store_servers.py"), "--root", root, "--state", self.state,
             "--want", want, "--fail-rate", str(fail_rate), "--seed", str(seed), "--stall-s", str(stall_s),
             "--latency-ms", str(latency_ms), "--parent", str(os.getpid()), "--lifetime", "3600"])
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
    bad = f"{a.fail_rate:.0%}"
    clean = Servers(a.root, "nginx", 0.0, a.seed, a.stall_s)
    faulty = Servers(a.root, "nginx", a.fail_rate, a.seed, a.stall_s)
    args = ["--threads", str(a.threads), "--batch-size", "64", "--epochs", str(a.epochs)]
    arms = [("0%", clean, {}), (bad, faulty, {})]
    if a.no_adaptive:  # what the adaptive deadline buys: every attempt gets request_timeout_ms
        arms.append((bad + " no adaptive deadline", faulty, {"HDL_HTTP_ADAPTIVE_TIMEOUT": "0"}))
    ratios = {label: [] for label, _, _ in arms[1:]}
    try:
        for r in range(a.rounds):
            got = {}
            for label, srv, env in (arms if r % 2 == 0 else arms[::-1]):  # alternating order
                before = len(srv.faults("nginx"))
                rep = hdl_bench(a.build, srv.url("proxy_nginx") + "/" + spec(names), args, env=dict(os.environ, **env))
                c = counters(rep)
                lost = rep["failures"] + rep["dataset_images"] * a.epochs - rep["images"]
                got[label] = rep["images_per_s"]
                faults = srv.faults("nginx")[before:]
                kinds = {k: sum(1 for f in faults if f.startswith(k + " ")) for k in ("500", "503", "cut", "drop", "stall")}
                print(f"round {r} {label:>3}: {rep['images_per_s']:7.1f} images/s, {c.get('remote_requests', 0)} requests, "
                      f"{c.get('remote_retries', 0)} retries, {c.get('remote_stalls', 0)} stalls cut short, "
                      f"{len(faults)} faults {kinds}, samples lost {lost}", flush=True)
            for label in ratios:
                ratios[label].append(got[label] / got["0%"])
    finally:
        clean.stop()
        faulty.stop()
    for label, rs in ratios.items():
        print(f"ratio {label} / 0% faults (median of {len(rs)} rounds): {statistics.median(rs):.2f}x "
              f"(each: {', '.join(f'{x:.2f}' for x in rs)}; target >= 0.8x)")


def run_in_flight(a):
    names = shards(a.root)
    sys.path.insert(0, os.path.join(a.build, "python"))
    from habana_dataloader import _C
    for n in names:  # published sidecars: the epoch's requests are the samples' range GETs
        if not os.path.exists(os.path.join(a.root, n + ".idx")):
            _C.build_shard_index(os.path.join(a.root, n), "")
    srv = Servers(a.root, "nginx", 0.0, latency_ms=a.latency_ms)
    args = ["--threads", str(a.threads), "--batch-size", "64", "--epochs", str(a.epochs)]
    arms = [("off", {"HDL_HTTP_MAX_IN_FLIGHT": "0"}), ("on", {})]
    ratios = []
    try:
        for r in range(a.rounds):
            got = {}
            for label, env in (arms if r % 2 == 0 else arms[::-1]):  # alternating order
                before = len(srv.faults("nginx"))
                rep = hdl_bench(a.build, srv.url("proxy_nginx") + "/" + spec(names), args, env=dict(os.environ, **env))
                c = counters(rep)
                peaks = [int(x.split()[1]) for x in srv.faults("nginx")[before:] if x.startswith("in_flight ")]
                got[label] = rep["images_per_s"]
                print(f"round {r} {label:>3}: {rep['images_per_s']:7.1f} images/s, {c.get('remote_requests', 0)} requests, "
                      f"in flight at most {c.get('remote_in_flight_peak', 0)} (proxy's new highs: {peaks or '-'}), "
                      f"{c.get('remote_prefetches', 0)} prefetches, {c.get('remote_prefetch_hits', 0)} hits, "
                      f"{c.get('remote_prefetch_cut', 0)} cut, {c.get('remote_prefetch_wasted_bytes', 0)} bytes wasted, "
                      f"{c.get('remote_retries', 0)} retries, {c.get('remote_stalls', 0)} stalls cut short", flush=True)
            ratios.append(got["on"] / got["off"])
    finally:
        srv.stop()
    print(f"ratio prefetch on / off at {a.latency_ms:g} ms to first byte (median of {len(ratios)} rounds): "
          f"{statistics.median(ratios):.2f}x (each: {', '.join(f'{x:.2f}' for x in ratios)})")


def pids_named(parent, word):
    """The processes below `parent` whose command line holds `word`."""
    out, todo = [], [parent]
    while todo:
        p = todo.pop()
        for t in glob.glob(f"/proc/{p}/task/*/children"):
            for c in open(t).read().split():
                todo.append(int(c))
                try:
                    if word in open(f"/proc/{c}/cmdline").read():
                        out.append(int(c))
                except OSError:
                    pass
    return out


def cpu_seconds(pid):
    """user + system CPU seconds of a live process (/proc/PID/stat)."""
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def epochs(name, make, n):
    """images/s of each of n epochs of the loader make() returns."""
    loader, rates = make(), []
    for e in range(n):
        t, k = time.perf_counter(), 0
        for x, _ in loader:
            k += x.shape[0]
        rates.append(k / (time.perf_counter() - t))
        print(f"  {name:6s} epoch {e}: {rates[-1]:7.1f} images/s ({k} images)", flush=True)
    return rates


def run_moto(a):
    import torch
    import torchvision.transforms as T
    import webdataset as wds

    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    train = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), T.Normalize(mean, std)])
    names = shards(a.root)
    arms = a.arms.split(",")
    if any(x not in ("indexed", "sidecar", "cache", "streaming") for x in arms):
        raise SystemExit(f"--arms: indexed, sidecar, cache, streaming; got {a.arms!r}")
    if "indexed" in arms and len(arms) > 1:  # one bucket: with the sidecars or without them
        raise SystemExit("--arms: run indexed alone (its bucket has no sidecars)")
    sidecars = [os.path.join(a.root, n + ".idx") for n in names]
    for p in sidecars:  # published or not, as the arms need: moto's bucket holds what --root does
        if os.path.exists(p):
            os.remove(p)
    if "sidecar" in arms or "cache" in arms:
        sys.path.insert(0, os.path.join(a.build, "python"))
        from habana_dataloader import _C
        for n in names:
            _C.build_shard_index(os.path.join(a.root, n), "")
    srv = Servers(a.root, "moto")
    moto = pids_named(srv.proc.pid, "moto_server")[0]
    base = srv.url("moto")
    # moto checks signatures: the IAM user's key that object_store_servers.py made.
    key, secret = srv.info["moto_key"], srv.info["moto_secret"]
    os.environ.update(AWS_ENDPOINT_URL=base, AWS_ACCESS_KEY_ID=key, AWS_SECRET_ACCESS_KEY=secret,
                      AWS_REGION="us-east-1")

    def ours(arm):  # hdl-bench resnet-train: the same transforms, natively
        args = ["--threads", str(a.workers), "--batch-size", "64", "--epochs", str(a.epochs)]
        with tempfile.TemporaryDirectory(prefix="hdl-moto-cache-") as cache:
            if arm == "cache":
                args += ["--cache-dir", cache]
            if arm == "streaming":  # each shard read front to back, as webdataset does
                args += ["--shard-mode", "streaming"]
            rep = hdl_bench(a.build, "s3://hdl/" + spec(names), args, env=dict(os.environ))
        print(f"  {arm:8s} {rep['images_per_s']:7.1f} images/s over {a.epochs} epochs after the warm-up "
              f"({rep['images']} images; first batch {rep['time_to_first_batch_s']:.1f} s; "
              f"{counters(rep).get('remote_requests', 0)} requests; {rep['failures']} failures)", flush=True)
        return rep["images_per_s"]

    def theirs():  # webdataset's pipe: with the curl CLI, signing the GET as our client does
        urls = [f"pipe:curl -s -f --aws-sigv4 aws:amz:us-east-1:s3 --user {key}:{secret} "
                f"-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' {base}/hdl/{n}" for n in names]
        ds = (wds.WebDataset(urls, shardshuffle=100, seed=0).shuffle(1000).decode("pil")
              .to_tuple("jpg;jpeg", "cls").map_tuple(train, None))
        return torch.utils.data.DataLoader(ds, batch_size=64, num_workers=a.workers)

    ratios = {arm: [] for arm in arms}
    try:
        for r in range(a.rounds):
            got = {}
            runs = [(arm, lambda arm=arm: ours(arm)) for arm in arms]
            runs.append(("wds", lambda: max(epochs("wds", theirs, a.epochs)[1:])))
            for name, make in (runs if r % 2 == 0 else runs[::-1]):
                c0, t0 = cpu_seconds(moto), time.perf_counter()
                got[name] = make()
                moto_cpu, wall = cpu_seconds(moto) - c0, time.perf_counter() - t0
                print(f"round {r} {name}: {got[name]:.1f} images/s; moto used {moto_cpu:.1f} CPU s in {wall:.1f} s "
                      f"({moto_cpu / wall:.2f} cores)", flush=True)
            for arm in arms:
                ratios[arm].append(got[arm] / got["wds"])
    finally:
        srv.stop()
        for p in sidecars:
            if os.path.exists(p):
                os.remove(p)
    for arm, rs in ratios.items():
        print(f"ours ({arm}) / webdataset + DataLoader ({a.workers} workers), moto's S3 (median of {len(rs)} rounds): "
              f"{statistics.median(rs):.2f}x (each: {', '.join(f'{x:.2f}' for x in rs)}; target >= 3x)")


def run_ab(a):
    names = shards(a.root)
    srv = Servers(a.root, "nginx,moto_anon")
    builds = {"new": a.build, "base": a.base_build}
    env = dict(os.environ, AWS_ENDPOINT_URL=srv.url("moto_anon"), AWS_ACCESS_KEY_ID="anonymous-test",
               AWS_SECRET_ACCESS_KEY="anonymous-test", AWS_REGION="us-east-1")
    caches = {k: tempfile.mkdtemp(prefix=f"hdl_ab_cache_{k}_") for k in builds}
    args = ["--threads", "2", "--batch-size", "64", "--epochs", str(a.epochs)]
    arms = {"nginx": (srv.url("nginx") + "/" + spec(names), False),
            "nginx-cache-warm": (srv.url("nginx") + "/" + spec(names), True),
            "s3-moto": ("s3://hdl/" + spec(names), False)}
    stream = ["--shard-mode", "streaming"]  # moto reads a whole object for every range GET: 8 MiB ones
    for k, b in builds.items():  # fill each build's cache once (the warm arm reads it)
        hdl_bench(b, arms["nginx-cache-warm"][0], args + ["--cache-dir", caches[k], "--cache-limit", "2G"], env=env)
    ratios = {arm: [] for arm in arms}
    cpu = {(arm, k): [] for arm in arms for k in builds}
    try:
        for r in range(a.rounds):
            for arm, (data, extra) in arms.items():
                got = {}
                for k in (["new", "base"] if r % 2 == 0 else ["base", "new"]):
                    x = ["--cache-dir", caches[k], "--cache-limit", "2G"] if extra else stream if arm == "s3-moto" else []
                    rep = hdl_bench(builds[k], data, args + x, env=env)
                    got[k] = rep["images_per_s"]
                    cpu[(arm, k)].append((rep["cpu"]["user_seconds"] + rep["cpu"]["system_seconds"]) / a.epochs)
                    print(f"round {r} {arm:16s} {k:4s}: {got[k]:7.1f} images/s "
                          f"({rep['failures']} failures)", flush=True)
                ratios[arm].append(got["new"] / got["base"])
    finally:
        srv.stop()
    for arm, rs in ratios.items():
        c = {k: statistics.median(cpu[(arm, k)]) for k in builds if cpu[(arm, k)]}
        cs = f"; CPU s/epoch new {c['new']:.2f}, base {c['base']:.2f}" if len(c) == 2 else ""
        print(f"{arm}: new / base (median of {len(rs)} rounds) {statistics.median(rs):.3f}x "
              f"(each: {', '.join(f'{x:.3f}' for x in rs)}){cs}")


def timed(cmd):
    """(CPU seconds of the process and its children, wall seconds, stdout) of one command."""
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}): {err[-500:]}")
    return ru.ru_utime + ru.ru_stime, time.perf_counter() - t, out


def run_curl_cpu(a):
    import tarfile
    names = shards(a.root)
    srv = Servers(a.root, "nginx")
    base = srv.url("nginx")
    work = tempfile.mkdtemp(prefix="hdl_osb_curl_")
    sets = {"whole shards": [(f"{base}/{n}", None) for n in names], "ranges (each JPEG)": []}
    for n in names:
        with tarfile.open(os.path.join(a.root, n)) as t:
            sets["ranges (each JPEG)"] += [(f"{base}/{n}", (m.offset_data, m.size)) for m in t if m.name.endswith((".jpg", ".jpeg"))]
    results = {}
    empty = os.path.join(work, "empty.txt")
    open(empty, "w").close()
    # Process start-up (loading libhdl and its dependencies; curl's --version), to show the
    # one-pass ratios net of it too.
    start_ours = statistics.median(timed([os.path.join(a.build, "samples/benchmark/fetch_bench"), empty])[0] for _ in range(5))
    start_curl = statistics.median(timed(["curl", "--version"])[0] for _ in range(5))
    print(f"process start-up, CPU ms: ours {start_ours * 1e3:.1f}, curl {start_curl * 1e3:.1f}")
    shm = os.path.join("/dev/shm", f"hdl_osb_{os.getpid()}")  # tmpfs: the bytes land in memory, as ours do
    passes = a.passes

    def curl_config(path, reads, out, times):
        with open(path, "w") as f:
            f.write("\nnext\n".join(f'url = "{u}"\noutput = "{out}"' + ("" if r is None else f'\nrange = "{r[0]}-{r[0] + r[1] - 1}"')
                                     for u, r in reads * times) + "\n")

    try:
        for label, reads in sets.items():
            mb = sum(os.path.getsize(os.path.join(a.root, u.rsplit("/", 1)[1])) if r is None else r[1]
                     for u, r in reads) / 1e6
            ours_list = os.path.join(work, "ours.txt")
            with open(ours_list, "w") as f:
                f.writelines(f"{u}\n" if r is None else f"{u} {r[0]} {r[1]}\n" for u, r in reads)
            cfg = {}
            for times in (1, passes):
                for out in ("/dev/null", shm):
                    cfg[times, out] = os.path.join(work, f"curl_{times}_{'shm' if out == shm else 'null'}.cfg")
                    curl_config(cfg[times, out], reads, out, times)
            # Per round: one pass and `passes` passes of every arm, in turn. One pass is what a
            # process costs (start-up included); (passes - 1) more passes cost the marginal
            # CPU per MB, what a long-running loader pays.
            per = {k: [] for k in ("ours", "curl", "curl_shm", "ours_m", "curl_m", "curl_shm_m")}
            for _ in range(a.rounds):
                cpu = {}
                for times in (1, passes):
                    c, _, out = timed([os.path.join(a.build, "samples/benchmark/fetch_bench"), ours_list, "--passes", str(times)])
                    got = int(out.split("bytes=")[1].split()[0])
                    if abs(got / 1e6 - mb * times) > 1e-6 * times:
                        raise SystemExit(f"fetch_bench read {got} bytes, not {mb * times * 1e6:.0f}")
                    cpu["ours", times] = c
                    cpu["curl", times] = timed(["curl", "-s", "-f", "-g", "-K", cfg[times, "/dev/null"]])[0]
                    cpu["curl_shm", times] = timed(["curl", "-s", "-f", "-g", "-K", cfg[times, shm]])[0]
                    os.unlink(shm)
                for k in ("ours", "curl", "curl_shm"):
                    per[k].append(cpu[k, 1] / mb)
                    per[k + "_m"].append((cpu[k, passes] - cpu[k, 1]) / (mb * (passes - 1)))
            med = {k: statistics.median(v) for k, v in per.items()}
            ratio_m = statistics.median(o / c for o, c in zip(per["ours_m"], per["curl_m"]))
            ratio_m_shm = statistics.median(o / c for o, c in zip(per["ours_m"], per["curl_shm_m"]))
            results[label] = (len(reads), mb, med, ratio_m, ratio_m_shm)
            print(f"{label}: {len(reads)} GETs, {mb:.1f} MB; CPU ms per MB (medians of {a.rounds} rounds):\n"
                  f"  one pass (a process, start-up included): ours {med['ours'] * 1e3:.3f}, curl CLI -o /dev/null "
                  f"{med['curl'] * 1e3:.3f}, curl CLI -o a tmpfs file {med['curl_shm'] * 1e3:.3f}; ours / curl "
                  f"{med['ours'] / med['curl']:.2f}x and {med['ours'] / med['curl_shm']:.2f}x; net of start-up: "
                  f"{(med['ours'] - start_ours / mb) / (med['curl'] - start_curl / mb):.2f}x and "
                  f"{(med['ours'] - start_ours / mb) / (med['curl_shm'] - start_curl / mb):.2f}x\n"
                  f"  marginal ({passes} passes less 1): ours {med['ours_m'] * 1e3:.3f}, curl -o /dev/null {med['curl_m'] * 1e3:.3f}, "
                  f"curl -o tmpfs {med['curl_shm_m'] * 1e3:.3f}; ours / curl (median of the rounds' ratios) "
                  f"{ratio_m:.2f}x and {ratio_m_shm:.2f}x (target <= 1)", flush=True)
    finally:
        srv.stop()
        if os.path.exists(shm):
            os.unlink(shm)
    return results


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
    f.add_argument("--no-adaptive", action="store_true", help="also run the faulty arm with HDL_HTTP_ADAPTIVE_TIMEOUT=0")
    m = sub.add_parser("moto")
    m.add_argument("--rounds", type=int, default=2)
    m.add_argument("--epochs", type=int, default=2)
    m.add_argument("--workers", type=int, default=os.cpu_count())
    m.add_argument("--arms", default="sidecar,cache", help="our side's arms, comma-separated (indexed: alone)")
    i = sub.add_parser("in-flight")
    i.add_argument("--latency-ms", type=float, default=20.0)
    i.add_argument("--rounds", type=int, default=3)
    i.add_argument("--epochs", type=int, default=1)
    i.add_argument("--threads", type=int, default=2)
    c = sub.add_parser("curl-cpu")
    c.add_argument("--rounds", type=int, default=5)
    c.add_argument("--passes", type=int, default=4, help="the marginal figure: this many passes over each set, less one")
    b = sub.add_parser("ab")
    b.add_argument("--base-build", required=True, help="the other build folder (its bin/hdl-bench)")
    b.add_argument("--rounds", type=int, default=3)
    b.add_argument("--epochs", type=int, default=1)
    for s in sub.choices.values():
        s.add_argument("--root", required=True)
        s.add_argument("--build", default=os.path.join(SRC, "build"))
    a = p.parse_args()
    {"faults": run_faults, "moto": run_moto, "curl-cpu": run_curl_cpu, "in-flight": run_in_flight,
     "ab": run_ab}[a.what](a)


if __name__ == "__main__":
    main()
