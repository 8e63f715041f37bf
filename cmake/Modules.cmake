# diskprobe_module(NAME [EXCLUDE file...] [PUBLIC dep...] [PRIVATE dep...])
#
# Builds exporter/NAME/*.cpp into the static library diskprobe_NAME. Its headers are included as
# "NAME/header.h" through a directory of its own, <build>/include/NAME, that holds one symlink,
# NAME -> exporter/NAME. A module's include path is that directory and those of the modules it
# links (PUBLIC links pass theirs on), so a header of a module it does not link is not found: the
# layering is a compile error, not a review comment.
function(diskprobe_module name)
  cmake_parse_arguments(M "" "" "EXCLUDE;PUBLIC;PRIVATE" ${ARGN})
  set(dir ${CMAKE_SOURCE_DIR}/exporter/${name})
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cpp)
  foreach(x IN LISTS M_EXCLUDE)
    list(REMOVE_ITEM sources ${dir}/${x})
  endforeach()
  add_library(diskprobe_${name} STATIC ${sources})
  set(inc ${CMAKE_BINARY_DIR}/include/${name})
  file(MAKE_DIRECTORY ${inc})
  if(NOT EXISTS ${inc}/${name})
    file(CREATE_LINK ${dir} ${inc}/${name} SYMBOLIC)
  endif()
  target_include_directories(diskprobe_${name} PUBLIC ${inc})
  target_link_libraries(diskprobe_${name} PUBLIC ${M_PUBLIC} PRIVATE ${M_PRIVATE})
endfunction()
