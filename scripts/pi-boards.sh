# Sourced by scripts/pi-image.sh and tests/e2e/pi_qemu_e2e.sh: pi_board BOARD sets one shell
# variable per column of scripts/pi-boards.tsv (board_name, board_qemu, board_arch, ...) from
# that board's row; unknown board: a message naming the boards there, status 2.
pi_boards_tsv=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/pi-boards.tsv
pi_board() {
  local want=$1 header row i
  header=$(grep -v '^#' "$pi_boards_tsv" | head -n1)
  row=$(awk -F'\t' -v b="$want" '!/^#/ && $1 == b' "$pi_boards_tsv")
  if [ -z "$row" ] || [ "$want" = board ]; then
    echo "unsupported board '$want' (scripts/pi-boards.tsv: $(awk -F'\t' '!/^#/ && $1 != "board" {print $1}' "$pi_boards_tsv" | paste -sd' '))" >&2
    return 2
  fi
  local -a names values
  IFS=$'\t' read -r -a names <<<"$header"
  IFS=$'\t' read -r -a values <<<"$row"
  for i in "${!names[@]}"; do
    printf -v "board_${names[i]}" '%s' "${values[i]}"
  done
}
