#!/bin/sh
# An nbdkit sh plugin (nbdkit-sh-plugin(3)): a counterfeit card. It claims CLAIMED bytes and
# keeps REAL of them: every read and write at offset X goes to X modulo REAL of the backing file
# BACKING (REAL bytes), so a write past the real size overwrites an earlier block and reading
# either returns the later one, as the counterfeit cards H2testw and f3 catch do. A request that
# crosses the wrap point is split in two.
# Usage: nbdkit sh fake_card.sh backing=FILE claimed=BYTES real=BYTES
# $1 method; config: $2 key, $3 value; pread/pwrite: $2 handle, $3 count, $4 offset.
# The parameters are kept in $tmpdir (a directory nbdkit makes for the plugin's life).
conf() { cat "$tmpdir/$1"; }
case "$1" in
  config) printf '%s' "$3" >"$tmpdir/$2" ;;
  config_complete)
    for k in backing claimed real; do [ -s "$tmpdir/$k" ] || { echo "fake_card.sh: $k= missing" >&2; exit 1; }; done ;;
  thread_model) echo serialize_all_requests ;;
  get_size) conf claimed ;;
  can_write|can_flush) exit 0 ;;
  flush) exit 0 ;;
  open) echo card ;;
  pread)
    B=$(conf backing) R=$(conf real)
    o=$(($4 % R)) n=$3
    if [ $((o + n)) -le "$R" ]; then exec dd if="$B" skip=$o count=$n iflag=skip_bytes,count_bytes status=none; fi
    a=$((R - o))
    dd if="$B" skip=$o count=$a iflag=skip_bytes,count_bytes status=none
    exec dd if="$B" count=$((n - a)) iflag=count_bytes status=none ;;
  pwrite)
    B=$(conf backing) R=$(conf real)
    o=$(($4 % R)) n=$3
    if [ $((o + n)) -le "$R" ]; then
      exec dd of="$B" seek=$o count=$n iflag=count_bytes,fullblock oflag=seek_bytes conv=notrunc status=none
    fi
    a=$((R - o))
    dd of="$B" seek=$o count=$a iflag=count_bytes,fullblock oflag=seek_bytes conv=notrunc status=none
    exec dd of="$B" count=$((n - a)) iflag=count_bytes,fullblock conv=notrunc status=none ;;
  # Any other method: not implemented (exit 2), so nbdkit uses its defaults.
  *) exit 2 ;;
esac
