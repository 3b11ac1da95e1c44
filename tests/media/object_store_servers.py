#!/usr/bin/env python3
"""Starts the object-store tests' servers on 127.0.0.1 and keeps them up (stdlib only).

    object_store_servers.py --root DIR --state DIR [--fail-rate 0.2] [--seed 7] [--stall-s 3]
                            [--latency-ms 0]

- nginx (Debian's), as this user, with a temporary config on a free port, serving --root
  (range requests and keep-alive are nginx's own);
- moto's S3 server (moto_server from $HDL_MOTO_SERVER, else build/venv-moto, made by
  make_moto_venv.sh when PyPI or its wheelhouse has the pins, else the torch2 venv or PATH), with bucket "hdl" holding every file of --root (uploaded with the curl CLI, signed
  with --aws-sigv4);
- one tests/media/fault_proxy.py in front of each.
Writes STATE/servers.txt, lines "name=value" (pid: this process; nginx, moto, proxy_nginx, proxy_moto,
nginx_tls (HTTPS, self-signed for 127.0.0.1, its certificate nginx_ca; nginx also redirects
/redirect/<path> to /<path> and /loop to itself): ports;
skip_nginx, skip_moto: why a server is missing), then "ready". Stops everything on SIGTERM,
when the process --parent names is gone, or after --lifetime seconds.
"""
import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
procs = []
extra = []  # more "name=value" lines for servers.txt (nginx_tls, nginx_ca)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, seconds=30):
    end = time.time() + seconds
    while time.time() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def start(args, log):
    p = subprocess.Popen(args, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    procs.append(p)
    return p


def start_nginx(root, state, log):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not nginx:
        return None, "nginx is not installed (apt-get install nginx)"
    port = free_port()
    d = os.path.abspath(os.path.join(state, "nginx"))
    os.makedirs(d, exist_ok=True)
    user = "user root;\n" if os.geteuid() == 0 else ""
    # HTTPS with a self-signed certificate for 127.0.0.1 (tests pass it as the CA bundle), when
    # openssl is there; and redirects: /redirect/<path> -> /<path> (302), /loop -> /loop.
    tls, tls_port = "", None
    if shutil.which("openssl"):
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        made = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                               "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                               "-keyout", key, "-out", cert], stdout=log, stderr=log)
        if made.returncode == 0:
            tls_port = free_port()
            tls = (f"  server {{ listen 127.0.0.1:{tls_port} ssl; ssl_certificate {cert}; ssl_certificate_key {key};\n"
                   f"           root {os.path.abspath(root)}; location / {{ }} }}\n")
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(f"""{user}daemon off;
worker_processes 2;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  keepalive_requests 1000000; keepalive_timeout 120s; sendfile on;
  types {{ application/x-tar tar; }}
  server {{ listen 127.0.0.1:{port}; root {os.path.abspath(root)}; location / {{ }}
           location /redirect/ {{ rewrite ^/redirect/(.*)$ /$1 redirect; }}
           location = /loop {{ return 302 /loop; }} }}
{tls}}}
""")
    p = start([nginx, "-p", d, "-c", os.path.join(d, "nginx.conf"), "-e", os.path.join(d, "error.log")], log)
    if not wait_port(port, p):
        return None, f"nginx did not start (see {d}/error.log)"
    if tls_port:
        extra.append(f"nginx_tls={tls_port}")
        extra.append(f"nginx_ca={os.path.join(d, 'cert.pem')}")
    return port, None


def find_moto():
    if os.environ.get("HDL_MOTO_SERVER"):
        return os.environ["HDL_MOTO_SERVER"]
    # The pinned venv (made, or found current, by make_moto_venv.sh), else one on hand.
    made = subprocess.run(["bash", os.path.join(HERE, "make_moto_venv.sh")], stdout=subprocess.PIPE,
                          stderr=sys.stderr, text=True)
    cands = [made.stdout.strip() if made.returncode == 0 else "",
             os.path.join(os.environ.get("TORCH2_VENV", os.path.join(ROOT, "build", "venv-torch2")), "bin", "moto_server"),
             shutil.which("moto_server") or ""]
    return next((c for c in cands if c and os.access(c, os.X_OK)), None)


def start_moto(root, log):
    moto = find_moto()
    if not moto:
        return None, "moto_server not found (bash tests/media/make_moto_venv.sh, or HDL_MOTO_SERVER)"
    if not shutil.which("curl"):
        return None, "the curl CLI is not installed (apt-get install curl)"
    port = free_port()
    p = start([moto, "-H", "127.0.0.1", "-p", str(port)], log)
    if not wait_port(port, p):
        return None, f"{moto} did not start"
    base = f"http://127.0.0.1:{port}"
    sign = ["--aws-sigv4", "aws:amz:us-east-1:s3", "--user", "testing:testing", "-sf", "-o", "/dev/null"]
    subprocess.run(["curl", *sign, "-X", "PUT", f"{base}/hdl"], check=True)
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            path = os.path.join(dirpath, name)
            key = os.path.relpath(path, root)
            subprocess.run(["curl", *sign, "-T", path, f"{base}/hdl/{key}"], check=True)
    return port, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--state", required=True)
    ap.add_argument("--fail-rate", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--stall-s", type=float, default=3.0)
    ap.add_argument("--latency-ms", type=float, default=0.0, help="the proxies' time to first byte")
    ap.add_argument("--parent", type=int, default=0)
    ap.add_argument("--lifetime", type=float, default=900)
    ap.add_argument("--want", default="nginx,moto", help="which servers, comma-separated")
    a = ap.parse_args()
    os.makedirs(a.state, exist_ok=True)
    log = open(os.path.join(a.state, "servers.log"), "a")
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    out = [f"pid={os.getpid()}"]
    try:
        starters = {"nginx": lambda: start_nginx(a.root, a.state, log), "moto": lambda: start_moto(a.root, log)}
        for name in a.want.split(","):
            port, why = starters[name]()
            if why:
                out.append(f"skip_{name}={why}")
                continue
            out.append(f"{name}={port}")
            pp = free_port()
            proxy = start([sys.executable, os.path.join(HERE, "fault_proxy.py"), "--upstream", f"127.0.0.1:{port}",
                           "--port", str(pp), "--fail-rate", str(a.fail_rate), "--seed", str(a.seed),
                           "--stall-s", str(a.stall_s), "--latency-ms", str(a.latency_ms), "--log", os.path.join(a.state, f"faults_{name}.log")], log)
            if wait_port(pp, proxy):
                out.append(f"proxy_{name}={pp}")
        with open(os.path.join(a.state, "servers.tmp"), "w") as f:
            f.write("\n".join(out + extra + ["ready"]) + "\n")
        os.replace(os.path.join(a.state, "servers.tmp"), os.path.join(a.state, "servers.txt"))
        end = time.time() + a.lifetime
        while not stop and time.time() < end:
            if a.parent:
                try:
                    os.kill(a.parent, 0)
                except OSError:
                    break
            time.sleep(0.2)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    main()
