#!/usr/bin/env bash
# Writes a dpkg database for a sysroot made by scripts/make-sysroot.sh (which calls this), so that
# dpkg-shlibdeps can compute a cross-built package's Depends from the sysroot's libraries:
#   dpkg-shlibdeps --admindir=<sysroot>/var/lib/dpkg -l<sysroot>/usr/lib/<triplet> ...
# asks `dpkg-query --search <sysroot>/usr/lib/<triplet>/libfoo.so.1` (with DPKG_ADMINDIR) which
# package owns a library, then reads that package's symbols or shlibs file with
# `dpkg-query --control-path`. So the database holds, for every unpacked .deb:
#   status                   its control fields, "Status: install ok installed"
#   info/<pkg>[:<arch>].list its files, as <sysroot>/<path>, /lib, /bin and /sbin merged into /usr
#                            as make-sysroot.sh does (":<arch>" for Multi-Arch: same packages, as
#                            dpkg names them with info/format 1)
#   info/<pkg>[:<arch>].{symbols,shlibs} from its control archive
# The paths include the sysroot's absolute path: move the sysroot, run this again (cross-test.sh
# checks info/sysroot-path).
#   scripts/cross-dpkg-db.sh <sysroot> <directory of the .deb files>
set -euo pipefail
sysroot=$(realpath "${1:?usage: cross-dpkg-db.sh <sysroot> <deb directory>}")
debs=${2:?usage: cross-dpkg-db.sh <sysroot> <deb directory>}
admin=$sysroot/var/lib/dpkg
compgen -G "$debs/*.deb" >/dev/null || { echo "cross-dpkg-db: no .deb files in $debs (scripts/make-sysroot.sh keeps them)" >&2; exit 1; }
rm -rf "$admin.new"
mkdir -p "$admin.new"/{info,updates}
echo 1 >"$admin.new/info/format"
: >"$admin.new/status"
ctrl=$(mktemp -d)
trap 'rm -rf "$ctrl"' EXIT
n=0
for deb in "$debs"/*.deb; do
  dpkg-deb -f "$deb" >"$ctrl/fields"
  pkg=$(sed -n 's/^Package: //p' "$ctrl/fields")
  arch=$(sed -n 's/^Architecture: //p' "$ctrl/fields")
  name=$pkg
  grep -qx 'Multi-Arch: same' "$ctrl/fields" && name=$pkg:$arch
  { sed -n '1p' "$ctrl/fields"; echo 'Status: install ok installed'; sed '1d' "$ctrl/fields"; echo; } >>"$admin.new/status"
  # ./lib/x -> <sysroot>/usr/lib/x; directories without their trailing slash; "./" itself is "/.".
  dpkg-deb --fsys-tarfile "$deb" | tar -t |
    sed -e 's,^\./,/,' -e 's,/$,,' -e 's,^/\(lib\|bin\|sbin\)\(/\|$\),/usr/\1\2,' -e '/^$/d' -e "s,^,$sysroot," \
      >"$admin.new/info/$name.list"
  rm -rf "$ctrl/c"
  dpkg-deb -e "$deb" "$ctrl/c"
  for f in symbols shlibs; do
    [ -e "$ctrl/c/$f" ] && cp "$ctrl/c/$f" "$admin.new/info/$name.$f"
  done
  n=$((n + 1))
done
echo "$sysroot" >"$admin.new/info/sysroot-path"
rm -rf "$admin"
mv "$admin.new" "$admin"
echo "cross-dpkg-db: $n packages in $admin ($(ls "$admin"/info/*.symbols 2>/dev/null | wc -l) symbols, $(ls "$admin"/info/*.shlibs 2>/dev/null | wc -l) shlibs files)" >&2
