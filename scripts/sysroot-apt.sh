# Sourced by scripts/make-sysroot.sh and scripts/cross-package.sh: apt options that make apt-get
# work on a sysroot's own state in <sysroot>.apt (its own status file, lists, archive cache and
# sources, the target architecture only) instead of the machine's.
#   sysroot_apt_opts ARCH APT_DIR   sets the array apt_opts
sysroot_apt_opts() {
  local arch=$1 dir=$2
  apt_opts=(-o "APT::Architecture=$arch" -o "APT::Architectures=$arch"
            -o "Dir::State::status=$dir/status" -o "Dir::State::Lists=$dir/lists"
            -o "Dir::Cache::archives=$dir/archives" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
            -o "Dir::Etc::SourceList=$dir/etc/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
            -o "Dir::Etc::Preferences=/nonexistent" -o "Dir::Etc::PreferencesParts=$dir/etc/preferences.d"
            -o "APT::Install-Recommends=false" -o "Debug::NoLocking=true" -o "APT::Sandbox::User=root")
}
