#!/usr/bin/env python3
"""A fault-injecting HTTP/1.1 proxy for the object-store tests (stdlib only, loopback only).

    fault_proxy.py --upstream 127.0.0.1:PORT --port PORT [--fail-rate 0.2] [--seed 7]
                   [--stall-s 3] [--latency-ms 0] [--log FILE]

Forwards every request (method, path, headers, body) to the upstream server over keep-alive
connections and returns its answer, except that a request fails, with probability fail-rate
drawn from random.Random(seed) in arrival order, in one of five ways:
  drop   the connection is closed with no answer
  500    "500 Internal Server Error"
  503    S3's "503 SlowDown" with its XML error body
  stall  nothing is sent for stall-s seconds, then the connection is closed
  cut    the upstream's status and headers (its full Content-Length), half the body, close
A path containing "__auth__" always gets S3's "403 InvalidAccessKeyId"; one containing
"__headers__" gets the request's path as it came ("path: /a/../b") and its headers, "Name:
value" lines padded with spaces to 4096 bytes (200, never a fault), for the tests to see what a
client sends (also logged: "headers METHOD PATH Name=value ..."); one containing
"__redirect__/<status>/<scheme>/<host:port>/<rest>" gets that status with Location
<scheme>://<host:port>/<rest>; one containing "__region__/<region>/" gets S3's 301
PermanentRedirect with x-amz-bucket-region <region> unless signed for that region (then it is
forwarded); "__size__/<delta>/<path>" is <path>, with a HEAD that says delta bytes more;
"__excess__/<path>" is <path> with bytes after its body (the connection is poisoned); one with
"__silent__" gets nothing at all (a dead server). Each fault is logged (one line: the fault, the method and the
path) to --log, for the tests to count.
--latency-ms delays every answer's first byte by that long (an object store's time to first
byte: S3's is 20-60 ms); each new high of requests being answered at once is logged as
"in_flight N", for the tests to see how many requests a client has in flight.
"""
import argparse
import http.client
import http.server
import random
import socketserver
import sys
import threading
import time
import urllib.parse

FAULTS = ["drop", "500", "503", "stall", "cut"]
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "upgrade"}


def s3_error(code, message):
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><RequestId>fault-proxy</RequestId></Error>").encode()


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def log_message(self, *args):
        pass

    def upstream(self):
        conn = getattr(self, "_upstream", None)
        if conn is None:
            host, port = self.server.upstream.rsplit(":", 1)
            conn = self._upstream = http.client.HTTPConnection(host, int(port), timeout=60)
        return conn

    def fault(self):
        with self.server.lock:
            r = self.server.rng.random()
            kind = self.server.rng.choice(FAULTS) if r < self.server.fail_rate else None
        if kind and self.server.log:
            with self.server.lock, open(self.server.log, "a") as f:
                f.write(f"{kind} {self.command} {self.path}\n")
        return kind

    def answer(self, status, body, content_type="application/xml"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        with self.server.lock:
            self.server.active += 1
            if self.server.active > self.server.peak:
                self.server.peak = self.server.active
                if self.server.log:
                    with open(self.server.log, "a") as f:
                        f.write(f"in_flight {self.server.peak}\n")
        try:
            if self.server.latency_s > 0:
                time.sleep(self.server.latency_s)
            self.answer_any()
        finally:
            with self.server.lock:
                self.server.active -= 1

    def answer_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if "__auth__" in self.path:
            return self.answer(403, s3_error("InvalidAccessKeyId",
                                             "The AWS Access Key Id you provided does not exist in our records."))
        if "__redirect__/" in self.path:  # __redirect__/<status>/<scheme>/<host:port>/<rest>: a redirect there
            code, scheme, hostport, rest = (self.path.split("__redirect__/", 1)[1].split("/", 3) + ["", "", "", ""])[:4]
            hostport = urllib.parse.unquote(hostport)  # an S3 key's ":" comes as %3A
            self.send_response(int(code))
            self.send_header("Location", f"{scheme}://{hostport}/{rest}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "__region__/" in self.path:  # __region__/<region>/...: S3's answer to a request signed for another region
            region = self.path.split("__region__/", 1)[1].split("/", 1)[0]
            scope = self.headers.get("Authorization", "").split("Credential=", 1)[-1].split(",", 1)[0].split("/")
            if len(scope) < 3 or scope[2] != region:
                body = s3_error("PermanentRedirect", "The bucket you are attempting to access must be addressed using "
                                "the specified endpoint.")
                self.send_response(301)
                self.send_header("x-amz-bucket-region", region)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)
                return
        if "__silent__" in self.path:  # a dead server: the connection accepted, then nothing
            time.sleep(600)
            self.close_connection = True
            return
        excess = "__excess__/" in self.path  # __excess__/<path>: <path>, its body followed by bytes past its length
        if excess:
            self.path = self.path.replace("__excess__/", "", 1)
        if "__size__/" in self.path:  # __size__/<delta>/<path>: a HEAD that lies about the size by delta
            head, rest = self.path.split("__size__/", 1)
            delta, rest = rest.split("/", 1)
            self.path = head + rest
            if self.command == "HEAD":
                conn = self.upstream()
                conn.request("HEAD", self.path, headers={k: v for k, v in self.headers.items() if k.lower() not in HOP})
                resp = conn.getresponse()
                resp.read()
                self.send_response(resp.status, resp.reason)
                for k, v in resp.getheaders():
                    if k.lower() not in HOP and k.lower() != "content-length":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(int(resp.getheader("Content-Length") or 0) + int(delta)))
                self.end_headers()
                return
        if "__headers__" in self.path:
            if self.server.log:  # what reached this server, for the tests to look through
                with self.server.lock, open(self.server.log, "a") as f:
                    f.write(f"headers {self.command} {self.path} " + " ".join(f"{k}={v}" for k, v in self.headers.items()) + "\n")
            text = (f"path: {self.path}\n" + "".join(f"{k}: {v}\n" for k, v in self.headers.items())).encode()[:4096]
            return self.answer(200, text.ljust(4096, b" "), "text/plain")
        kind = self.fault()
        if kind == "drop":
            self.close_connection = True
            return
        if kind == "stall":
            time.sleep(self.server.stall_s)
            self.close_connection = True
            return
        if kind == "500":
            return self.answer(500, b"injected fault", "text/plain")
        if kind == "503":
            return self.answer(503, s3_error("SlowDown", "Please reduce your request rate."))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
        for attempt in range(2):  # the upstream may have closed an idle connection
            try:
                conn = self.upstream()
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError):
                self._upstream = None
                if attempt:
                    raise
        self.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        full = int(resp.getheader("Content-Length") or len(data))
        self.send_header("Content-Length", str(full))
        self.end_headers()
        if self.command == "HEAD":
            return
        if excess:
            self.wfile.write(data + b"garbage past Content-Length\r\n" * 4)
            return
        if kind == "cut" and len(data) > 1:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--upstream", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--fail-rate", type=float, default=0.2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--stall-s", type=float, default=3.0)
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--log", default="")
    a = p.parse_args()
    srv = Server(("127.0.0.1", a.port), Proxy)
    srv.upstream, srv.fail_rate, srv.stall_s, srv.log = a.upstream, a.fail_rate, a.stall_s, a.log
    srv.rng, srv.lock = random.Random(a.seed), threading.Lock()
    srv.latency_s, srv.active, srv.peak = a.latency_ms / 1000.0, 0, 0
    print(f"fault_proxy: 127.0.0.1:{a.port} -> {a.upstream}, fail rate {a.fail_rate}, seed {a.seed}, "
          f"latency {a.latency_ms} ms",
          file=sys.stderr, flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
