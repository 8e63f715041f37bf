#!/usr/bin/env python3
"""Kernel-message catalogue: every printk format string of the storage paths a Raspberry Pi uses.

  scripts/kernel-catalogue.py TREE --series 6.1            # diff against the checked-in rows
  scripts/kernel-catalogue.py TREE --series 6.1 --write    # rewrite them
  scripts/kernel-catalogue.py TREE --series rpi-6.6 --source 'raspberrypi/linux@<commit>' --files F...

TREE is the top of a kernel source tree (Debian: apt-get download linux-source-6.12; dpkg-deb
--fsys-tarfile ... | tar -x; tar -xJf linux-source-6.12.tar.xz 'linux-source-6.12/drivers/mmc/*' ...;
only the files in AREAS are read). The rows go to tests/fixtures/kernel-messages/<series>.tsv, one
per call site (pr_debug/dev_dbg excluded): the text the kernel prints before the format (dev_printk
prefix, pr_fmt, the filesystem's own wrapper), the format, one synthetic value per conversion where
the argument tells what it is (the mmc host name, a disk name, __func__), and the kind the exporter
counts it as or `benign` with the reason. Kinds come from KINDS below, the hand-made part: a new
kernel series is this command, and the rows it adds show in the diff with the rule that matched.
tests/unit/kmsg_catalogue_test.cpp synthesises a line from every row and checks the classifier.
"""
import argparse
import difflib
import fnmatch
import os
import re
import sys

# (area, glob under the tree). Headers are read for the call sites of their static inlines.
AREAS = [
    ("mmc-core", "drivers/mmc/core/*.c"),
    ("mmc-host", "drivers/mmc/host/sdhci.c"),
    ("mmc-host", "drivers/mmc/host/sdhci-pltfm.c"),
    ("mmc-host", "drivers/mmc/host/sdhci-iproc.c"),
    ("mmc-host", "drivers/mmc/host/sdhci-brcmstb.c"),
    ("mmc-host", "drivers/mmc/host/cqhci*.c"),
    ("mmc-host", "drivers/mmc/host/bcm2835.c"),
    ("mmc-host", "drivers/mmc/host/bcm2835-sdhost.c"),
    ("mmc-host", "drivers/mmc/host/bcm2835-mmc.c"),
    ("usb-storage", "drivers/usb/storage/*.c"),
    ("usb-hub", "drivers/usb/core/hub.c"),
    ("scsi", "drivers/scsi/sd.c"),
    ("scsi", "drivers/scsi/scsi_error.c"),
    ("scsi", "drivers/scsi/scsi_lib.c"),
    ("scsi", "drivers/scsi/constants.c"),
    ("nvme", "drivers/nvme/host/core.c"),
    ("nvme", "drivers/nvme/host/pci.c"),
    ("block", "block/blk-core.c"),
    ("block", "block/blk-mq.c"),
    ("block", "fs/buffer.c"),
    ("ext4", "fs/ext4/*.c"),
    ("jbd2", "fs/jbd2/*.c"),
    ("btrfs", "fs/btrfs/*.c"),
    ("f2fs", "fs/f2fs/*.c"),
    ("fat", "fs/fat/*.c"),
    ("exfat", "fs/exfat/*.c"),
    ("ratelimit", "lib/ratelimit.c"),
    ("ratelimit", "kernel/printk/printk.c"),
]

# Print macros: name -> (level or None when the level is an argument, index of the format argument,
# prefix style). Levels: 0 emerg .. 7 debug. Styles pick the prefix the kernel prints (prefix()).
LEVELS = {"EMERG": 0, "ALERT": 1, "CRIT": 2, "ERR": 3, "WARNING": 4, "NOTICE": 5, "INFO": 6, "DEBUG": 7,
          "CONT": None, "DEFAULT": 4}
MACROS = {}
for lvl, suffixes in ((0, ["emerg"]), (1, ["alert"]), (2, ["crit"]), (3, ["err"]), (4, ["warn", "warning"]),
                      (5, ["notice"]), (6, ["info"])):
    for s in suffixes:
        for variant in ("", "_ratelimited", "_once"):
            MACROS[f"pr_{s}{variant}"] = (lvl, 0, "pr")
            MACROS[f"dev_{s}{variant}"] = (lvl, 1, "dev")
        MACROS[f"btrfs_{s}"] = (lvl, 1, "btrfs")
        for variant in ("_rl", "_in_rcu", "_rl_in_rcu"):
            MACROS[f"btrfs_{s}{variant}"] = (lvl, 1, "btrfs")
        MACROS[f"f2fs_{s}"] = (lvl, 1, "f2fs")
        MACROS[f"f2fs_{s}_ratelimited"] = (lvl, 1, "f2fs")
        MACROS[f"exfat_{s}"] = (lvl, 1, "exfat")
MACROS.update({
    "printk": (None, 0, "raw"), "printk_ratelimited": (None, 0, "raw"), "printk_once": (None, 0, "raw"),
    "_printk": (None, 0, "raw"), "printk_deferred": (None, 0, "raw"), "pr_cont": (None, 0, "cont"),
    "sd_printk": (None, 2, "sd"), "sdev_printk": (None, 2, "sdev"), "scmd_printk": (None, 2, "scmd"),
    "shost_printk": (None, 2, "shost"), "starget_printk": (None, 2, "starget"),
    "ext4_error": (2, 1, "ext4_error"), "ext4_error_inode": (2, 3, "ext4_error_inode"),
    "ext4_error_inode_block": (2, 4, "ext4_error_inode"), "ext4_error_file": (2, 3, "ext4_error_inode"),
    "ext4_warning": (4, 1, "ext4_warning"), "ext4_warning_inode": (4, 1, "ext4_warning"),
    "ext4_msg": (None, 2, "ext4_msg"), "ext4_grp_locked_error": (2, 4, "ext4_error"),
    "ext4_abort": (2, 2, "ext4_error"),
    "btrfs_handle_fs_error": (2, 2, "btrfs_fs_error"),
    "f2fs_printk": (None, 1, "f2fs"),
    "fat_msg": (None, 2, "fat"), "fat_msg_ratelimit": (None, 2, "fat"),
    "fat_fs_error": (3, 1, "fat_error"), "fat_fs_error_ratelimit": (3, 1, "fat_error"),
    "exfat_fs_error": (3, 1, "exfat_error"), "exfat_fs_error_ratelimit": (3, 1, "exfat_error"),
    "mmc_log_error": (3, 1, "raw"),
    # drivers/usb/storage/uas.c: scmd_printk(KERN_INFO, "%s %d uas-tag %d inflight:..." , prefix, ...);
    # each caller's prefix is its own message (uas_eh_abort_handler is the abort of a timed-out command).
    "uas_log_cmd_state": (6, 1, "uas_state"),
})
CALL_RE = re.compile(r"\b(" + "|".join(sorted(MACROS, key=len, reverse=True)) + r")\s*\(")

# Identifiers that expand to text inside format strings.
FORMAT_MACROS = {"PRIu64": "llu", "PRIx64": "llx", "PRId64": "lld", "__stringify(x)": "x"}

# Names the synthetic lines use; the classifier test expects exactly these.
NAMES = {"mmc_host": "mmc0", "mmc_disk": "mmcblk0", "mmc_part": "mmcblk0p2", "sd_disk": "sda", "sd_part": "sda1",
         "nvme_disk": "nvme0n1", "nvme_part": "nvme0n1p2", "nvme_ctrl": "nvme0", "pci": "0000:01:00.0",
         "sdev": "0:0:0:0", "shost": "host0", "starget": "target0:0:0", "usb_dev": "2-1", "usb_intf": "2-1:1.0"}


def strip_comments(text):
    """C comments out, strings and characters kept, offsets of lines preserved."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def call_args(text, start):
    """Top-level arguments of the call whose '(' is at text[start]; (args, end) or None."""
    depth, i, args, cur = 0, start, [], []
    while i < len(text):
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
            if depth == 1 and c == "(":
                i += 1
                continue
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i
        elif c == "," and depth == 1:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return None


TOKEN_RE = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([A-Za-z_]\w*(?:\([^()]*\))?))')


def literal(arg, defines):
    """(level, text) of a format argument made of string literals and macros; None if it is not one."""
    level, parts, pos = None, [], 0
    arg = arg.strip()
    if not arg or arg[0] not in "\"" and not re.match(r"(KERN_|[A-Z_][A-Z0-9_]*\s*\")", arg):
        if arg not in defines:
            return None
    while pos < len(arg):
        m = TOKEN_RE.match(arg, pos)
        if not m:
            return None
        pos = m.end()
        if m.group(1) is not None:
            parts.append(m.group(1))
            continue
        ident = m.group(2)
        if ident.startswith("KERN_"):
            if ident[5:] in LEVELS:
                if LEVELS[ident[5:]] is not None:
                    level = LEVELS[ident[5:]]
                continue
            return None
        if ident in FORMAT_MACROS:
            parts.append(FORMAT_MACROS[ident])
        elif ident in defines:
            sub = literal(defines[ident], defines)
            if sub is None:
                return None
            if sub[0] is not None:
                level = sub[0]
            parts.append(sub[1])
        else:
            return None
        if pos < len(arg) and arg[pos:].strip() == "":
            break
    text = "".join(parts)
    text = bytes(text, "utf-8").decode("unicode_escape")
    # A leading KERN_SOH level inside the literal ("\0013").
    m = re.match(r"^\x01([0-7c])", text)
    if m:
        if m.group(1) != "c":
            level = int(m.group(1))
        text = text[2:]
    return level, text


CONV_RE = re.compile(r"%(?:%|[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?(?:hh|h|ll|l|L|z|j|t)?"
                     r"(?:p[A-Za-z]*|[diouxXcsfeEgGn]))")


def conversions(fmt):
    return [m.group(0) for m in CONV_RE.finditer(fmt) if m.group(0) != "%%" and "*" not in m.group(0)]


def functions(text):
    """(offset, name) of every function definition start, for naming the enclosing function."""
    return [(m.start(), m.group(1)) for m in re.finditer(r"^[A-Za-z_][^;{}()=]*?\b(\w+)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*\{",
                                                           text, re.M)]


def enclosing(funcs, pos):
    name = ""
    for off, n in funcs:
        if off > pos:
            break
        name = n
    return name


def guess_value(expr, area, conv, function):
    """The synthetic value an argument expression stands for, or '' for the conversion's default."""
    e = expr.replace(" ", "")
    if "mmc_hostname" in e or "mmc_dev_name" in e:
        return NAMES["mmc_host"]
    if e == "__func__" or e == "__FUNCTION__":
        return function
    if "disk_name" in e or "rq_disk" in e or e.endswith("->disk") or "bdevname" in e or "s_id" in e:
        if area.startswith("mmc"):
            return NAMES["mmc_disk"]
        if area == "nvme":
            return NAMES["nvme_disk"]
        if area in ("ext4", "jbd2", "btrfs", "f2fs", "fat", "exfat", "block"):
            return NAMES["mmc_part"] if area in ("ext4", "jbd2", "fat") else NAMES["sd_part"]
        return NAMES["sd_disk"]
    if conv.endswith("pg"):
        return NAMES["mmc_part"] if area in ("ext4", "jbd2", "fat") else NAMES["sd_part"]
    if re.fullmatch(r"KERN_[A-Z]+", e):
        return "<empty>"  # the level passed as a %s argument: prints nothing
    if area == "btrfs" and "statestr" in e:
        return " state A"
    if area == "ratelimit" and "missed" in e:
        return "7"
    if area == "ratelimit" and e == "func":
        return "blk_print_req_error"  # a rate-limited call site of a counted message
    if "blk_status_to_str" in e or "blk_errors" in e:
        return "I/O"
    if e == "caller":
        return "blk_update_request"
    branches = re.findall(r'"([^"]*)"', e) if "?" in e else []
    if branches and conv == "%s":
        # cond ? "new" : "reset": the branch that is a signal, else the first
        return "reset" if "reset" in branches else branches[0]
    if "j_devname" in e:
        return NAMES["mmc_part"] + "-8"
    return ""


def prefix_of(style, args, area, path, pr_fmt):
    """What the kernel prints before the format, for the names above."""
    dev = args[0].replace(" ", "") if args else ""
    if style == "pr":
        return pr_fmt
    if style in ("raw", "cont"):
        return ""
    if style == "dev":
        if area == "nvme":
            if "ctrl" in dev and "device" in dev:
                return f"nvme {NAMES['nvme_ctrl']}: "
            return f"nvme {NAMES['pci']}: "
        if area == "usb-hub":
            if "port_dev" in dev or "port" in dev:
                return "usb usb2-port1: "
            if "hub_dev" in dev or "intfdev" in dev or "hub->" in dev:
                return "hub 2-0:1.0: "
            return f"usb {NAMES['usb_dev']}: "
        if area == "usb-storage":
            base = os.path.basename(path)
            if "udev" in dev and "intf" not in dev:
                return f"usb {NAMES['usb_dev']}: "
            drv = "uas" if base == "uas.c" else "usb-storage"
            return f"{drv} {NAMES['usb_intf']}: "
        if area == "scsi":
            if "sdev_gendev" in dev or "sdp" in dev or "sdev" in dev:
                return f"sd {NAMES['sdev']}: "
            if "disk_to_dev" in dev or "sdkp" in dev:
                return f"sd {NAMES['sdev']}: "
            return f"scsi {NAMES['shost']}: "
        if area == "mmc-core":
            if "card->dev" in dev:
                return f"mmcblk {NAMES['mmc_host']}:0001: "
            if "class_dev" in dev:
                return f"mmc_host {NAMES['mmc_host']}: "
            return "sdhci-iproc fe340000.mmc: "
        if area == "mmc-host":
            base = os.path.basename(path)
            if "class_dev" in dev:
                return f"mmc_host {NAMES['mmc_host']}: "
            drv = {"sdhci-brcmstb.c": "sdhci-brcmstb 1000fff000.mmc", "bcm2835.c": "bcm2835 3f202000.mmc",
                   "bcm2835-sdhost.c": "sdhost-bcm2835 3f202000.mmc",
                   "bcm2835-mmc.c": "mmc-bcm2835 3f300000.mmcnr"}.get(base, "sdhci-iproc fe340000.mmc")
            return drv + ": "
        return "platform dev: "
    if style == "sd":
        return f"sd {NAMES['sdev']}: [{NAMES['sd_disk']}] "
    if style == "sdev":
        return f"sd {NAMES['sdev']}: "
    if style == "scmd":
        return f"sd {NAMES['sdev']}: [{NAMES['sd_disk']}] tag#0 "
    if style == "shost":
        return f"scsi {NAMES['shost']}: "
    if style == "starget":
        return f"scsi {NAMES['starget']}: "
    part = NAMES["mmc_part"] if area in ("ext4", "jbd2", "fat") else NAMES["sd_part"]
    if style == "ext4_error":
        return f"EXT4-fs error (device {part}): ext4_func:100: comm kworker/u8:2: "
    if style == "ext4_error_inode":
        return f"EXT4-fs error (device {part}): ext4_func:100: inode #12: comm kworker/u8:2: "
    if style == "ext4_warning":
        return f"EXT4-fs warning (device {part}): ext4_func:100: "
    if style == "ext4_msg":
        return f"EXT4-fs ({part}): "
    if style == "btrfs":
        word = {0: "emergency", 1: "alert", 2: "critical", 3: "error", 4: "warning", 5: "notice", 6: "info"}
        return "BTRFS {level} (device " + part + "): "
    if style == "btrfs_fs_error":
        return f"BTRFS: error (device {part}) in btrfs_func:100: errno=-5 IO failure ("
    if style == "f2fs":
        return f"F2FS-fs ({part}): "
    if style == "fat":
        return f"FAT-fs ({part}): "
    if style == "fat_error":
        return f"FAT-fs ({part}): error, "
    if style == "exfat":
        return f"exFAT-fs ({part}): "
    if style == "exfat_error":
        return f"exFAT-fs ({part}): error, "
    return ""


BTRFS_WORD = {0: "emergency", 1: "alert", 2: "critical", 3: "error", 4: "warning", 5: "notice", 6: "info"}


def scan_file(tree, rel, area, source):
    text = open(os.path.join(tree, rel), encoding="utf-8", errors="replace").read()
    code = strip_comments(text)
    defines = {}
    for m in re.finditer(r"^#\s*define\s+(\w+)\s+(\"(?:[^\"\\]|\\.)*\")\s*$", code, re.M):
        defines[m.group(1)] = m.group(2)
    pr_fmt = ""
    m = re.search(r"^#\s*define\s+pr_fmt\(fmt\)\s+(.*?)\s*fmt\s*$", code, re.M)
    if m:
        parts = []
        for tok in re.findall(r'"((?:[^"\\]|\\.)*)"|(\w+)', m.group(1)):
            if tok[0] or not tok[1]:
                parts.append(tok[0])
            elif tok[1] == "KBUILD_MODNAME":
                parts.append(os.path.splitext(os.path.basename(rel))[0])
            elif tok[1] in defines:
                parts.append(defines[tok[1]].strip('"'))
        pr_fmt = "".join(parts)
    funcs = functions(code)
    rows = []
    for m in CALL_RE.finditer(code):
        name = m.group(1)
        # Definitions and declarations of the wrappers themselves are not call sites.
        line_start = code.rfind("\n", 0, m.start()) + 1
        if re.match(r"\s*#\s*define", code[line_start:m.start()]):
            continue
        parsed = call_args(code, m.end() - 1)
        if not parsed:
            continue
        args, _ = parsed
        level, fmt_index, style = MACROS[name]
        function = enclosing(funcs, m.start())
        if style == "uas_state":
            if len(args) < 3 or re.search(r"\bint\b|\bchar\b", args[0]):
                continue  # the declaration and definition
            what = function if args[1] == "__func__" else (literal(args[1], defines) or (None, ""))[1]
            if not what:
                continue
            rows.append({"area": area, "file": rel, "line": code.count("\n", 0, m.start()) + 1, "function": function,
                         "call": name, "level": level, "prefix": f"sd {NAMES['sdev']}: [{NAMES['sd_disk']}] tag#0 ",
                         "format": what + " %d uas-tag %d inflight:%s ", "suffix": "", "values": ["", "", " CMD"]})
            continue
        if function == "uas_log_cmd_state":
            continue
        lit = None
        # The format is the first argument from fmt_index on that is a literal.
        for k in range(min(fmt_index, len(args) - 1), len(args)):
            lit = literal(args[k], defines)
            if lit is not None:
                fmt_index = k
                break
        if lit is None:
            continue
        lvl, fmt = lit
        if level is None:
            level = lvl
        if level is None and fmt_index > 0:
            # sd_printk(KERN_ERR, ...): the level is its own argument.
            lv = literal(args[0], defines)
            level = lv[0] if lv else None
        if level is None:
            level = 4  # printk without a level: the default message loglevel
        if level >= 7:
            continue
        fmt = fmt.rstrip("\n")
        if not fmt.strip() or style == "cont":
            continue
        rest = args[fmt_index + 1:]
        convs = conversions(fmt)
        values = []
        for i, conv in enumerate(convs):
            values.append(guess_value(rest[i], area, conv, function) if i < len(rest) else "")
        pre = prefix_of(style, args, area, rel, pr_fmt)
        if style == "btrfs":
            pre = pre.replace("{level}", BTRFS_WORD.get(level, "error"))
        suffix = ")" if style == "btrfs_fs_error" else ""
        line = code.count("\n", 0, m.start()) + 1
        rows.append({"area": area, "file": rel, "line": line, "function": function, "call": name, "level": level,
                     "prefix": pre, "format": fmt, "suffix": suffix, "values": values})
    return rows


# The hand-made part: (area glob, format regex, kind or 'benign', reason). First match wins, so
# specific rules come before an area's default. Kinds are the exporter's (parsers/kmsg.h).
KINDS = [
    # --- rate limit: the counts of lines the kernel dropped
    ("ratelimit", r"callbacks suppressed", "suppressed", "lib/ratelimit.c ___ratelimit: N lines of the named call site dropped"),
    ("ratelimit", r"messages? suppressed|dropped", "benign", "printk's own console/ring accounting, not one call site"),
    ("ratelimit", r".", "benign", "printk/ratelimit machinery"),
    # --- block layer
    ("block", r"^%s error, dev %s, sector %llu", "io_error", "block layer I/O error (blk_print_req_error)"),
    ("block", r"error, dev %s, sector", "io_error", "block layer I/O error"),
    ("block", r"^Buffer I/O error on dev", "io_error", "fs/buffer.c buffer_io_error"),
    ("block", r"^lost page write due to I/O error|lost async page write", "io_error", "fs/buffer.c write error"),
    ("block", r".", "benign", "block layer state or API misuse warning, not a medium error"),
    # --- mmc core
    ("mmc-core", r"^%s: (sbc|cmd|data) error %d$", "benign", "MMC_IOC_CMD ioctl from userspace (mmc-utils): the request's own error"),
    ("mmc-core", r"^mmc_erase: ", "benign", "erase/discard command error: reported to the caller, no data lost"),
    ("mmc-core", r"^%s: (tried to (HW |SW )?reset card|recovery failed)", "card_removed", "reset of the card failed / block recovery failed"),
    ("mmc-*", r"Failed to enable CQE|failed to initialize", "benign", "setup failure with an errno: no I/O on the card"),
    ("mmc-*", r"(^|\s)error %d", "errno", "mmc error with errno: -110 timeout, -84 crc, else io_error"),
    ("mmc-core", r"^%s: r/w command failed, status = ", "io_error", "old mmc block wording (3.x)"),
    ("mmc-core", r"^%s: card %04x removed|^%s: Card removed", "card_removed", "card removed"),
    ("mmc-core", r"^%s: running CQE recovery", "cqe_recovery", "command queue recovery"),
    ("mmc-core", r"^%s: Card stuck|^%s: Card stuck being busy|^Card stuck in wrong state|timed out (waiting|sending)|^%s: Timeout |^%s: card never left busy state", "timeout", "card did not answer in time"),
    ("mmc-core", r"^%s: (reset done|Reset |resetting)|^%s: (re)?tuning", "benign", "state change, its cause is logged as an error"),
    ("mmc-core", r"^%s: (new |host does not support|Problem (switching|reading)|unrecognised|Card ready|card claims|Skipping)", "benign", "card identification and setup"),
    ("mmc-core", r".", "benign", "mmc core setup, negotiation or state; errors with an errno are the rows above"),
    # --- mmc hosts
    ("mmc-host", r"^(%s: )?%s transfer error - HSTS %0?8?x", "crc_error", "bcm2835-sdhost CRC7/CRC16/FIFO error (data->error = -EILSEQ)"),
    ("mmc-host", r"^(%s: )?%s timeout error - HSTS %0?8?x|^PIO %s timeout - EDM|^%s: timeout \(%d ms\)", "timeout", "bcm2835-sdhost read/write timeout"),
    ("mmc-host", r"^%s: (PIO (read|write) timeout|wait_transfer_complete - still waiting)", "timeout", "bcm2835-sdhost transfer stuck"),
    ("mmc-host", r"^(%s: )?unexpected command %d error", "crc_error", "bcm2835 sdhost command error other than a timeout (CRC7/CRC16/FIFO: -EILSEQ)"),
    ("mmc-host", r"^%s: reducing overclock", "overclock_reduced", "bcm2835-sdhost dropped sd_overclock after errors"),
    ("mmc-host", r"^(%s: )?(command %d never completed|command %d timeout|previous command \(%d\) not complete|wait_transfer_complete - still waiting)", "timeout", "bcm2835(-sdhost) command timeout"),
    ("mmc-host", r"^%s: Card removed during transfer", "card_removed", "sdhci card-detect: the card was pulled during a transfer"),
    ("mmc-host", r"[Tt]imeout waiting for hardware|never completed|never released inhibit|^%s: cqhci: timeout for tag", "timeout", "host controller interrupt/command timeout"),
    ("mmc-host", r"^timeout waiting for hardware interrupt|^timeout waiting for (data|busy)|^timeout for ", "timeout", "upstream bcm2835 timeout"),
    ("mmc-host", r"^%s: cqhci: (CQE error|error IRQ status|halt failed|CQE failed to (exit|clear))|^%s: cqhci: Failed to (halt|clear)", "cqe_error", "cqhci error, the recovery that follows is cqe_recovery"),
    ("mmc-host", r"^%s: cqhci: CQE stuck on", "cqe_error", "cqhci_off: the engine did not halt"),
    ("mmc-host", r"^%s: (ADMA error|Unexpected interrupt|Got (command|data) interrupt|Card is consuming too much power|Tuning failed)", "benign", "host controller diagnostic; the request's error is logged by the mmc core"),
    ("mmc-host", r".", "benign", "host controller probe, register dump or setup"),
    # --- USB
    ("usb-hub", r"^%s (%s|SuperSpeed%s%s) USB device number %d using %s$", "usbnew", "hub_port_init: 'reset' when the device was configured (counted), 'new' at first enumeration"),
    ("usb-hub", r"^reset %s%s%s speed USB device number|^reset %s USB device number", "reset", "usb_reset_device: a device (e.g. a USB-SATA bridge) reset by its driver's error handling"),
    ("usb-hub", r"^reset (high|full|low|Super|SuperSpeed)", "reset", "USB device reset"),
    ("usb-hub", r"device descriptor read/%s, error %d|device not accepting address|unable to enumerate", "benign", "enumeration failure of a new device: no disk yet"),
    ("usb-hub", r"^(cannot reset|cannot disable|Cannot enable|disabled by hub)", "benign", "hub port state; a disk's reset is the row above"),
    ("usb-hub", r".", "benign", "hub/port enumeration and power state"),
    ("usb-storage", r"^uas_eh_abort_handler %d uas-tag", "timeout", "uas_eh_abort_handler: the SCSI layer aborts a command that timed out"),
    ("usb-storage", r" %d uas-tag %d inflight:", "benign", "uas command state on a failed submit/completion; the SCSI error handling and I/O error that follow are counted"),
    ("usb-storage", r"^%s start$", "uas_eh", "uas error handler start: device reset"),
    ("usb-storage", r"^%s FAILED err %d|^%s FAILED to get lock err %d", "benign", "the end of a uas device reset already counted at its start"),
    ("usb-storage", r"^%s: timed out$", "timeout", "uas_pre_reset/uas_suspend: commands did not complete in time"),
    ("usb-storage", r"^%s success$", "benign", "the reset that started succeeded (counted at start)"),
    ("usb-storage", r".", "benign", "usb-storage/uas probe, quirks and protocol diagnostics"),
    # --- SCSI
    ("scsi", r"^tag#%d (abort|Abort) (scheduled|command)|^%s: aborting command|^scsi_eh_%d: aborting", "timeout", "command abort after a timeout"),
    ("scsi", r"^(\w+: )?(timing out command|tag#%d timing out command)|^timing out command, waited", "timeout", "command timed out"),
    ("scsi", r"^(scsi_eh_%d: )?(Sending BDR|device reset|target reset|bus reset|host reset)|^%s: (Sending BDR|Sending target reset|Sending BRST|Sending HRST)", "reset", "SCSI error handler reset"),
    ("scsi", r"^Medium access timeout failure. Offlining disk", "card_removed", "sd_eh_action: the disk is taken offline after repeated timeouts"),
    ("scsi", r"^Device offlined - not ready after error recovery|^rejecting I/O to offline device", "card_removed", "the disk is offline"),
    ("scsi", r"^(%s)?Unhandled (sense|error) code|^tag#%d (FAILED|UNKNOWN)|^FAILED Result:|Result: hostbyte=", "benign", "SCSI command failure detail; the block layer's I/O error line is counted"),
    ("scsi", r"Medium Error|Unrecovered read error|^Sense Key : Medium", "benign", "sense detail; the block layer's I/O error line is counted"),
    ("scsi", r".", "benign", "SCSI probe, caching mode, capacity and sense detail"),
    # --- NVMe
    ("nvme", r"^I/O %d (\(%s\) )?QID %d timeout, (aborting|reset controller|completion polled|disable controller)", "timeout", "nvme_timeout"),
    ("nvme", r"^I/O tag %d \(%04x\) (opcode %#x \(%s\) )?QID %d timeout, (aborting|reset controller|completion polled|disable controller)", "timeout", "nvme_timeout (6.6+ wording)"),
    ("nvme", r"^(Abort status: 0x%x|Abort status)", "benign", "status of an abort already counted as timeout"),
    ("nvme", r"^controller is down; will reset", "reset", "nvme_timeout: the controller stopped; reset"),
    ("nvme", r"^(Fw activation timeout, reset controller|resetting controller)", "reset", "controller reset"),
    ("nvme", r"^Removing after probe failure", "card_removed", "the controller is removed after a failed reset"),
    ("nvme", r"^frozen state error detected, reset controller", "reset", "PCI error recovery resets the controller"),
    ("nvme", r"^%s: %s\(0x%x\) @ LBA %llu, %\w+ blocks, %s \(sct 0x%x / sc 0x%x\)", "io_error", "nvme_log_error: an I/O command failed"),
    ("nvme", r"^%s\(0x%x\) @ LBA %llu, %\w+ blocks, %s \(sct 0x%x / sc 0x%x\)", "io_error", "nvme_log_error: an I/O command failed"),
    ("nvme", r".", "benign", "controller identification, features, admin commands and quirks"),
    # --- filesystems
    ("ext4", r"^EXT4-fs error \(device %s\)", "filesystem_error", "ext4 error wrapper"),
    ("ext4", r"^EXT4-fs warning \(device %s\).*I/O error", "io_error", "ext4 I/O error warning"),
    ("ext4", r"^Remounting filesystem read-only", "remount_ro", "ext4 remounted read-only after an error"),
    ("ext4", r"^previous I/O error", "benign", "repeats a superblock write error already counted"),
    ("ext4", r"^Buffer I/O error on dev", "io_error", "fs/ext4/page-io.c buffer_io_error"),
    ("ext4", r"I/O error", "io_error", "ext4 I/O error (superblock, journal device, inode writes)"),
    ("ext4", r"^error count since last fsck|^initial error at|^last error at", "benign", "daily error summary (repeats every 24 h)"),
    ("ext4", r".", "benign", "ext4 mount options, features, quota and recovery notes"),
    ("jbd2", r"^Aborting journal on device", "remount_ro", "journal aborted: the filesystem goes read-only"),
    ("jbd2", r"^JBD2: (Error %d detected when updating journal superblock|I/O error when updating journal superblock|Detected IO errors while flushing file data)", "io_error", "journal write error"),
    ("jbd2", r"^JBD2: (Invalid checksum|journal transaction %u on %s is corrupt)", "filesystem_error", "journal corrupt (found in recovery)"),
    ("jbd2", r"^JBD2: (IO error %d recovering block|Failed to read block at offset)", "io_error", "journal read error in recovery"),
    ("jbd2", r".", "benign", "journal setup and state"),
    ("btrfs", r"^forced readonly$", "remount_ro", "btrfs went read-only after an error"),
    ("btrfs", r"^BTRFS: error \(device", "filesystem_error", "btrfs_handle_fs_error: the error that forces read-only (counted there)"),
    ("btrfs", r"^BTRFS: (?!error \(device)", "benign", "btrfs message naming no device: module, leak and self checks"),
    ("btrfs", r"^bdev %s errs: wr %u, rd %u, flush %u, corrupt %u, gen %u", "io_error", "btrfs device error counters grew"),
    ("btrfs", r"(csum failed|checksum verify failed|csum mismatch|bad tree block|parent transid verify failed|level verify failed|unable to fixup|i/o error|IO failure|failed to repair)", "filesystem_error", "btrfs checksum/tree/I-O error"),
    ("btrfs", r".", "level", "btrfs: error/critical/alert/emergency level is filesystem_error, lower levels benign"),
    ("f2fs", r"^(Stopped filesystem due to reason|Remounting filesystem read-only)", "remount_ro", "f2fs stopped writing after an error"),
    ("f2fs", r"(?i)corrupt|inconsisten|sanity.?check|fsck|invalid blkaddr", "filesystem_error", "f2fs found an inconsistency"),
    ("f2fs", r".", "benign", "f2fs mount, GC and recovery notes"),
    ("fat", r"^Filesystem has been set read-only", "remount_ro", "FAT set read-only after an error"),
    ("fat", r"^error, ", "filesystem_error", "fat_fs_error"),
    ("fat", r"read failed|^unable to read|^Directory bread\(", "io_error", "FAT could not read a block (sb_bread failed)"),
    ("fat", r".", "benign", "FAT mount options and codepage notes"),
    ("exfat", r"^Filesystem has been set read-only", "remount_ro", "exFAT set read-only after an error"),
    ("exfat", r"^error, ", "filesystem_error", "exfat_fs_error"),
    ("exfat", r"read failed|^unable to read|^Directory bread\(", "io_error", "exFAT could not read a block (sb_bread failed)"),
    ("exfat", r".", "benign", "exFAT mount notes"),
]

# Kinds the classifier returns; the rules above may name a computed kind (errno, level, uas_*).
KIND_NAMES = {"io_error", "timeout", "crc_error", "card_removed", "overclock_reduced", "filesystem_error",
              "remount_ro", "under_voltage", "cqe_recovery", "reset", "cqe_error", "suppressed"}

# Formats of a row, as printed, whose computed kind depends on the synthetic value of an argument.
def resolve_kind(rule_kind, row):
    if rule_kind == "errno":
        # The synthetic errno of mmc rows is -110 (ETIMEDOUT): see VALUES in the test.
        return "timeout", "mmc error with errno -110 (the test's value): timeout; -84 crc_error, else io_error"
    if rule_kind == "level":
        if row["level"] <= 3:
            return "filesystem_error", "btrfs error-level message"
        return "benign", "btrfs warning/notice/info: state, not an error"
    if rule_kind == "usbnew":
        if row["values"] and row["values"][0] == "reset":
            return "reset", None
        return "benign", "new USB device"
    if rule_kind == "uas_state":
        return "benign", "uas command state dump; abort/reset handlers are counted by their own rows"
    if rule_kind == "uas_eh":
        return "reset", "uas_eh_device_reset_handler start"
    if rule_kind == "uas_eh_fail":
        return "reset", "uas reset/task management failure"
    return rule_kind, None


# Rows whose wrapper decides the kind, whatever the format says: (prefix regex, kind, reason).
PREFIX_KINDS = [
    (r"^EXT4-fs error ", "filesystem_error", "ext4_error*: every ext4 error"),
    (r"^(FAT|exFAT)-fs \(\w+\): error, ", "filesystem_error", "fat_fs_error/exfat_fs_error"),
    (r"^BTRFS: error ", "filesystem_error", "btrfs_handle_fs_error"),
]


def expect(row):
    """Attribution the classifier must give the synthetic line: device=, host=, controller= or ''."""
    pre, vals = row["prefix"], row["values"]
    if row["kind"] in ("benign", "suppressed"):
        return ""
    m = re.search(r"\[(\w+)\] ", pre)
    if m:
        return "device=" + m.group(1)
    m = re.search(r"\(device (\w+)\)|^(?:EXT4|FAT|exFAT|F2FS)-fs \((\w+)\)", pre)
    if m:
        return "device=" + (m.group(1) or m.group(2))
    m = re.match(r"^(sd|scsi|usb|uas|usb-storage|hub|nvme|sdhci-iproc|sdhci-brcmstb|bcm2835|sdhost-bcm2835|mmc-bcm2835) (\S+): ", pre)
    if m:
        return "controller=" + m.group(2)
    for v in vals:
        if v == NAMES["mmc_host"] and row["format"].startswith("%s"):
            return "host=" + v
        if re.fullmatch(r"(mmcblk\d+(p\d+)?|sd[a-z]+\d*|nvme\d+n\d+(p\d+)?)", v):
            return "device=" + v
        if re.fullmatch(r"(mmcblk\d+p\d+)-\d+", v):
            return "device=" + v.rsplit("-", 1)[0]
    return ""


def classify_rows(rows):
    for row in rows:
        fmt = row["format"]
        for rx, kind, reason in PREFIX_KINDS:
            if re.search(rx, row["prefix"]):
                row["kind"], row["reason"] = kind, reason
                break
        else:
            classify_format(row)
        row["expect"] = expect(row)


def printed(row):
    """The format with the conversions whose value the script knows filled in (__func__ names)."""
    vals = iter(row["values"])
    return CONV_RE.sub(lambda m: m.group(0) if m.group(0) == "%%" or "*" in m.group(0) else (next(vals, "") or m.group(0)),
                       row["format"])


def classify_format(row):
    # f2fs words its inconsistencies through __func__ ("sanity_check_inode: ..."): match what it prints.
    fmt = printed(row) if row["area"] == "f2fs" else row["format"]
    if True:
        for area, rx, kind, reason in KINDS:
            if fnmatch.fnmatch(row["area"], area) and re.search(rx, fmt):
                k, r = resolve_kind(kind, row)
                row["kind"] = k
                row["reason"] = r or reason
                break
        else:
            row["kind"], row["reason"] = "benign", "no rule"


def esc(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


HEADER = ["series", "area", "file", "function", "call", "level", "prefix", "format", "suffix", "values", "kind",
          "expect", "reason"]


def to_tsv(series, rows, source):
    out = [f"# source: {source}",
           "# generated by scripts/kernel-catalogue.py; kinds from its KINDS table. values: one per conversion, "
           "'' = the test's default for the conversion",
           "\t".join(HEADER)]
    seen = set()
    for r in rows:
        key = (r["file"], r["function"], r["prefix"], r["format"], r["level"])
        if key in seen:
            continue
        seen.add(key)
        out.append("\t".join([series, r["area"], r["file"], r["function"], r["call"], str(r["level"]), esc(r["prefix"]),
                              esc(r["format"]), esc(r["suffix"]), "|".join(esc(v) for v in r["values"]), r["kind"],
                              r["expect"], r["reason"]]))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree")
    ap.add_argument("--series", required=True)
    ap.add_argument("--source", help="where the tree came from (the TSV's # source: line)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--out", help="TSV path (default tests/fixtures/kernel-messages/<series>.tsv)")
    args = ap.parse_args()
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = args.out or os.path.join(repo, "tests/fixtures/kernel-messages", args.series + ".tsv")
    rows = []
    for area, pattern in AREAS:
        d = os.path.join(args.tree, os.path.dirname(pattern))
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            rel = os.path.join(os.path.dirname(pattern), name)
            # mmc_test.c is the mmc host test module (not loaded in service).
            if fnmatch.fnmatch(rel, pattern) and not rel.endswith("mmc_test.c"):
                rows.extend(scan_file(args.tree, rel, area, args.source))
    classify_rows(rows)
    text = to_tsv(args.series, rows, args.source or f"kernel tree {os.path.basename(os.path.abspath(args.tree))}")
    old = open(out).read() if os.path.exists(out) else ""
    diff = list(difflib.unified_diff(old.splitlines(True), text.splitlines(True), out + " (checked in)",
                                     out + " (from tree)", n=0))
    sys.stdout.writelines(diff)
    n = sum(1 for l in text.splitlines() if l and not l.startswith("#")) - 1
    kinds = {}
    for l in text.splitlines()[3:]:
        k = l.split("\t")[10]
        kinds[k] = kinds.get(k, 0) + 1
    print(f"{args.series}: {n} rows; " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())), file=sys.stderr)
    if args.write:
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
