#!/usr/bin/env bash
# A signed apt repository of the matrix packages, for any static web server:
#   <repo>/pool/<suite>/diskprobe-exporter_<version>_<arch>.deb
#   <repo>/dists/<suite>/main/binary-<arch>/Packages{,.gz,.xz}
#   <repo>/dists/<suite>/{Release,InRelease,Release.gpg}    signed with the operator's key
#   <repo>/diskprobe-archive-keyring.gpg                    the public key, for the Pis
# Each .deb goes to the suite its version names (~deb12: bookworm, ~deb13: trixie). The ARMv6
# package (diskprobe-exporter-armv6, Architecture armhf) lands in binary-armhf beside
# diskprobe-exporter: one index for every Raspberry Pi OS 32-bit board, the name picks the build.
#   scripts/make-repo.sh <directory of .deb files> <repository directory>
# The signing key: a GnuPG home in $DISKPROBE_REPO_GNUPGHOME (default
# ~/.local/share/diskprobe-exporter/repo-gnupg, outside any repository; never commit it). Made on
# the first run: an Ed25519 key without passphrase, valid 3 years, for this operator only.
# Back it up: a lost key means every Pi must get a new one.
# Needs apt-ftparchive (apt-utils) and gpg.
set -euo pipefail
debs=$(realpath "${1:?usage: make-repo.sh <deb directory> <repository directory>}")
repo=$(realpath -m "${2:?usage: make-repo.sh <deb directory> <repository directory>}")
gnupg=${DISKPROBE_REPO_GNUPGHOME:-$HOME/.local/share/diskprobe-exporter/repo-gnupg}
uid=${DISKPROBE_REPO_UID:-diskprobe_exporter repository <diskprobe-repo@$(hostname -f 2>/dev/null || hostname)>}
for tool in apt-ftparchive gpg dpkg-deb; do
  command -v "$tool" >/dev/null || { echo "make-repo: missing $tool (scripts/install-deps.sh matrix)" >&2; exit 1; }
done
compgen -G "$debs/*.deb" >/dev/null || { echo "make-repo: no .deb in $debs" >&2; exit 1; }

if ! gpg --homedir "$gnupg" --list-secret-keys 2>/dev/null | grep -q '^sec'; then
  mkdir -p "$gnupg"
  chmod 0700 "$gnupg"
  echo "make-repo: new signing key in $gnupg ($uid)" >&2
  gpg --homedir "$gnupg" --batch --passphrase '' --quick-generate-key "$uid" ed25519 sign 3y 2>&1 | sed 's/^/  /' >&2
fi
# gpg starts an agent for the home directory: stop it when done.
trap 'gpgconf --homedir "$gnupg" --kill gpg-agent 2>/dev/null || true' EXIT
fpr=$(gpg --homedir "$gnupg" --list-secret-keys --with-colons | awk -F: '$1 == "fpr" { print $10; exit }')

rm -rf "$repo.new"
mkdir -p "$repo.new"
suites=()
for deb in "$debs"/*.deb; do
  version=$(dpkg-deb -f "$deb" Version)
  case "$version" in
    *~deb12) suite=bookworm ;;
    *~deb13) suite=trixie ;;
    *) echo "make-repo: $deb: version $version names no suite (~deb12, ~deb13): skipped" >&2; continue ;;
  esac
  mkdir -p "$repo.new/pool/$suite"
  cp "$deb" "$repo.new/pool/$suite/"
  [[ " ${suites[*]} " == *" $suite "* ]] || suites+=("$suite")
done
archs="amd64 arm64 armhf"
cd "$repo.new"
for suite in "${suites[@]}"; do
  for arch in $archs; do
    d=dists/$suite/main/binary-$arch
    mkdir -p "$d"
    apt-ftparchive --arch "$arch" packages "pool/$suite" >"$d/Packages"
    gzip -9nk "$d/Packages"
    xz -k "$d/Packages"
    printf 'Archive: %s\nComponent: main\nArchitecture: %s\n' "$suite" "$arch" >"$d/Release"
    echo "make-repo: $suite $arch: $(grep -c '^Package:' "$d/Packages" || true) package(s)" >&2
  done
  apt-ftparchive -o "APT::FTPArchive::Release::Origin=diskprobe_exporter" -o "APT::FTPArchive::Release::Label=diskprobe_exporter" \
    -o "APT::FTPArchive::Release::Suite=$suite" -o "APT::FTPArchive::Release::Codename=$suite" \
    -o "APT::FTPArchive::Release::Architectures=$archs" -o "APT::FTPArchive::Release::Components=main" \
    -o "APT::FTPArchive::Release::Description=diskprobe_exporter for Debian $suite" \
    release "dists/$suite" >"dists/$suite/Release.tmp"
  mv "dists/$suite/Release.tmp" "dists/$suite/Release"
  gpg --homedir "$gnupg" --batch --yes --local-user "$fpr" --digest-algo SHA512 --clearsign -o "dists/$suite/InRelease" "dists/$suite/Release"
  gpg --homedir "$gnupg" --batch --yes --local-user "$fpr" --digest-algo SHA512 --detach-sign --armor -o "dists/$suite/Release.gpg" "dists/$suite/Release"
done
gpg --homedir "$gnupg" --export "$fpr" >diskprobe-archive-keyring.gpg
gpg --homedir "$gnupg" --export --armor "$fpr" >diskprobe-archive-keyring.asc
cd - >/dev/null
rm -rf "$repo.old"
[ -e "$repo" ] && mv "$repo" "$repo.old"
mv "$repo.new" "$repo"
rm -rf "$repo.old"
echo "make-repo: $repo (suites: ${suites[*]}; key $fpr)" >&2
