#!/usr/bin/env python3
"""Unit tests of the emulated-Pi test's own logic (tests/e2e/pi_qemu_e2e.py) that runs without a
guest: when TimerWatch takes the BCM2835 system timer's compare register C3 for lost, the GDB
remote protocol client it re-arms C3 through (against a stand-in gdbstub on a local socket, in
the packet format of QEMU's: "$data#checksum", "+" acknowledgements, stop replies sent
unasked after a connection), the histogram count of slow probe reads, when a guest's shutdown
is taken for stuck, the vCPU states read from QEMU's monitor, the console lines that blame the
exporter's own stop for a held shutdown, and the kernel reports found in a memory dump.

  pi_qemu_harness_test.py     exit 0 when every test passed
"""
import os
import socket
import struct
import sys
import tempfile
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


# HMP `info registers -a` as QEMU 7.2 printed it, read from running guests: raspi3b (aarch64,
# four Cortex-A53, idle; registers after X01 left out) and raspi0 (arm, one ARM1176; its VFP
# registers left out).
HMP_AARCH64 = """
CPU#0
 PC=ffff800008cda26c X00=0000000000000005 X01=ffff000037d73618
PSTATE=400000c5 -Z-- NS EL1h     FPCR=00000000 FPSR=00000010
CPU#1
 PC=ffff800008cda26c X00=0000000000000005 X01=ffff000037d92618
PSTATE=400000c5 -Z-- NS EL1h     FPCR=00000000 FPSR=00000010
"""
HMP_ARM = """
CPU#0
R00=c113f8a8 R01=c1d0c678 R02=00000000 R03=00000000
R04=c113f8a8 R05=c0e14870 R06=00000001 R07=c1205f28
R08=c0e14860 R09=00000000 R10=00000000 R11=dc8d9dc4
R12=32c5d040 R13=dc8d9d40 R14=c015796c R15=c01561d0
PSR=60000093 -ZC- A NS svc32
s00=00000000 s01=00000000 d00=0000000000000000
FPSCR: 00000000
"""


class FakeGuest:
    """What wait_restart and cpu_states use of Guest: console_text(), proc.poll(), qmp()."""

    def __init__(self, consoles, exits_at=None, hmp=""):
        self.consoles, self.polls, self.exits_at, self.hmp = consoles, 0, exits_at, hmp
        self.proc = self

    def console_text(self):
        self.polls += 1
        return self.consoles[min(self.polls, len(self.consoles)) - 1]

    def poll(self):
        return 0 if self.exits_at is not None and self.polls >= self.exits_at else None

    def qmp(self, command, **arguments):
        if not self.hmp:
            raise OSError("QMP socket gone")
        return self.hmp


class FakeClock:
    """time.monotonic and time.sleep of a clock that moves only when slept on."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now

    def sleep(self, s):
        self.now += s


class WaitRestart(unittest.TestCase):
    def setUp(self):
        self.real_time, h.time = h.time, FakeClock()
        self.real_silence, h.SHUTDOWN_SILENCE = h.SHUTDOWN_SILENCE, 60

    def tearDown(self):
        h.time, h.SHUTDOWN_SILENCE = self.real_time, self.real_silence

    def test_the_kernels_restart_line_after_the_command(self):
        before = "boot log\nroot@pi3b:~# "
        shutdown = before + "[  OK  ] Stopped diskprobe_exporter\n[  201.5] reboot: Restarting system\n"
        g = FakeGuest([before, before + "[  OK  ] Stopped", shutdown])
        self.assertEqual(h.wait_restart(g, len(before), 1200), "restarted")
        self.assertEqual(g.polls, 3)

    def test_a_new_boots_first_line_without_the_restart_line(self):
        # the Pi 3B's console after "Reached target reboot.target": nothing until the next boot
        before = "root@pi3b:~# "
        g = FakeGuest([before, before + "[  OK  ] Reached target reboot.target - System Reboot.\n",
                       before + "[  OK  ] Reached target reboot.target\n[    8.881724] initramfs: init started\n"])
        self.assertEqual(h.wait_restart(g, len(before), 1200), "restarted")

    def test_a_restart_line_of_an_earlier_reboot_does_not_count(self):
        before = "[  180.1] reboot: Restarting system\n[    4.3] initramfs: init started\nsecond boot\n"
        g = FakeGuest([before])
        self.assertEqual(h.wait_restart(g, len(before), 1200), "stuck")
        self.assertEqual(h.time.now - 1000.0, 65)  # the first poll 5 s past SHUTDOWN_SILENCE

    def test_a_shutdown_that_keeps_printing_is_not_stuck(self):
        # systemd redraws "A stop job is running" every second: the console grows without a restart
        g = FakeGuest(["x" * n for n in range(1, 1000)])
        self.assertEqual(h.wait_restart(g, 1, 300), "timeout")

    def test_silence_after_some_progress_is_stuck(self):
        g = FakeGuest(["a", "ab", "abc"])
        self.assertEqual(h.wait_restart(g, 1, 1200), "stuck")
        self.assertEqual(h.time.now - 1000.0, 75)  # last change at 10 s, then SHUTDOWN_SILENCE

    def test_qemu_gone(self):
        self.assertEqual(h.wait_restart(FakeGuest(["a"], exits_at=2), 1, 1200), "exited")


class CpuStates(unittest.TestCase):
    def test_aarch64(self):
        self.assertEqual(h.cpu_states(FakeGuest([""], hmp=HMP_AARCH64)),
                         {0: "pc ffff800008cda26c psr 400000c5 -Z-- NS EL1h",
                          1: "pc ffff800008cda26c psr 400000c5 -Z-- NS EL1h"})

    def test_arm(self):
        self.assertEqual(h.cpu_states(FakeGuest([""], hmp=HMP_ARM)), {0: "pc c01561d0 psr 60000093 -ZC- A NS svc32"})

    def test_no_answer(self):
        self.assertEqual(h.cpu_states(FakeGuest([""])), {})


class ExporterStopHeld(unittest.TestCase):
    # systemd's status lines on a serial console: coloured, the waiting line redrawn with "\r"
    def test_the_exporters_stop_job(self):
        line = ("\r[\x1b[0;1;31m*\x1b[0m\x1b[0;31m*    \x1b[0m] A stop job is running for "
                "\x1b[0;1;39mdiskprobe_exporter: Prometheus exporter\x1b[0m (12s / 1min 30s)")
        self.assertIsNone(h.EXPORTER_STOP_HELD.search(h.plain(line).replace("diskprobe", "systemd-journald")))
        self.assertTrue(h.EXPORTER_STOP_HELD.search(h.plain(line)))
        timed_out = "[\x1b[0;1;31m TIME \x1b[0m] Timed out stopping \x1b[0;1;39mdiskprobe_exporter: P\x1b[0m."
        self.assertTrue(h.EXPORTER_STOP_HELD.search(h.plain(timed_out)))

    def test_another_units_stop_job(self):
        line = "A stop job is running for Journal Service (12s / 1min 30s)\n[  OK  ] Stopped diskprobe_exporter"
        self.assertIsNone(h.EXPORTER_STOP_HELD.search(line))


class MemoryReports(unittest.TestCase):
    """A guest memory dump holding the kernel's log buffer as Linux 6.1 keeps it: each record's
    text after an 8-byte id, no terminator; the same records again where a reader copied them."""

    RECORDS = [b"INFO: task systemd-shutdow:1 blocked for more than 120 seconds.",
               b"      Not tainted 6.1.0-57-arm64 #1 Debian 6.1.192-3",
               b"task:systemd-shutdow state:D stack:0     pid:1     ppid:0      flags:0x00000008",
               b"Call trace:", b" __switch_to+0xf0/0x170", b" __schedule+0x340/0x940", b" schedule+0x58/0xf0",
               b" mmc_wait_for_req_done+0x3c/0x90 [mmc_core]"]

    def dump(self, *chunks):
        fd, path = tempfile.mkstemp()
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
        self.addCleanup(os.unlink, path)
        return path

    def ring(self):
        return b"".join(struct.pack("<Q", 0xfffff15e00000000 + i) + r for i, r in enumerate(self.RECORDS))

    def test_a_hung_task_with_its_trace_once(self):
        path = self.dump(b"\x00" * 4096, self.ring(), b"\x00" * 4096, self.ring(), b"\xff" * 100)
        found = h.memory_reports(path)
        self.assertEqual([t for t, _ in found], ["INFO: task systemd-shutdow:1 blocked for more than 120 seconds",
                                                 "task:systemd-shutdow state:D stack:0     pid:1     ppid:0      flags:0x00000008"])
        self.assertIn("__schedule+0x340/0x940", found[0][1])
        self.assertIn("mmc_wait_for_req_done+0x3c/0x90 [mmc_core]", found[1][1])

    def test_a_healthy_guest_has_none(self):
        # the kernel's own format strings, in every dump (the first four read from a Pi 3B's: kernel/rcu,
        # kernel/hung_task.c, kernel/sched; the last made up, at level 0)
        rodata = (b"\x00\x013rcu: INFO: %s self-detected stall on CPU\n\x00\x013INFO: task %s:%d blocked for more than "
                  b"%ld seconds.\n\x00\x016task:%-15.15s state:%c\x00\x013rcu: INFO: Stall ended before state dump start\n"
                  b"\x00\x010Internal error: Oops - BUG\x00")
        self.assertEqual(h.memory_reports(self.dump(b"\x00" * 64, rodata, b"[    8.8] initramfs: init started\n")), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
