#!/usr/bin/env python3
"""Starts the object-store tests' servers on 127.0.0.1 and keeps them up (stdlib only).

    object_store_servers.py --root DIR --state DIR [--fail-rate 0.2] [--seed 7] [--stall-s 3]
                            [--latency-ms 0]

- nginx (Debian's), as this user, with a temporary config on a free port, serving --root
  (range requests and keep-alive are nginx's own);
- moto's S3 server (moto_server from $HDL_MOTO_SERVER, else build/venv-moto, made by
  make_moto_venv.sh when PyPI or its wheelhouse has the pins, else the torch2 venv or PATH),
  with bucket "hdl" holding every file of --root (uploaded by boto3, which comes with moto):
  "moto" checks signatures as S3 does (INITIAL_NO_AUTH_ACTION_COUNT: an IAM user, its key, and
  temporary credentials from sts:AssumeRole, written as moto_key, moto_secret,
  moto_session_key, moto_session_secret, moto_session_token); "moto_anon" checks nothing
  (anonymous requests);
- one tests/media/fault_proxy.py in front of each.
Writes STATE/servers.txt, lines "name=value" (pid: this process; nginx, moto, moto_anon,
proxy_nginx, proxy_moto, proxy_moto_anon,
nginx_tls (HTTPS, self-signed for 127.0.0.1, its certificate nginx_ca; nginx also redirects
/redirect/<path> to /<path> and /loop to itself, and over HTTPS /to-http/<path> to plain HTTP's
/<path>): ports;
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
                   f"           root {os.path.abspath(root)}; location / {{ }}\n"
                   f"           location /to-http/ {{ rewrite ^/to-http/(.*)$ http://127.0.0.1:{port}/$1 redirect; }} }}\n")
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


# Run by moto's own python (boto3 comes with moto): with INITIAL_NO_AUTH_ACTION_COUNT set, the
# first calls are free; they make an IAM user with a key, a policy allowing everything, and a
# role the user may assume. Every later call must be signed by a known key (moto then checks
# SigV4 signatures as S3 does): the user's key uploads --root into bucket "hdl", and assumes
# the role for temporary credentials (a session token). Prints "name=value" lines.
MOTO_SETUP = r"""
import json, os, sys
import boto3
base, root, auth = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
kw = dict(endpoint_url=base, region_name="us-east-1")
anon = dict(aws_access_key_id="setup", aws_secret_access_key="setup")
out = []
if auth:
    iam = boto3.client("iam", **kw, **anon)
    iam.create_user(UserName="hdl")
    key = iam.create_access_key(UserName="hdl")["AccessKey"]
    allow = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    arn = iam.create_policy(PolicyName="all", PolicyDocument=json.dumps(allow))["Policy"]["Arn"]
    iam.attach_user_policy(UserName="hdl", PolicyArn=arn)
    trust = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
             "Principal": {"AWS": "arn:aws:iam::123456789012:user/hdl"}}]}
    iam.create_role(RoleName="reader", AssumeRolePolicyDocument=json.dumps(trust))
    iam.attach_role_policy(RoleName="reader", PolicyArn=arn)
    creds = dict(aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
    sts = boto3.client("sts", **kw, **creds)
    tmp = sts.assume_role(RoleArn="arn:aws:iam::123456789012:role/reader", RoleSessionName="hdl")["Credentials"]
    out += [f"key={key['AccessKeyId']}", f"secret={key['SecretAccessKey']}", f"session_key={tmp['AccessKeyId']}",
            f"session_secret={tmp['SecretAccessKey']}", f"session_token={tmp['SessionToken']}"]
else:
    creds = anon
s3 = boto3.client("s3", **kw, **creds)
s3.create_bucket(Bucket="hdl")
for dirpath, _, files in os.walk(root):
    for name in sorted(files):
        path = os.path.join(dirpath, name)
        s3.upload_file(path, "hdl", os.path.relpath(path, root))
print("\n".join(out))
"""

# The free calls MOTO_SETUP makes before moto checks signatures.
MOTO_FREE_CALLS = 6


def start_moto(root, log, auth):
    """moto's S3 server with bucket "hdl" holding every file of --root; with `auth`, checking
    signatures (the keys are returned as moto_key=..., moto_secret=..., moto_session_*=...)."""
    moto = find_moto()
    if not moto:
        return None, "moto_server not found (bash tests/media/make_moto_venv.sh, or HDL_MOTO_SERVER)", []
    python = os.path.join(os.path.dirname(moto), "python")
    if not os.access(python, os.X_OK):
        return None, f"no python beside {moto} (boto3 sets moto up)", []
    port = free_port()
    env = dict(os.environ)
    env.pop("INITIAL_NO_AUTH_ACTION_COUNT", None)
    if auth:
        env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(MOTO_FREE_CALLS)
    p = subprocess.Popen([moto, "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log,
                         stdin=subprocess.DEVNULL, env=env)
    procs.append(p)
    if not wait_port(port, p):
        return None, f"{moto} did not start", []
    made = subprocess.run([python, "-c", MOTO_SETUP, f"http://127.0.0.1:{port}", root, "1" if auth else "0"],
                          stdout=subprocess.PIPE, stderr=log, text=True)
    if made.returncode != 0:
        return None, f"moto's setup failed (see {log.name})", []
    name = "moto" if auth else "moto_anon"
    return port, None, [f"{name}_{line}" for line in made.stdout.split()]


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
        starters = {"nginx": lambda: start_nginx(a.root, a.state, log) + ([],),
                    "moto": lambda: start_moto(a.root, log, auth=True),
                    "moto_anon": lambda: start_moto(a.root, log, auth=False)}
        for name in a.want.split(","):
            port, why, lines = starters[name]()
            extra.extend(lines)
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
