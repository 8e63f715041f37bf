#!/usr/bin/env python3
"""Unit tests of the emulated-Pi test's own logic (tests/e2e/pi_qemu_e2e.py) that runs without a
guest: when TimerWatch takes the BCM2835 system timer's compare register C3 for lost, the GDB
remote protocol client it re-arms C3 through (against a stand-in gdbstub on a local socket, in
the packet format of QEMU's: "$data#checksum", "+" acknowledgements, stop replies sent
unasked after a connection), and the histogram count of slow probe reads.

  pi_qemu_harness_test.py     exit 0 when every test passed
"""
import os
import socket
import sys
import threading
import unittest

sys.argv[1:] = ["pi0", "/nonexistent", "/nonexistent"]  # the harness reads BOARD IMAGE WORK
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pi_qemu_e2e as h  # noqa: E402

sys.argv[1:] = []


class Overdue(unittest.TestCase):
    def test_compare_behind_the_counter_with_no_match_is_lost(self):
        # read on a hung emulated Zero: C3 stayed while CLO ran on, CS 0
        self.assertEqual(h.TimerWatch.overdue(0, 0x0c9c764a, 0x0c8f7d26), 0x0c9c764a - 0x0c8f7d26)

    def test_lost_across_the_counter_wrap(self):
        self.assertEqual(h.TimerWatch.overdue(0, 0x00000010, 0xfffffff0), 0x20)

    def test_a_pending_match_is_not_lost(self):
        # the match bit of channel 3 set: the interrupt is there, the kernel has not acked it yet
        self.assertIsNone(h.TimerWatch.overdue(1 << 3, 0x0c9c764a, 0x0c8f7d26))
        # another channel's bit says nothing about channel 3
        self.assertIsNotNone(h.TimerWatch.overdue(1 << 1, 0x0c9c764a, 0x0c8f7d26))

    def test_a_compare_ahead_of_the_counter_is_not_lost(self):
        self.assertIsNone(h.TimerWatch.overdue(0, 0x0c8f7d26, 0x0c9c764a))
        # the farthest the kernel programs (~31 minutes) is still ahead
        self.assertIsNone(h.TimerWatch.overdue(0, 0x10000000, 0x10000000 + 1_900_000_000))

    def test_a_compare_never_programmed_this_boot_is_not_lost(self):
        # QEMU's reset leaves C3 at 0 until the kernel's timer driver writes it
        self.assertIsNone(h.TimerWatch.overdue(0, 0x00abcdef, 0))

    def test_equal_is_not_behind(self):
        self.assertIsNone(h.TimerWatch.overdue(0, 1234, 1234))


def packet(data):
    return b"$%s#%02x" % (data, sum(data) % 256)


class FakeGdbStub(threading.Thread):
    """Answers like QEMU's gdbstub: a stop reply to "?" followed by a second one unasked, "OK" to
    the physical memory mode and to writes, memory contents to reads, "OK" to detach. Records
    every packet it received and whether each of its own packets was acknowledged."""

    def __init__(self, memory):
        super().__init__(daemon=True)
        self.memory = memory  # {address: 32-bit word}
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(1)
        self.port = self.srv.getsockname()[1]
        self.received, self.acks, self.bad_checksums = [], 0, 0

    def run(self):
        conn, _ = self.srv.accept()
        self.srv.close()
        buf = b""
        with conn:
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                buf += chunk
                self.acks += buf.count(b"+")
                buf = buf.replace(b"+", b"")
                while b"#" in buf and len(buf) >= buf.index(b"#") + 3:
                    start, end = buf.index(b"$"), buf.index(b"#")
                    data, csum = buf[start + 1:end], buf[end + 1:end + 3]
                    buf = buf[end + 3:]
                    if int(csum, 16) != sum(data) % 256:
                        self.bad_checksums += 1
                    conn.sendall(b"+")
                    self.received.append(data.decode())
                    for reply in self.answer(data.decode()):
                        conn.sendall(packet(reply.encode()))

    def answer(self, cmd):
        if cmd == "?":
            return ["T02thread:01;", "T05thread:01;"]
        if cmd.startswith("Qqemu.PhyMemMode:1") or cmd == "D":
            return ["OK"]
        if cmd.startswith("m"):
            addr, length = (int(x, 16) for x in cmd[1:].split(","))
            return ["".join(self.memory.get(a, 0).to_bytes(4, "little").hex() for a in range(addr, addr + length, 4))]
        if cmd.startswith("M"):
            where, data = cmd[1:].split(":")
            addr = int(where.split(",")[0], 16)
            self.memory[addr] = int.from_bytes(bytes.fromhex(data), "little")
            return ["OK"]
        return [""]


class GdbRemoteClient(unittest.TestCase):
    def test_reads_writes_and_detaches_skipping_unasked_stop_replies(self):
        base = 0x20003000
        stub = FakeGdbStub({base: 0, base + 4: 0x0ffb0c64, base + 0x18: 0x0c8f7d26})
        stub.start()
        gdb = h.GdbRemote(stub.port)
        gdb.physical()
        self.assertEqual(gdb.read32(base, 2), [0, 0x0ffb0c64])  # not the unasked "T05" stop reply
        self.assertEqual(gdb.read32(base + 0x18, 1), [0x0c8f7d26])
        gdb.write32(base + 0x18, 0x0ffb104c)
        gdb.close()
        stub.join(10)
        self.assertEqual(stub.memory[base + 0x18], 0x0ffb104c)
        self.assertEqual(stub.received, ["?", "Qqemu.PhyMemMode:1", "m20003000,8", "m20003018,4",
                                         "M20003018,4:4c10fb0f", "D"])
        self.assertEqual(stub.bad_checksums, 0)
        self.assertEqual(stub.acks, 7)  # every packet of the stub's acknowledged (two for "?")


class ReadsOver(unittest.TestCase):
    def exposition(self, le_01, count):
        return h.parse('diskprobe_probe_latency_seconds_bucket{device="mmcblk0",probe="randread",le="0.05"} 400\n'
                       'diskprobe_probe_latency_seconds_bucket{device="mmcblk0",probe="randread",le="0.1"} %d\n'
                       'diskprobe_probe_latency_seconds_bucket{device="mmcblk0",probe="randread",le="+Inf"} %d\n'
                       'diskprobe_probe_latency_seconds_count{device="mmcblk0",probe="randread"} %d\n'
                       % (le_01, count, count))

    def test_operations_beyond_the_bound(self):
        self.assertEqual(h.reads_over(self.exposition(509, 512), "randread", 0.1), 3)
        self.assertEqual(h.reads_over(self.exposition(512, 512), "randread", 0.1), 0)

    def test_a_bound_that_is_no_bucket_is_unknown(self):
        self.assertIsNone(h.reads_over(self.exposition(509, 512), "randread", 0.2))
        self.assertIsNone(h.reads_over({}, "randread", 0.1))


if __name__ == "__main__":
    unittest.main(verbosity=2)
