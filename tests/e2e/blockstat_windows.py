#!/usr/bin/env python3
"""The kernel's own accounting of a disk's I/O, cut to time windows.

Source of truth: /sys/block/<disk>/stat (the kernel's Documentation/block/stat.rst): per direction
the requests completed ("ios") and the sum of their times from submission to completion in
milliseconds ("ticks", kept in nanoseconds by the kernel and printed in ms). ticks / ios is the
mean time of one request as the block layer saw it. It counts every hop below the system call
(the loop worker, FUSE, nbdkit, the card's delay) and nothing above it, so a tool's QD1 latency
over the same requests exceeds it only by the system call's entry and the tool's wake-up after
the completion (microseconds for a tool under SCHED_FIFO, measured 1 % of a 1.2 ms read), however
slow a busy machine makes the card: the reference a measurement can be held against in its own
window.

  blockstat_windows.py sample DISK OUT
      Samples /sys/block/DISK/stat every 5 ms until SIGTERM or SIGINT. OUT gets one line per
      sample: the Unix time (midpoint of the read), then the stat file's fields. The first line is
      written before the first sleep (wait for it before starting what is measured).
  blockstat_windows.py cut OUT START END
      The deltas between the last sample at or before START and the first at or after END (the
      window widened to the samples around it, never narrowed), as one line of JSON:
      {"seconds", "read_ios", "read_ticks_ms", "read_sectors", "write_ios", "write_ticks_ms",
      "write_sectors", "io_ticks_ms" (the time the disk had requests in flight, counted in
      jiffies), "flush_ios", "flush_ticks_ms"}; the flush fields are 0 on a kernel without them. Exit 1 when no sample brackets the window.
"""
import json
import signal
import sys
import time

# Field positions in /sys/block/<disk>/stat (Documentation/block/stat.rst).
# Flushes (fields 16-17, since Linux 5.5) are counted apart from writes: an fdatasync() waits for
# a write and a flush.
FIELDS = {"read_ios": 0, "read_sectors": 2, "read_ticks_ms": 3, "write_ios": 4, "write_sectors": 6,
          "write_ticks_ms": 7, "io_ticks_ms": 9, "flush_ios": 15, "flush_ticks_ms": 16}
INTERVAL = 0.005


def sample(disk, out_path):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    path = "/sys/block/%s/stat" % disk
    with open(out_path, "w") as out:
        while not stop:
            t0 = time.time()
            with open(path) as f:
                fields = f.read().split()
            t1 = time.time()
            out.write("%.6f %s\n" % ((t0 + t1) / 2, " ".join(fields)))
            out.flush()
            time.sleep(INTERVAL)


def cut(out_path, start, end):
    rows = []
    with open(out_path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 12:  # time + the 11 fields every kernel since 2.6 prints
                rows.append((float(p[0]), [int(x) for x in p[1:]]))
    before = [r for r in rows if r[0] <= start]
    after = [r for r in rows if r[0] >= end]
    if not before or not after:
        print("no samples around %.6f..%.6f (samples %s..%s)" % (
            start, end, rows[0][0] if rows else "-", rows[-1][0] if rows else "-"), file=sys.stderr)
        return 1
    a, b = before[-1], after[0]
    d = {"seconds": b[0] - a[0]}
    for name, i in FIELDS.items():
        d[name] = b[1][i] - a[1][i] if i < min(len(a[1]), len(b[1])) else 0
    print(json.dumps(d))
    return 0


def main(argv):
    if len(argv) == 4 and argv[1] == "sample":
        sample(argv[2], argv[3])
        return 0
    if len(argv) == 5 and argv[1] == "cut":
        return cut(argv[2], float(argv[3]), float(argv[4]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
