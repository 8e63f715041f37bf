# Sourced by the tests that boot a root with systemd-nspawn (ansible.sh, systemd_sandbox.sh,
# scripts/test-repo.sh): finding the container's systemd and waiting for the boot.
#   nspawn_leader NSPAWN_PID      prints the PID of the container's PID 1 (systemd), empty when
#                                 nspawn exited or systemd did not start within 10 s
#   nspawn_ct LEADER CMD...       runs CMD inside the container (its mount, PID and network namespaces)
#   nspawn_wait_running LEADER    prints is-system-running once it says running or degraded
#                                 (or whatever it said after 60 s); returns 1 unless booted
# The container's PID 1 is the child of systemd-nspawn that has exec'd systemd (nspawn forks
# first, so the child's name is "systemd" only once the exec happened).
nspawn_leader() {
  local nspawn_pid=$1 leader="" i
  for i in $(seq 1 100); do
    leader=$(ps -o pid=,comm= --ppid "$nspawn_pid" | awk '$2 == "systemd" { print $1; exit }' || true)
    [ -n "$leader" ] && break
    kill -0 "$nspawn_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "$leader"
}
nspawn_ct() {
  local leader=$1
  shift
  nsenter --target "$leader" --mount --uts --ipc --net --pid --root --wd -- "$@"
}
nspawn_wait_running() {
  local leader=$1 state="" i
  for i in $(seq 1 300); do
    state=$(nspawn_ct "$leader" systemctl is-system-running 2>/dev/null || true)
    case "$state" in running|degraded) echo "$state"; return 0 ;; esac
    sleep 0.2
  done
  echo "${state:-unknown}"
  return 1
}
