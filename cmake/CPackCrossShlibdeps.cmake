# CPACK_PROJECT_CONFIG_FILE of cross builds (cmake/Packaging.cmake sets it): cpack reads this before
# running CPackDeb, whose find_program(SHLIBDEPS_EXECUTABLE dpkg-shlibdeps) keeps a variable that
# is already set. dpkg-shlibdeps then computes Depends from the target's libraries in the sysroot:
#   DEB_HOST_ARCH=<arch>   symbols files evaluated for the target architecture, <triplet>-objdump
#   --admindir=<sysroot>/var/lib/dpkg   which package owns a library, its symbols/shlibs files
#                          (written by scripts/cross-dpkg-db.sh, called by scripts/make-sysroot.sh)
#   -l<sysroot>/usr/lib/<triplet>       where the libraries are
# Without this, dpkg-shlibdeps asks the machine's dpkg database, which owns no arm library.
if(CPACK_GENERATOR STREQUAL "DEB" AND CPACK_DISKPROBE_SYSROOT)
  set(_dp_admindir "${CPACK_DISKPROBE_SYSROOT}/var/lib/dpkg")
  if(NOT EXISTS "${_dp_admindir}/status" OR NOT EXISTS "${_dp_admindir}/info/sysroot-path")
    message(FATAL_ERROR "no dpkg database in ${CPACK_DISKPROBE_SYSROOT} for dpkg-shlibdeps: "
                        "scripts/cross-dpkg-db.sh ${CPACK_DISKPROBE_SYSROOT} ${CPACK_DISKPROBE_SYSROOT}.apt/archives")
  endif()
  file(READ "${_dp_admindir}/info/sysroot-path" _dp_recorded)
  string(STRIP "${_dp_recorded}" _dp_recorded)
  file(REAL_PATH "${CPACK_DISKPROBE_SYSROOT}" _dp_real)
  if(NOT _dp_recorded STREQUAL _dp_real)
    message(FATAL_ERROR "the dpkg database in ${CPACK_DISKPROBE_SYSROOT} was written for ${_dp_recorded}: "
                        "scripts/cross-dpkg-db.sh ${CPACK_DISKPROBE_SYSROOT} ${CPACK_DISKPROBE_SYSROOT}.apt/archives")
  endif()
  find_program(_dp_shlibdeps dpkg-shlibdeps REQUIRED)
  set(SHLIBDEPS_EXECUTABLE
      "${CMAKE_COMMAND}" -E env "DEB_HOST_ARCH=${CPACK_DEBIAN_PACKAGE_ARCHITECTURE}"
      "${_dp_shlibdeps}" "--admindir=${_dp_admindir}"
      "-l${_dp_real}/usr/lib/${CPACK_DISKPROBE_LIBRARY_ARCHITECTURE}")
  message(STATUS "CPackDeb: cross dpkg-shlibdeps for ${CPACK_DEBIAN_PACKAGE_ARCHITECTURE}, database ${_dp_admindir}")
endif()
