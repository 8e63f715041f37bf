#!/usr/bin/env bash
# The command line and its manual page (docs/diskprobe_exporter.1, installed by the package):
#  - every long option that `--help` and `bench --help` print is described in the man page, and
#    the man page describes no option the program does not have (the page is written by hand, so
#    this is what keeps it true);
#  - the collectors the man page lists are the program's --collector.* flags;
#  - the page's version is the program's, and man(1) formats it without a warning (lintian's check);
#  - exit codes: --help/--version 0, usage errors 2, an invalid --config.file 1 (the EXIT STATUS
#    section).
# Usage: tests/e2e/cli_man_e2e.sh <diskprobe_exporter binary>
BIN=$(realpath "${1:?usage: cli_man_e2e.sh <diskprobe_exporter>}")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
# Exit codes are what this test reads: a failing command is data here, not the end of the script.
set +e
PAGE="$SRC/docs/diskprobe_exporter.1"
WORK=$E2E_WORK

"$BIN" --help >"$WORK/help.txt" 2>&1; rc_help=$?
"$BIN" bench --help >"$WORK/bench-help.txt" 2>&1; rc_bench_help=$?
check "--help exits 0 (rc $rc_help), bench --help exits 0 (rc $rc_bench_help)" test "$rc_help:$rc_bench_help" = 0:0

# Long options as the program prints them (CLI11: "  --name TYPE  text" or "  -h,--help").
# --collector.X,--no-collector.X pairs are checked against the page's collector list below.
options() { grep -oE '^ +(-[a-z],)?--[a-z][a-z0-9.-]*' "$1" | sed -E 's/^ +(-[a-z],)?//' | grep -v -- '-collector\.' | sort -u; }
# Options in the page: "\-\-name" in the roff source; the collector template (\-\-collector. \fINAME)
# is left out here.
page_options() {
  sed -n "/^\\.SH $1\$/,/^\\.SH /p" "$PAGE" | grep -oE '\\-\\-[a-z][a-z0-9.]*(\\-[a-z0-9.]+)*' |
    sed 's/\\-/-/g; s/\.$//' | grep -vE -- '^--(no-)?collector\.?$' | sort -u
}
options "$WORK/help.txt" >"$WORK/prog-main.txt"
options "$WORK/bench-help.txt" >"$WORK/prog-bench.txt"
page_options OPTIONS >"$WORK/page-main.txt"
page_options BENCH >"$WORK/page-bench.txt"
for part in main bench; do
  missing=$(comm -23 "$WORK/prog-$part.txt" "$WORK/page-$part.txt" | tr '\n' ' ')
  extra=$(comm -13 "$WORK/prog-$part.txt" "$WORK/page-$part.txt" | tr '\n' ' ')
  check "$part options: $(wc -l <"$WORK/prog-$part.txt") in --help, all described in the man page (missing: ${missing:-none}), none it does not have (extra: ${extra:-none})" \
    test -z "$missing$extra"
done

prog_collectors=$(grep -oE -- '--collector\.[a-z_]+' "$WORK/help.txt" | sed 's/--collector\.//' | sort -u | tr '\n' ' ')
page_collectors=$(sed -n '/^\.BR \\-\\-collector\./,/^\.RE/p' "$PAGE" | awk '/^\.TP/ { getline; if ($1 == ".B") print $2 }' | sort -u | tr '\n' ' ')
check "collectors in the man page ($page_collectors) = the program's ($prog_collectors)" test "$page_collectors" = "$prog_collectors"

version=$("$BIN" --version | awk '{ print $2 }')
th_version=$(awk -F'"' '/^\.TH / { print $4; exit }' "$PAGE")  # .TH NAME 1 "date" "source" "manual"
check "the page's .TH names the program's version: '$th_version' = 'diskprobe_exporter $version'" test "$th_version" = "diskprobe_exporter $version"

# lintian runs: LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z <page>
if command -v man >/dev/null; then
  LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 man --warnings -E UTF-8 -l -Tutf8 -Z "$PAGE" >"$WORK/page.out" 2>"$WORK/man-warnings.txt"
  rc=$?
  sed 's/^/  /' "$WORK/man-warnings.txt"
  check "man --warnings formats the page (rc $rc, $(wc -c <"$WORK/page.out") bytes) without a warning" \
    bash -c "[ $rc = 0 ] && [ ! -s '$WORK/man-warnings.txt' ] && [ -s '$WORK/page.out' ]"
  LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$PAGE" 2>/dev/null | sed "s/.\x08//g" >"$WORK/page.txt"
  check "the formatted page has its sections: $(grep -cE '^(NAME|SYNOPSIS|DESCRIPTION|OPTIONS|BENCH|HTTP ENDPOINTS|SIGNALS|EXIT STATUS|FILES|EXAMPLES|SEE ALSO)$' "$WORK/page.txt") of 11" \
    test "$(grep -cE '^(NAME|SYNOPSIS|DESCRIPTION|OPTIONS|BENCH|HTTP ENDPOINTS|SIGNALS|EXIT STATUS|FILES|EXAMPLES|SEE ALSO)$' "$WORK/page.txt")" = 11
else
  echo "man not installed: formatting not checked"
  [ "${CI:-}" = true ] && fail "man is missing under CI"
fi

# Exit codes, as the EXIT STATUS section says.
"$BIN" --version >/dev/null 2>&1; rc_version=$?
"$BIN" --no-such-flag >/dev/null 2>"$WORK/err1"; rc_flag=$?
"$BIN" --web.max-requests=99 >/dev/null 2>"$WORK/err2"; rc_range=$?
"$BIN" bench --dir /tmp >/dev/null 2>"$WORK/err3"; rc_bench=$?
printf 'devices:\n  exclud: []\n' >"$WORK/bad.yml"
"$BIN" --config.check --config.file="$WORK/bad.yml" >"$WORK/out4" 2>&1; rc_check=$?
"$BIN" --config.file="$WORK/bad.yml" --web.listen-address=127.0.0.1:0 >/dev/null 2>&1; rc_start=$?
rc_tp=""
for tp in / /-/ready /-/healthy '/metrics?x' '/m etrics'; do
  "$BIN" --config.check --web.telemetry-path="$tp" >/dev/null 2>&1; rc_tp="$rc_tp $?"
done
"$BIN" --config.check --web.telemetry-path=/probe/metrics_v2 >/dev/null 2>&1; rc_tp_ok=$?
"$BIN" --web.listen-address=127.0.0.1:1,127.0.0.1:1 >/dev/null 2>"$WORK/err5"; rc_dup=$?
"$BIN" --web.listen-address=:1 --web.listen-address=0.0.0.0:1 >/dev/null 2>"$WORK/err6"; rc_dup2=$?
# Port 0 twice is two addresses (a free port each), not a duplicate.
timeout 3 "$BIN" --web.listen-address=127.0.0.1:0,127.0.0.1:0 --no-collector.probes --no-collector.kmsg \
  >/dev/null 2>"$WORK/err7"
"$BIN" --help | grep -q '{false}'; rc_false=$?
echo "  $(head -n1 "$WORK/err1")"
echo "  $(head -n1 "$WORK/err3")"
echo "  $(head -n1 "$WORK/out4")"
check "--version exits 0 (rc $rc_version)" test "$rc_version" = 0
check "an unknown flag exits 2 (rc $rc_flag), an out-of-range value 2 (rc $rc_range), bench without --device 2 (rc $rc_bench)" \
  test "$rc_flag:$rc_range:$rc_bench" = 2:2:2
check "--config.check on an invalid file exits 1 (rc $rc_check) with file:line:col" \
  bash -c "[ $rc_check = 1 ] && grep -q 'bad.yml:2:3' '$WORK/out4'"
check "starting with an invalid config file exits 1 (rc $rc_start)" test "$rc_start" = 1
check "a telemetry path that is another endpoint or not URL-safe is a usage error (rc$rc_tp), /probe/metrics_v2 is fine (rc $rc_tp_ok)" \
  test "$rc_tp:$rc_tp_ok" = " 2 2 2 2 2:0"
check "the same listen address twice is refused by name (rc $rc_dup, $rc_dup2): $(head -n1 "$WORK/err6")" \
  bash -c "[ $rc_dup:$rc_dup2 = 1:1 ] && grep -q 'the same address' '$WORK/err5' && grep -q ':1 and 0.0.0.0:1 are the same address' '$WORK/err6'"
check "two port-0 addresses listen on two ports: $(grep -o 'address=[^ ]*' "$WORK/err7" | head -n1)" \
  bash -c "grep 'msg=listening' '$WORK/err7' | grep -qE 'address=\"?127\\.0\\.0\\.1:[0-9]+,127\\.0\\.0\\.1:[0-9]+'"
check "--help does not print {false} after the collector flags (they are on by default)" test "$rc_false" = 1

[ "$FAILURES" = 0 ] && echo "all checks passed" || echo "$FAILURES check(s) failed"
[ "$FAILURES" = 0 ]
