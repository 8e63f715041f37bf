#!/usr/bin/env python3
"""Hostile HTTP clients against a running exporter, while correct scrapes are timed.

Holds open, for the whole run, and re-opens whatever the server closes (after a short pause, as a
patient attacker would):
  --idle N        TCP connections that send nothing
  --slowloris N   connections that send a request head one byte every --drip seconds
  --halfopen N    connections that send the first half of a TLS ClientHello and stop
  --pipeline N    connections that send ~20 KB of pipelined "GET /metrics" and read nothing
                  (receive buffer 4 KB, so the server's responses back up at once; over TLS
                  with --ca)
Meanwhile it makes --scrapes scrapes one after another (--interval apart), each on a new connection (and a new TLS
handshake with --ca), and prints their latency p50/p99, failures, and the exporter's RSS before
and after when --pid is given.

The hostile connections come from other loopback addresses than the scrapes (127.0.0.1): kind k
(idle, slowloris, half-open, pipelining = 1..4) from 127.0.0.<10k> ... 127.0.0.<10k + spread - 1>,
so that a per-client connection cap does not simply refuse them: --spread 1 puts each kind on one
address, to see the cap at work.

Exit status: 0 when every scrape answered 200 and p99 <= --max-p99 seconds; 1 otherwise; 2 for
usage errors. Python 3 standard library only.
"""
import argparse
import base64
import http.client
import selectors
import socket
import ssl
import sys
import threading
import time


def client_hello_prefix():
    """The first half of a real TLS ClientHello, made by this Python's ssl module."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="localhost")
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    return hello[: max(1, len(hello) // 2)]


PIPELINE_REQ = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
SLOW_HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: " + b"b" * 4000 + b"\r\n\r\n"


class Holder(threading.Thread):
    """Keeps `count` connections of one kind open from `source`, re-opening closed ones."""

    def __init__(self, kind, count, host, port, sources, drip, stop, tls_ctx=None):
        super().__init__(daemon=True)
        self.tls_ctx = tls_ctx if kind == "pipeline" else None  # the others never finish a handshake
        self.kind, self.count, self.host, self.port = kind, count, host, port
        self.sources, self.drip, self.stop = sources, drip, stop
        self.opened = 0
        self.closed_by_server = 0
        self.connect_errors = 0
        self.hello = client_hello_prefix() if kind == "halfopen" else b""

    def open_one(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.kind == "pipeline":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.bind((self.sources[(self.opened + self.connect_errors) % len(self.sources)], 0))
        s.settimeout(3)
        try:
            s.connect((self.host, self.port))
        except OSError:
            s.close()
            self.connect_errors += 1
            return None
        if self.tls_ctx is not None:
            try:
                s = self.tls_ctx.wrap_socket(s, server_hostname="localhost")
            except (OSError, ssl.SSLError):
                s.close()
                self.connect_errors += 1
                return None
        s.setblocking(False)
        try:
            if self.kind == "halfopen":
                s.send(self.hello)
            elif self.kind == "pipeline":
                data = PIPELINE_REQ * (20000 // len(PIPELINE_REQ))
                sent = 0
                while sent < len(data):  # best effort: the server may stop reading
                    try:
                        sent += s.send(data[sent:])
                    except (BlockingIOError, ssl.SSLWantWriteError, ssl.SSLWantReadError):
                        break
        except OSError:
            pass
        self.opened += 1
        return {"sock": s, "pos": 0, "next": time.monotonic() + self.drip}

    def run(self):
        sel = selectors.DefaultSelector()
        conns = {}
        pending = self.count  # connections to (re-)open
        reopen_at = 0.0
        while not self.stop.is_set():
            now = time.monotonic()
            if pending and now >= reopen_at:
                for _ in range(pending):
                    c = self.open_one()
                    if c is None:
                        continue
                    pending -= 1
                    conns[c["sock"].fileno()] = c
                    # Only a server close matters; the pipelining kind never reads its responses.
                    if self.kind != "pipeline":
                        sel.register(c["sock"], selectors.EVENT_READ)
                reopen_at = now + 0.5
            if self.kind == "slowloris":
                for c in list(conns.values()):
                    if now >= c["next"] and c["pos"] < len(SLOW_HEAD):
                        try:
                            c["sock"].send(SLOW_HEAD[c["pos"]: c["pos"] + 1])
                            c["pos"] += 1
                        except OSError:
                            pass
                        c["next"] = now + self.drip
            if self.kind == "pipeline":
                for fd, c in list(conns.items()):
                    try:  # the TCP state, without reading the responses: 1 is ESTABLISHED
                        gone = c["sock"].getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0] != 1
                    except OSError:
                        gone = True
                    if gone:
                        self._drop(conns, sel, fd, registered=False)
                        pending += 1
                if not conns:
                    time.sleep(0.1)
                self.stop.wait(0.2)
                continue
            for key, _ in sel.select(timeout=0.2):
                fd = key.fileobj.fileno()
                c = conns.get(fd)
                if c is None:
                    continue
                try:
                    data = c["sock"].recv(65536)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if not data:  # the server closed it (a timeout, a cap): open another
                    self._drop(conns, sel, fd, registered=True)
                    pending += 1
        for fd in list(conns):
            self._drop(conns, sel, fd, registered=self.kind != "pipeline", counted=False)

    def _drop(self, conns, sel, fd, registered, counted=True):
        c = conns.pop(fd)
        if registered:
            try:
                sel.unregister(c["sock"])
            except (KeyError, ValueError):
                pass
        c["sock"].close()
        if counted:
            self.closed_by_server += 1

    def held(self):
        return self.opened - self.closed_by_server


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def percentile(values, p):
    s = sorted(values)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def scrape(host, port, path, timeout, tls_ctx, auth):
    t0 = time.monotonic()
    try:
        if tls_ctx is not None:
            conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=tls_ctx)
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        headers = {"Connection": "close"}
        if auth:
            headers["Authorization"] = "Basic " + base64.b64encode(auth.encode()).decode()
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        body = resp.read()
        conn.close()
        status = resp.status
        ok = status == 200 and len(body) > 0
    except (OSError, http.client.HTTPException) as e:
        status, ok = type(e).__name__, False
    return time.monotonic() - t0, status, ok


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address", help="HOST:PORT of the exporter")
    ap.add_argument("--idle", type=int, default=64)
    ap.add_argument("--slowloris", type=int, default=64)
    ap.add_argument("--halfopen", type=int, default=64)
    ap.add_argument("--pipeline", type=int, default=8)
    ap.add_argument("--drip", type=float, default=2.0, help="seconds between slowloris bytes")
    ap.add_argument("--spread", type=int, default=4, help="source addresses per kind of hostile connection")
    ap.add_argument("--scrapes", type=int, default=100)
    ap.add_argument("--path", default="/metrics")
    ap.add_argument("--warmup", type=float, default=4.0,
                    help="seconds the attack runs before scraping (longer than the server's head deadline, "
                         "so that scrapes meet connections being dropped and re-opened)")
    ap.add_argument("--interval", type=float, default=0.1, help="seconds between scrapes")
    ap.add_argument("--timeout", type=float, default=10.0, help="per-scrape timeout, seconds")
    ap.add_argument("--ca", help="CA file: scrape over HTTPS")
    ap.add_argument("--auth", help="user:password for basic auth")
    ap.add_argument("--pid", type=int, help="exporter pid, for RSS before/after")
    ap.add_argument("--max-p99", type=float, default=1.0, help="pass/fail bound on p99, seconds")
    ap.add_argument("--target-p99", type=float, default=0.1, help="the target printed beside the result")
    a = ap.parse_args()
    host, _, port = a.address.rpartition(":")
    if not host or not port.isdigit():
        print(f"address {a.address!r}: want HOST:PORT", file=sys.stderr)
        return 2
    port = int(port)
    if not 1 <= a.spread <= 9:
        print("--spread: want 1 to 9", file=sys.stderr)
        return 2
    tls_ctx = None
    if a.ca:
        tls_ctx = ssl.create_default_context(cafile=a.ca)
        tls_ctx.check_hostname = False

    # One scrape before the attack: with basic auth the first costs a bcrypt (seconds on a loaded
    # machine), which says nothing about hostile clients.
    dt, status, ok = scrape(host, port, a.path, a.timeout, tls_ctx, a.auth)
    print(f"first scrape, before the attack (not counted): {status} in {dt * 1000:.1f} ms")
    rss_before = rss_kib(a.pid) if a.pid else None
    stop = threading.Event()
    kinds = (("idle", a.idle), ("slowloris", a.slowloris), ("halfopen", a.halfopen), ("pipeline", a.pipeline))
    holders = [Holder(kind, n, host, port, [f"127.0.0.{10 * (k + 1) + j}" for j in range(a.spread)], a.drip, stop,
                      tls_ctx)
               for k, (kind, n) in enumerate(kinds) if n > 0]
    for h in holders:
        h.start()
    time.sleep(a.warmup)
    held_start = {h.kind: h.held() for h in holders}

    lat, failures = [], []
    t_start = time.monotonic()
    for _ in range(a.scrapes):
        dt, status, ok = scrape(host, port, a.path, a.timeout, tls_ctx, a.auth)
        lat.append(dt)
        if not ok:
            failures.append(status)
        time.sleep(a.interval)
    elapsed = time.monotonic() - t_start
    rss_after = rss_kib(a.pid) if a.pid else None
    held_end = {h.kind: h.held() for h in holders}
    stop.set()
    for h in holders:
        h.join(timeout=5)

    p50, p99 = percentile(lat, 50), percentile(lat, 99)
    print("hostile connections held (at first scrape -> at last): " +
          ", ".join(f"{h.kind} {held_start[h.kind]}->{held_end[h.kind]} "
                    f"(opened {h.opened}, closed by server {h.closed_by_server}, connect errors {h.connect_errors})"
                    for h in holders))
    print(f"scrapes: {len(lat)} in {elapsed:.1f} s, {len(failures)} failed"
          + (f" ({', '.join(sorted(set(map(str, failures))))})" if failures else ""))
    print(f"scrape latency: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {max(lat) * 1000:.1f} ms "
          f"(target p99 < {a.target_p99 * 1000:.0f} ms: {'met' if p99 < a.target_p99 else 'missed'}; "
          f"pass/fail bound {a.max_p99 * 1000:.0f} ms)")
    if rss_before is not None:
        print(f"exporter RSS: {rss_before} KiB before, {rss_after} KiB under the attack")
    return 0 if not failures and p99 <= a.max_p99 else 1


if __name__ == "__main__":
    sys.exit(main())
