#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time and prints, per target, the executions, the
# executions per second and the crashes found (tests/fuzz/README.md).
#   tests/fuzz/run.sh BUILD_DIR SECONDS [TARGET...]     # TARGET: config, kmsg, http_request...
# Seeds come from tests/fixtures (gathered fresh each run into BUILD_DIR/fuzz/seeds/TARGET) and
# tests/fuzz/seeds; what the fuzzer learns accumulates in BUILD_DIR/fuzz/corpus/TARGET, and a
# crash, leak, timeout or out-of-memory input lands in BUILD_DIR/fuzz/artifacts/TARGET/ (the
# fuzzer's own log beside it). Every target runs even when one crashes; the exit status is 1
# when any did. FUZZ_RUNS=N stops each target after N executions instead of at SECONDS;
# FUZZ_MAX_LEN=BYTES caps an input's length (libFuzzer's -max_len; by default it grows from the
# largest seed, over 10 KB for config, which slows every execution).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
[ $# -ge 2 ] || { echo "usage: $0 BUILD_DIR SECONDS [TARGET...]" >&2; exit 2; }
build=$(cd "$1" && pwd)
seconds=$2
shift 2
bin_dir=$build/tests/fuzz
fx=$root/tests/fixtures

all_targets=(config web_config http_request block_stat board_model boot_config ext4_sysfs kmsg mmc_ios
             mmc_registers mountinfo sd_vendor_health smartctl_json throttled)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

# seeds TARGET DIR: copies the fixture files that are inputs of TARGET's parser into DIR.
seeds() {
  local t=$1 out=$2 f i=0
  put() { for f in "$@"; do [ -f "$f" ] && cp "$f" "$out/$((i++))-${f##*/}"; done; return 0; }
  case $t in
    config) put "$root"/config/*.yml "$fx"/config/*.yml ;;
    web_config) put "$root"/deploy/web-config/*.yml ;;
    http_request) put "$here"/seeds/http_request/* ;;
    block_stat) put "$fx"/samples/diskstats/*.txt $(find "$fx"/sys "$fx"/roots -name stat) ;;
    board_model) put "$fx"/samples/model/*.txt $(find "$fx"/roots -name model) ;;
    boot_config)
      # The target's first byte picks the board and whether includes are followed.
      for f in "$fx"/samples/config-txt/* $(find "$fx"/roots -name config.txt); do
        [ -f "$f" ] || continue
        { printf '\002'; cat "$f"; } >"$out/$((i++))-pi4-${f##*/}"
        { printf '\203'; cat "$f"; } >"$out/$((i++))-cm4-includes-${f##*/}"
      done ;;
    ext4_sysfs)
      # One attribute file each, and each filesystem's files joined by NUL in the target's order.
      put $(find "$fx"/roots -path '*/sys/fs/ext4/*' -type f)
      for d in $(find "$fx"/roots -path '*/sys/fs/ext4/*' -type d); do
        local names=(errors_count first_error_time first_error_func first_error_line first_error_ino
                     first_error_block first_error_errcode last_error_time last_error_func last_error_line
                     last_error_ino last_error_block last_error_errcode warning_count msg_count) n
        for n in "${names[@]}"; do [ -f "$d/$n" ] && cat "$d/$n"; printf '\0'; done >"$out/$((i++))-all-${d##*/}"
      done ;;
    kmsg) put "$fx"/samples/kmsg/*.txt ;;
    mmc_ios) put "$fx"/samples/ios/* $(find "$fx"/roots -name ios) ;;
    mmc_registers)
      put "$fx"/samples/cid/* "$fx"/samples/ssr-scr/*.txt "$fx"/samples/device-attrs/* \
          $(find "$fx"/sys "$fx"/roots \( -name cid -o -name csd -o -name scr -o -name ssr -o -name life_time \
                                          -o -name pre_eol_info \) -type f) ;;
    mountinfo) put "$fx"/samples/ext4-mountinfo/* $(find "$fx"/roots -name mountinfo) ;;
    sd_vendor_health)
      # The hex dumps as the 512 bytes the card sent, behind each layout's byte (the target's first
      # byte picks the layout), and twice over: a second reply of the same card.
      local l
      for f in "$fx"/samples/sd-cmd56/*.txt; do
        for l in 0 1 2 3 4 5 6 7; do
          { printf "\\$(printf '%03o' "$l")"; grep -v '^#' "$f" | xxd -r -p; grep -v '^#' "$f" | xxd -r -p; } \
            >"$out/$((i++))-layout$l-${f##*/}"
        done
      done ;;
    smartctl_json)
      # The recorded reports without their "# source:" lines (smartctl writes none).
      for f in "$fx"/samples/smartctl/*.json; do grep -v '^#' "$f" >"$out/$((i++))-${f##*/}"; done ;;
    throttled) put "$fx"/samples/throttled/*.txt $(find "$fx"/roots -name get_throttled) ;;
    *) echo "run.sh: no seeds for target $t (add it to seeds() in tests/fuzz/run.sh)" >&2; return 1 ;;
  esac
}

# A built target the list above does not know would never run: say so.
for b in "$bin_dir"/fuzz_*; do
  [ -x "$b" ] || continue
  n=${b##*/fuzz_}
  [[ " ${all_targets[*]} " == *" $n "* ]] || { echo "run.sh: $b is not in all_targets" >&2; exit 2; }
done

failed=0
summary=()
for t in "${targets[@]}"; do
  bin=$bin_dir/fuzz_$t
  [ -x "$bin" ] || { echo "run.sh: $bin not built (cmake --build $build --target diskprobe_fuzzers)" >&2; exit 2; }
  work=$build/fuzz
  rm -rf "$work/seeds/$t"
  mkdir -p "$work/seeds/$t" "$work/corpus/$t" "$work/artifacts/$t"
  seeds "$t" "$work/seeds/$t"
  opts=(-max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048
        -artifact_prefix="$work/artifacts/$t/")
  [ -n "${FUZZ_RUNS:-}" ] && opts+=(-runs="$FUZZ_RUNS")
  [ -n "${FUZZ_MAX_LEN:-}" ] && opts+=(-max_len="$FUZZ_MAX_LEN")
  [ -f "$here/dict/$t.dict" ] && opts+=(-dict="$here/dict/$t.dict")
  log=$work/artifacts/$t/last-run.log
  before=$(find "$work/artifacts/$t" -type f ! -name '*.log' | wc -l)
  echo "=== fuzz $t: ${seconds}s, $(ls "$work/seeds/$t" | wc -l) seeds, corpus $work/corpus/$t" >&2
  rc=0
  # The fuzzer's working directory is its artifacts directory: a file name the web config target
  # checks with access() resolves there, never in the source tree.
  (cd "$work/artifacts/$t" && "$bin" "${opts[@]}" "$work/corpus/$t" "$work/seeds/$t") >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  found=$(( $(find "$work/artifacts/$t" -type f ! -name '*.log' | wc -l) - before ))
  if [ "$rc" != 0 ]; then
    failed=1
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error:|artifact_prefix|Test unit written)' "$log" | head -5 >&2 || true
    echo "    full log: $log" >&2
  fi
  summary+=("$(printf '%-14s %12s %10s %8s %s' "$t" "${execs:-?}" "${rate:-?}" "$found" \
               "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")")")
done
printf '%-14s %12s %10s %8s %s\n' target executions exec/s crashes result
printf '%s\n' "${summary[@]}"
exit "$failed"
