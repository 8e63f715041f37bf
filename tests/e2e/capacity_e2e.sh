#!/usr/bin/env bash
# End-to-end: `diskprobe_exporter bench --capacity-check` (the fake-capacity check, H2testw's
# role) on two emulated cards that claim the same size:
#  - a counterfeit card (fake_card.sh, nbdkit's sh plugin): claims CLAIMED MiB, keeps REAL MiB,
#    every address taken modulo REAL MiB. Ground truth: the card's real size. The check must say
#    data_lost, the first bad block a wrap-around, the distance between a block's card address and
#    the address of the block it reads back as = REAL MiB within one block, and an intact capacity
#    between REAL MiB minus the blocks the filesystem itself had in use before the check (plus
#    the check's directory block) and REAL MiB; and at least what the card's backing file still
#    holds of the fill after the run (the removal can only overwrite fill blocks, never add any).
#  - a healthy card (nbdkit's memory plugin) of CLAIMED MiB: everything intact, files removed, a
#    file that was there before untouched, the reads counted by the card's /sys/block stat.
# Then SIGINT in the middle of a fill: exit 130 and the files gone.
# The filesystem is made with its own blocks few and at the start (no journal, no resize inode,
# no backup superblocks, packed metadata, 64 inodes): a default ext4 of 256 MiB puts a backup
# superblock at 128 MiB, which a 64 MiB card stores on top of the primary one, and 16 MiB of
# inode tables and journal that the fill overwrites and the kernel writes back at random times,
# which would blur the ground truth by megabytes.
# Sizes: CAPACITY_CLAIMED_MIB (256), CAPACITY_REAL_MIB (64), CAPACITY_MAX (128MiB: twice the
# real size, the counterfeit card's emulation forks a dd per request) in the environment, e.g.
# 1024, 256, 900MiB for a 1 GiB card keeping 256 MiB (several minutes here).
# Needs root, FUSE and loop devices: skips (77) outside CI without them, fails under CI=true.
# Usage: capacity_e2e.sh <path to diskprobe_exporter>
EXPORTER=$(realpath "$1")
SRC=$(realpath "$(dirname "$0")/../..")
source "$SRC/tests/e2e/lib.sh"
require_card_support
for tool in jq mkfs.ext4 dumpe2fs python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh test" >&2; exit 1; }
done
python3 -c 'import jsonschema' || { echo "missing python3-jsonschema: run scripts/install-deps.sh test" >&2; exit 1; }
cd "$E2E_WORK"

CLAIMED_MIB=${CAPACITY_CLAIMED_MIB:-256}
REAL_MIB=${CAPACITY_REAL_MIB:-64}
MAX=${CAPACITY_MAX:-128MiB}
FLOOR=16MiB
BLOCK=4096
MIB=1048576
REAL=$((REAL_MIB * MIB))
LOCKS=$E2E_WORK/locks
MKFS=(-b 4096 -m 0 -N 64 -O ^has_journal,^resize_inode,sparse_super2
      -E nodiscard,num_backup_sb=0,packed_meta_blocks=1,lazy_itable_init=0)

valid() {  # valid FILE.json: against docs/bench-capacity-schema.json
  python3 -c 'import json, sys, jsonschema
jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])))' "$1" "$SRC/docs/bench-capacity-schema.json"
}
# Blocks the filesystem has in use (metadata, root, lost+found, files), from its superblock.
used_blocks() { dumpe2fs -h "$1" 2>/dev/null | awk -F: '/^Block count/ { n = $2 } /^Free blocks/ { f = $2 } END { print n - f }'; }
read_bytes() { awk '{ printf "%.0f\n", $3 * 512 }' "/sys/block/$1/stat"; }
j() { jq -r "$1" "$2"; }

# --- the counterfeit card
log "counterfeit card: claims $CLAIMED_MIB MiB, keeps $REAL_MIB MiB (addresses modulo $REAL_MIB MiB)"
truncate -s "$REAL" fake.img
card_attach fake sh "$SRC/tests/e2e/fake_card.sh" backing="$E2E_WORK/fake.img" claimed=$((CLAIMED_MIB * MIB)) real="$REAL"
fake_dev=$CARD_DEV fake_name=$CARD_NAME
card_mkfs_mount "${MKFS[@]}"
fake_mnt=$CARD_MNT
used=$(used_blocks "$fake_dev")
log "filesystem on it: $used blocks in use before the check"
t0=$(date +%s.%N)
"$EXPORTER" bench --capacity-check "$fake_mnt" --capacity-max "$MAX" --free-floor "$FLOOR" --lock-dir "$LOCKS" \
  --progress --format json >fake.json 2>fake.err && rc=0 || rc=$?
t1=$(date +%s.%N)
tail -n 2 fake.err | sed 's/^/  /'
run_id=$(j .run_id fake.json)
# What the card's storage holds of this run's fill now, block by block (after the removal).
held=$(python3 - fake.img "$run_id" <<'EOF'
import struct, sys
data, run = open(sys.argv[1], "rb").read(), int(sys.argv[2], 16)
print(sum(1 for q in range(0, len(data), 4096)
          if data[q:q + 8] == b"DPFILL01" and struct.unpack_from("<Q", data, q + 8)[0] == run))
EOF
)
planned=$(j .planned_bytes fake.json) intact=$(j .intact_bytes fake.json) dist=$(j .card_alias_distance_bytes fake.json)
printf '  claimed %d MiB, real %d bytes; filled %s bytes in %.1f s\n' "$CLAIMED_MIB" "$REAL" "$(j .written_bytes fake.json)" \
  "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
echo "  reported intact $intact bytes = real - $(( (REAL - intact) / BLOCK )) blocks; the card holds $held fill blocks after the run"
echo "  first bad offset $(j .first_bad.offset fake.json) ($(j .first_bad.kind fake.json), holding the block of offset $(j .first_bad.aliased_offset fake.json)); alias distance on the card $dist bytes"
echo "  removed: $(j .removed fake.json) $(j '.remove_error // ""' fake.json)"
check "the check exits 3, data lost (rc $rc, result $(j .result fake.json))" \
  bash -c "[ $rc = 3 ] && [ $(j .result fake.json) = data_lost ]"
check "the fill went past the real size (planned $planned > $REAL bytes), all of it written and read back" \
  bash -c "[ $planned -gt $REAL ] && [ $(j .written_bytes fake.json) = $planned ] && [ $(j .verified_bytes fake.json) = $planned ]"
check "the first bad block is a wrap-around" test "$(j .first_bad.kind fake.json)" = wrap_around
check "alias distance on the card $dist = the real size $REAL within one block" \
  awk -v d="$dist" -v r="$REAL" -v b="$BLOCK" 'BEGIN { exit !(d != "null" && d >= r - b && d <= r + b) }'
lower=$((REAL - (used + 1) * BLOCK))
check "intact $intact within [real - the filesystem's $used blocks - the check's directory block, real] = [$lower, $REAL]" \
  bash -c "[ $intact -ge $lower ] && [ $intact -le $REAL ]"
check "intact $intact >= the $held fill blocks the card still holds ($((held * BLOCK)) bytes)" \
  test "$intact" -ge $((held * BLOCK))
check "the table's kinds add up: intact + wrap_around + stale + zeros + garbage + read_error blocks = verified" \
  test "$(jq '.blocks | add' fake.json)" = $(( $(j .verified_bytes fake.json) / BLOCK ))
check "progress lines on stderr with --progress (rate and ETA)" grep -qE '^verifying .* MB/s ETA [0-9]+ s$' fake.err
check "the counterfeit card's document validates against docs/bench-capacity-schema.json" valid fake.json
if [ "$(j .removed fake.json)" = true ]; then
  check "its directory is gone" test ! -e "$fake_mnt/diskprobe-capacity-check"
fi

# --- the healthy card
log "healthy card: $CLAIMED_MIB MiB"
card_start healthy "${CLAIMED_MIB}M"
healthy_name=$CARD_NAME
card_mkfs_mount "${MKFS[@]}"
ok_mnt=$CARD_MNT
head -c 100000 /dev/urandom >"$ok_mnt/existing.bin"
sync
sum_before=$(sha256sum <"$ok_mnt/existing.bin")
avail=$(df -B1 --output=avail "$ok_mnt" | tail -1)
reads0=$(read_bytes "$healthy_name")
"$EXPORTER" bench --capacity-check "$ok_mnt" --capacity-max "$MAX" --free-floor "$FLOOR" --lock-dir "$LOCKS" \
  --format json >ok.json 2>ok.err && rc=0 || rc=$?
reads1=$(read_bytes "$healthy_name")
"$EXPORTER" bench --capacity-check "$ok_mnt" --capacity-max "$MAX" --free-floor "$FLOOR" --lock-dir "$LOCKS" \
  >ok.txt 2>&1 || true
sed 's/^/  /' ok.txt
written=$(j .written_bytes ok.json)
echo "  reported intact $(j .intact_bytes ok.json) of $written bytes written; the card counted $((reads1 - reads0)) bytes read"
check "healthy card: exit 0, result ok (rc $rc, $(j .result ok.json))" bash -c "[ $rc = 0 ] && [ $(j .result ok.json) = ok ]"
want=$(python3 -c "import sys; m = int(sys.argv[1]); a = int(sys.argv[2]); f = 16 << 20; print(min(m, a - f) // 4096 * 4096)" \
  "$(j .limits.max_bytes ok.json)" "$(j .filesystem.available_bytes ok.json)")
check "planned = min(--capacity-max, available - floor) = $want" test "$(j .planned_bytes ok.json)" = "$want"
check "all intact: intact = verified = written = planned, no bad range" \
  bash -c "[ $(j .intact_bytes ok.json) = $written ] && [ $(j .verified_bytes ok.json) = $written ] && [ $written = $want ] && [ $(j .first_bad ok.json) = null ]"
check "the reads reached the card: its stat counted $((reads1 - reads0)) bytes read >= $written verified (the check's own figure $(j .device_read_bytes ok.json))" \
  bash -c "[ $((reads1 - reads0)) -ge $written ] && [ $(j .device_read_bytes ok.json) -ge $written ] && [ $(j .direct_io ok.json) = true ]"
check "files removed, free space back (available $avail before, $(df -B1 --output=avail "$ok_mnt" | tail -1) after)" \
  bash -c "[ $(j .removed ok.json) = true ] && [ ! -e '$ok_mnt/diskprobe-capacity-check' ] && [ \$(df -B1 --output=avail '$ok_mnt' | tail -1) -ge $((avail - 1048576)) ]"
check "the file that was there is untouched" test "$(sha256sum <"$ok_mnt/existing.bin")" = "$sum_before"
check "the table says so" grep -q '^RESULT: OK, every block written read back intact$' ok.txt
check "no progress lines when stderr is not a terminal and --progress is not given" test ! -s ok.err
check "the healthy card's document validates against docs/bench-capacity-schema.json" valid ok.json

# --- SIGINT in the middle of the fill
"$EXPORTER" bench --capacity-check "$ok_mnt" --capacity-max "$MAX" --free-floor "$FLOOR" --lock-dir "$LOCKS" \
  --progress --format json >int.json 2>int.err &
pid=$!
for _ in $(seq 1 100); do grep -q '^writing' int.err 2>/dev/null && break; sleep 0.05; done
kill -INT "$pid"
wait "$pid" && rc=0 || rc=$?
check "SIGINT while writing: exit 130 (rc $rc), interrupted, files removed ($(j .stop_reason int.json))" \
  bash -c "[ $rc = 130 ] && [ $(j .interrupted int.json) = true ] && [ $(j .removed int.json) = true ] && [ ! -e '$ok_mnt/diskprobe-capacity-check' ]"

# Leftovers are refused by name, nothing written into them.
mkdir "$ok_mnt/diskprobe-capacity-check"
"$EXPORTER" bench --capacity-check "$ok_mnt" --capacity-max "$MAX" --free-floor "$FLOOR" --lock-dir "$LOCKS" >/dev/null 2>left.err && rc=0 || rc=$?
check "an existing diskprobe-capacity-check is refused (rc $rc): $(head -n1 left.err)" \
  bash -c "[ $rc = 1 ] && grep -q 'exists' left.err && [ -z \"\$(ls -A '$ok_mnt/diskprobe-capacity-check')\" ]"

[ "$FAILURES" = 0 ] && echo "all checks passed" || echo "$FAILURES check(s) failed"
[ "$FAILURES" = 0 ]
