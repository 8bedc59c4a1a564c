# SPDX-License-Identifier: MIT
# CHICKEN Scheme for the sequencer binding: finds csc, chicken.h and
# libchicken, and defines
#
#   BATON_CHICKEN_FOUND        ON when all three are there
#   baton_chicken_runtime      INTERFACE target: CHICKEN's headers, flags, library
#   baton_chicken_add_scheme(<target> <file.scm>)
#       translates a Scheme program with `csc -embedded -t` (optimised like
#       the seed's benchmark: -O3 -d0) and compiles the C into <target>.
#       The program may (include "baton-chicken.scm").
#
# Included by bindings/chicken/CMakeLists.txt and bench/seq/chicken.cmake
# (each include sets the variables in the includer's scope; the find_*
# results are cached, the target is made once).

# Installed (baton's package, find_package(baton COMPONENTS chicken)):
# BATON_CHICKEN_INSTALLED is set, csc is the one baton was built with, and
# the runtime is the imported baton::chicken_runtime.
if(BATON_CHICKEN_INSTALLED)
  set(BATON_CHICKEN_FOUND ON)
  set(BATON_CHICKEN_RUNTIME baton::chicken_runtime)
  if(NOT CHICKEN_CSC)
    set(CHICKEN_CSC "@CHICKEN_CSC@")
  endif()
else()
set(BATON_CHICKEN_DIR ${CMAKE_CURRENT_LIST_DIR})
set(BATON_CHICKEN_RUNTIME baton_chicken_runtime)
set(BATON_CHICKEN_FOUND OFF)
find_program(CHICKEN_CSC NAMES csc chicken-csc)
find_path(CHICKEN_INCLUDE_DIR chicken.h PATH_SUFFIXES chicken)
find_library(CHICKEN_LIBRARY NAMES chicken)
if(CHICKEN_CSC AND CHICKEN_INCLUDE_DIR AND CHICKEN_LIBRARY)
  set(BATON_CHICKEN_FOUND ON)
endif()

if(BATON_CHICKEN_FOUND AND NOT TARGET baton_chicken_runtime)
  add_library(baton_chicken_runtime INTERFACE)
  # The flags `csc -cflags` prints; SYSTEM keeps chicken.h's own warnings
  # out of our -Wall -Wextra builds.
  target_include_directories(baton_chicken_runtime SYSTEM INTERFACE ${CHICKEN_INCLUDE_DIR})
  target_compile_definitions(baton_chicken_runtime INTERFACE HAVE_CHICKEN_CONFIG_H C_ENABLE_PTABLES)
  target_compile_options(baton_chicken_runtime INTERFACE -fno-strict-aliasing -fwrapv)
  target_link_libraries(baton_chicken_runtime INTERFACE ${CHICKEN_LIBRARY} m ${CMAKE_DL_LIBS})
endif()

endif()

function(baton_chicken_add_scheme target scm)
  get_filename_component(_abs ${scm} ABSOLUTE)
  get_filename_component(_name ${scm} NAME_WE)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/${target}-${_name}.c)
  add_custom_command(OUTPUT ${_out}
    COMMAND ${CHICKEN_CSC} -embedded -t -O3 -d0 -I ${BATON_CHICKEN_DIR} ${_abs} -o ${_out}
    DEPENDS ${_abs} ${BATON_CHICKEN_DIR}/baton-chicken.scm
    COMMENT "csc -embedded -t ${scm}"
    VERBATIM)
  target_sources(${target} PRIVATE ${_out})
  # Generated code: embedded mode (no main), and its warnings are CHICKEN's.
  set(_opts -w)
  if(BATON_SANITIZE STREQUAL "thread")
    # Scheme compiled to C never returns until a minor GC longjmps out of
    # the nursery: tens of thousands of nested C frames, more than
    # ThreadSanitizer's shadow call stack holds (it aborts with a CHECK in
    # sanitizer_stackdepot.cpp). Leave this code uninstrumented, like
    # libchicken itself.
    list(APPEND _opts -fno-sanitize=thread)
  endif()
  set_source_files_properties(${_out} PROPERTIES
    COMPILE_DEFINITIONS C_EMBEDDED COMPILE_OPTIONS "${_opts}")
  target_link_libraries(${target} PRIVATE ${BATON_CHICKEN_RUNTIME})
endfunction()
