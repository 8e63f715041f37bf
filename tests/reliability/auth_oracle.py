#!/usr/bin/env python3
"""Basic auth against a running exporter over HTTPS: the two questions a password guesser asks.

1. Timing oracle: the median time of --rounds wrong-password requests for a configured user and
   for unknown names (a new name each time), printed with their ratio.
2. Lock-out: while --flood clients send wrong passwords for the user from 127.0.0.1 as fast as
   they can, a client at --source tries the correct (not yet verified) password, one request at a
   time, until it gets 200: the number of tries and the time are printed.

Exit status: 0 when the correct password got 200 within --max-tries; 1 otherwise. Standard library only.
"""
import argparse
import base64
import http.client
import socket
import ssl
import statistics
import sys
import threading
import time


def request(host, port, ctx, user, password, source=None, timeout=30):
    conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx,
                                       source_address=(source, 0) if source else None)
    tok = base64.b64encode(f"{user}:{password}".encode()).decode()
    t0 = time.monotonic()
    try:
        conn.request("GET", "/metrics", headers={"Authorization": "Basic " + tok, "Connection": "close"})
        r = conn.getresponse()
        r.read()
        status = r.status
    except (OSError, http.client.HTTPException):
        status = 0
    finally:
        conn.close()
    return status, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("address")
    ap.add_argument("--ca", required=True)
    ap.add_argument("--user", required=True)
    ap.add_argument("--password", required=True, help="the correct password")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--flood", type=int, default=4)
    ap.add_argument("--source", default="127.0.0.2")
    ap.add_argument("--max-tries", type=int, default=3)
    a = ap.parse_args()
    host, _, port = a.address.rpartition(":")
    port = int(port)
    ctx = ssl.create_default_context(cafile=a.ca)
    ctx.check_hostname = False

    known, unknown = [], []
    for i in range(a.rounds):
        s, t = request(host, port, ctx, a.user, f"wrong{i}")
        if s == 401:
            known.append(t)
        s, t = request(host, port, ctx, f"nobody{i}x{time.time_ns()}", "wrong")
        if s == 401:
            unknown.append(t)
    if known and unknown:
        k, u = statistics.median(known), statistics.median(unknown)
        print(f"timing: wrong password for {a.user!r} median {k * 1000:.0f} ms, unknown users median "
              f"{u * 1000:.0f} ms (ratio {u / k:.2f}; {len(known)} and {len(unknown)} answered 401)")
    else:
        print("timing: no 401 answers to compare")

    stop = threading.Event()
    counts = {}

    def flood(n):
        i = 0
        while not stop.is_set():
            s, _ = request(host, port, ctx, a.user, f"guess{n}-{i}")
            counts[s] = counts.get(s, 0) + 1
            i += 1

    threads = [threading.Thread(target=flood, args=(n,), daemon=True) for n in range(a.flood)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    tries, t0, status = 0, time.monotonic(), 0
    while tries < 100 and status != 200:
        tries += 1
        status, _ = request(host, port, ctx, a.user, a.password, source=a.source)
        if status != 200:
            time.sleep(0.1)
    took = time.monotonic() - t0
    stop.set()
    for t in threads:
        t.join(timeout=20)
    print(f"flood: {a.flood} clients, answers {dict(sorted(counts.items()))}; the correct password from "
          f"{a.source} got {status} after {tries} tr{'y' if tries == 1 else 'ies'} ({took:.2f} s)")
    return 0 if status == 200 and tries <= a.max_tries else 1


if __name__ == "__main__":
    sys.exit(main())
