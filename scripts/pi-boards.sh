# Sourced by scripts/pi-image.sh and tests/e2e/pi_qemu_e2e.sh: pi_board BOARD sets one shell
# variable per column of scripts/pi-boards.tsv (board_name, board_qemu, board_arch, ...) from
# that board's row. The table: comment (#) and blank lines ignored, the first other line names
# the columns, one row per board, tab-separated, every field non-empty ("-" for none).
# Unknown board, or a row whose field count differs from the header's: a message, status 2.
pi_boards_tsv=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/pi-boards.tsv
pi_board() {
  local want=$1 header row i
  local -a names values
  header=$(awk '!/^[[:space:]]*(#|$)/ {print; exit}' "$pi_boards_tsv")
  row=$(awk -F'\t' -v b="$want" '!/^[[:space:]]*(#|$)/ && n++ && $1 == b' "$pi_boards_tsv")
  if [ -z "$row" ]; then
    echo "unsupported board '$want' (scripts/pi-boards.tsv: $(awk -F'\t' '!/^[[:space:]]*(#|$)/ && n++ {printf "%s%s", s, $1; s=" "}' "$pi_boards_tsv"))" >&2
    return 2
  fi
  # mapfile keeps empty fields (read with IFS=tab would merge two tabs into one separator).
  mapfile -t names < <(printf '%s' "$header" | tr '\t' '\n')
  mapfile -t values < <(printf '%s' "$row" | tr '\t' '\n')
  if [ "${#names[@]}" != "${#values[@]}" ]; then
    echo "scripts/pi-boards.tsv: board $want has ${#values[@]} fields, the header ${#names[@]}" >&2
    return 2
  fi
  for i in "${!names[@]}"; do
    if [ -z "${values[i]}" ]; then
      echo "scripts/pi-boards.tsv: board $want: ${names[i]} is empty (\"-\" for none)" >&2
      return 2
    fi
    printf -v "board_${names[i]}" '%s' "${values[i]}"
  done
}
