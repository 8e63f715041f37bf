# Debian package (CPack DEB): `cpack -G DEB --config <build>/CPackConfig.cmake`, or
# tests/deploy/deb_package.sh, which also lints it and installs it into a clean Debian root.
#
# Contents: /usr/bin/diskprobe_exporter, the OpenSSL compat libraries in
# /usr/lib/diskprobe_exporter (exporter/http/tls.h), /etc/diskprobe_exporter/config.yml (a
# conffile: a copy of config/default.yml), the systemd unit, the sysusers.d user, postinst/prerm/
# postrm (user, state directory, service), the manual page, README, docs, changelog and copyright
# (deploy/debian), the Grafana dashboards and alert rules in /usr/share/diskprobe-exporter.
# Runtime dependencies from dpkg-shlibdeps.
#
# Architecture: the build's (dpkg --print-architecture), or from the cross toolchain's
# CMAKE_SYSTEM_PROCESSOR: aarch64 -> arm64, arm* -> armhf. Cross builds get their Depends from the
# sysroot's libraries and dpkg database (cmake/CPackCrossShlibdeps.cmake, scripts/cross-dpkg-db.sh).

set(CPACK_GENERATOR "DEB")
set(CPACK_PACKAGE_NAME "diskprobe-exporter")  # Debian package names have no underscore
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
# Packages of the build matrix (scripts/build-deb.sh): one per Debian suite, each linked against
# that suite's libraries (bookworm's libyaml-cpp0.7, trixie's libyaml-cpp0.8), so each carries a
# suite-specific Debian revision, e.g. 1~deb12 and 1~deb13: 0.1.0-1~deb12 < 0.1.0-1~deb13, so an
# upgrade from Debian 12 to 13 takes the trixie build. Empty (the default): a native version
# (0.1.0), as `make test` builds it.
set(DISKPROBE_DEB_REVISION "" CACHE STRING "Debian revision of the package (1~deb12, 1~deb13; empty: native version)")
set(DISKPROBE_DEB_DISTRIBUTION "unstable" CACHE STRING "Distribution named in the packaged changelog's entry for DISKPROBE_DEB_REVISION")
if(DISKPROBE_DEB_REVISION)
  set(CPACK_DEBIAN_PACKAGE_RELEASE "${DISKPROBE_DEB_REVISION}")
endif()
set(CPACK_PACKAGING_INSTALL_PREFIX "/usr")
set(CPACK_PACKAGE_CONTACT "diskprobe_exporter maintainers <maintainers@users.noreply.a-seed-2ffc495c.example>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Prometheus exporter for SD cards, eMMC and disks of Raspberry Pi fleets")
# The extended description only: CPack puts CPACK_PACKAGE_DESCRIPTION_SUMMARY first as the synopsis.
# One string: several arguments would make a CMake list, whose ";" separators end up in the text.
set(CPACK_PACKAGE_DESCRIPTION "Serves the kernel's block statistics, SD/eMMC bus and card facts, kernel
I/O error messages and the results of scheduled low-impact I/O probes to
Prometheus, with optional TLS and basic authentication.")
set(CPACK_DEBIAN_PACKAGE_SECTION "net")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_FILE_NAME "DEB-DEFAULT")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# postinst falls back to adduser where systemd-sysusers is missing.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# The smart collector runs smartctl when it is there; without it that source is off, visibly
# (diskprobe_smart_smartctl_up 0), so it is a suggestion, not a dependency.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "smartmontools")
if(DISKPROBE_STATIC)
  # The static ARMv6 build (cmake/toolchain-armv6.cmake) for Raspberry Pi OS 32-bit on Pi 1/Zero:
  # dpkg calls every Raspberry Pi OS 32-bit system "armhf", ARMv6 or not, so apt cannot pick a
  # build by board; the board's package is chosen by name, from the same repository and suite
  # (docs/packaging.md, "ARMv6"). It takes the place of diskprobe-exporter (same files, same
  # service): Provides it, so whatever depends on diskprobe-exporter is satisfied, and Conflicts/
  # Replaces it, so installing one removes the other. Nothing to depend on: a static binary.
  set(CPACK_PACKAGE_NAME "diskprobe-exporter-armv6")
  set(CPACK_DEBIAN_PACKAGE_SOURCE "diskprobe-exporter")
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
  set(_dp_version "${PROJECT_VERSION}")
  if(DISKPROBE_DEB_REVISION)
    string(APPEND _dp_version "-${DISKPROBE_DEB_REVISION}")
  endif()
  set(CPACK_DEBIAN_PACKAGE_PROVIDES "diskprobe-exporter (= ${_dp_version})")
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS "diskprobe-exporter")
  set(CPACK_DEBIAN_PACKAGE_REPLACES "diskprobe-exporter")
  string(APPEND CPACK_PACKAGE_DESCRIPTION "
.
This is the build for ARMv6 boards (Raspberry Pi 1, Zero, Zero W, CM1)
on Raspberry Pi OS 32-bit: one static executable (ARMv5TE code, OpenSSL
linked in). On Pi 2 and later, install diskprobe-exporter instead.")
endif()
if(DISKPROBE_STATIC)
  # Why the static package is static (lintian's statically-linked-binary, embedded-library, no PIE).
  install(FILES ${CMAKE_SOURCE_DIR}/deploy/debian/lintian-overrides.armv6 DESTINATION share/lintian/overrides
          RENAME diskprobe-exporter-armv6 PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endif()
# Documentation directory: /usr/share/doc/<package> (Policy 12.3).
set(DISKPROBE_DOC_DIR share/doc/${CPACK_PACKAGE_NAME})
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles
    ${CMAKE_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_SOURCE_DIR}/deploy/debian/postrm)

if(CMAKE_CROSSCOMPILING)
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE arm64)
  elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^arm")
    set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE armhf)
  endif()
  # dpkg-shlibdeps against the sysroot's libraries and its dpkg database (cmake/CPackCrossShlibdeps.cmake).
  if(CMAKE_SYSROOT AND CMAKE_LIBRARY_ARCHITECTURE)
    set(CPACK_DISKPROBE_SYSROOT "${CMAKE_SYSROOT}")
    set(CPACK_DISKPROBE_LIBRARY_ARCHITECTURE "${CMAKE_LIBRARY_ARCHITECTURE}")
    set(CPACK_PROJECT_CONFIG_FILE "${CMAKE_SOURCE_DIR}/cmake/CPackCrossShlibdeps.cmake")
  endif()
else()
  find_program(DPKG_EXECUTABLE dpkg)
  if(DPKG_EXECUTABLE)
    execute_process(COMMAND ${DPKG_EXECUTABLE} --print-architecture
                    OUTPUT_VARIABLE CPACK_DEBIAN_PACKAGE_ARCHITECTURE OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
endif()

# Absolute destinations: outside the /usr prefix by Debian policy.
install(FILES ${CMAKE_SOURCE_DIR}/config/default.yml DESTINATION /etc/diskprobe_exporter RENAME config.yml
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# ARGS for the unit's command line, as /etc/default/prometheus-node-exporter (a conffile).
install(FILES ${CMAKE_SOURCE_DIR}/deploy/debian/default DESTINATION /etc/default RENAME diskprobe_exporter
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# Debian 13 is merged-/usr and lintian there rejects /lib (aliased-location): trixie packages
# install the unit in /usr/lib/systemd/system (scripts/build-deb.sh); Debian 12's in /lib, as
# debhelper does there.
set(DISKPROBE_SYSTEMD_UNIT_DIR "/lib/systemd/system" CACHE STRING "Where the package installs the systemd unit")
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/diskprobe_exporter.service DESTINATION ${DISKPROBE_SYSTEMD_UNIT_DIR})
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/diskprobe_exporter.sysusers DESTINATION lib/sysusers.d
        RENAME diskprobe_exporter.conf)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/web-config DESTINATION ${DISKPROBE_DOC_DIR}/examples)
# The opt-in drop-ins that grant CAP_SYS_RAWIO (SMART through smartctl, SD vendor health over
# CMD56): examples only, never in a systemd directory, so nothing is granted until the operator
# copies one to /etc/systemd/system/diskprobe_exporter.service.d/ (their headers say how).
install(FILES ${CMAKE_SOURCE_DIR}/deploy/systemd/smart.conf ${CMAKE_SOURCE_DIR}/deploy/systemd/sd-vendor-health.conf
        DESTINATION ${DISKPROBE_DOC_DIR}/examples/systemd)
# The Grafana dashboards and the Prometheus alert rules, for the monitoring host (deploy/compose
# mounts the same files from the source tree).
install(FILES ${CMAKE_SOURCE_DIR}/dashboards/fleet-overview.json ${CMAKE_SOURCE_DIR}/dashboards/node-detail.json
        DESTINATION share/diskprobe-exporter/dashboards)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/deploy/prometheus/rules DESTINATION share/diskprobe-exporter/prometheus)

# Documentation, the manual page and the changelog, compressed as Debian policy asks (12.3, 12.7:
# gzip -9n, no timestamp, so the package is reproducible); the copyright file uncompressed (12.5).
find_program(GZIP_EXECUTABLE gzip REQUIRED)
set(diskprobe_gz_files)
foreach(pair "docs/diskprobe_exporter.1:diskprobe_exporter.1.gz" "deploy/debian/changelog:changelog.gz"
             "README.md:README.md.gz" "docs/metrics.md:metrics.md.gz" "docs/operations.md:operations.md.gz"
             "docs/architecture.md:architecture.md.gz")
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 src)
  list(GET pair 1 gz)
  add_custom_command(OUTPUT ${CMAKE_BINARY_DIR}/packaging/${gz}
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging
                     COMMAND ${GZIP_EXECUTABLE} -9n -c ${CMAKE_SOURCE_DIR}/${src} > ${CMAKE_BINARY_DIR}/packaging/${gz}
                     DEPENDS ${CMAKE_SOURCE_DIR}/${src} VERBATIM)
  list(APPEND diskprobe_gz_files ${CMAKE_BINARY_DIR}/packaging/${gz})
endforeach()
# A package with a Debian revision is not native: its changelog is changelog.Debian.gz (Policy
# 12.7), with an entry for the revision above the project's entries. The entry's date is that of
# the source's last commit (lintian wants it newer than the entry below; a fixed date keeps the
# package reproducible), or the configure time outside a Git checkout.
set(diskprobe_changelog ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
if(DISKPROBE_DEB_REVISION)
  find_package(Git QUIET)
  set(diskprobe_epoch "")
  if(GIT_EXECUTABLE)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${CMAKE_SOURCE_DIR} log -1 --format=%ct
                    OUTPUT_VARIABLE diskprobe_epoch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  endif()
  if(diskprobe_epoch)
    set(ENV{SOURCE_DATE_EPOCH} "${diskprobe_epoch}")  # string(TIMESTAMP) honours it
  endif()
  string(TIMESTAMP diskprobe_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
  file(STRINGS ${CMAKE_SOURCE_DIR}/deploy/debian/changelog diskprobe_maintainer REGEX "^ -- " LIMIT_COUNT 1)
  string(REGEX REPLACE "^( -- [^>]*>).*" "\\1" diskprobe_maintainer "${diskprobe_maintainer}")
  set(diskprobe_trailer "${diskprobe_maintainer}  ${diskprobe_date}")
  file(READ ${CMAKE_SOURCE_DIR}/deploy/debian/changelog diskprobe_changelog_text)
  file(WRITE ${CMAKE_BINARY_DIR}/packaging/changelog.Debian
       "diskprobe-exporter (${PROJECT_VERSION}-${DISKPROBE_DEB_REVISION}) ${DISKPROBE_DEB_DISTRIBUTION}; urgency=medium\n\n"
       "  * Built for ${DISKPROBE_DEB_DISTRIBUTION} against its own libraries.\n\n${diskprobe_trailer}\n\n"
       "${diskprobe_changelog_text}")
  set(diskprobe_changelog ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz)
  add_custom_command(OUTPUT ${diskprobe_changelog}
                     COMMAND ${GZIP_EXECUTABLE} -9n -c ${CMAKE_BINARY_DIR}/packaging/changelog.Debian > ${diskprobe_changelog}
                     DEPENDS ${CMAKE_BINARY_DIR}/packaging/changelog.Debian VERBATIM)
  list(APPEND diskprobe_gz_files ${diskprobe_changelog})
endif()
add_custom_target(packaging_docs ALL DEPENDS ${diskprobe_gz_files})
install(FILES ${CMAKE_BINARY_DIR}/packaging/diskprobe_exporter.1.gz DESTINATION share/man/man1)
install(FILES ${diskprobe_changelog} ${CMAKE_BINARY_DIR}/packaging/README.md.gz
              ${CMAKE_BINARY_DIR}/packaging/metrics.md.gz ${CMAKE_BINARY_DIR}/packaging/operations.md.gz
              ${CMAKE_BINARY_DIR}/packaging/architecture.md.gz ${CMAKE_SOURCE_DIR}/deploy/debian/copyright
        DESTINATION ${DISKPROBE_DOC_DIR})

include(CPack)
