# SPDX-License-Identifier: MIT
# baton_add_test(): how every test of the project is registered with CTest -
# the library's cmocka programs, the parser's, the bindings', and the checks
# run as commands. One call per test; what is special about a test is an
# argument of that call, never an if() around it.
#
#   baton_add_test(NAME
#     [SOURCES f.c...]      the program's sources (default NAME.c here)
#     [COMMAND cmd arg...]  run this instead of building a program
#     [LIBS target...] [DEFINES D=1...] [INCLUDES dir...]
#     [ARGS arg...]         the program's arguments
#     [LABELS l...]         beside `unit` (NO_UNIT_LABEL: these alone)
#     [ENV V=1...]          the test's environment
#     [SANITIZER_ENV V=1...]  added in the sanitizer builds (BATON_SANITIZE)
#     [TIMEOUT s]           default 600
#     [PASS_REGEX re]       the output must match (examples)
#     [REQUIRES var...]     registered only if every var is true
#     [UNLESS var...]       not registered if any var is true
#     [VARIANTS name:V=1...]  the same program again as test `name`, with
#                           V=1 (`;`-free) as its environment
#     [VALGRIND]            also valgrind_NAME, under memcheck (label valgrind)
#     [ASAN_REPEAT n])      under ASan also NAME_asan_repeat: n runs in a row
#
# A program links libbaton, cmocka, libm and baton_check (tests/check.c,
# the state behind tests/check.h), sees tests/ (check.h, internal.h) and the generated config.h, and is
# compiled with BATON_TEST_DEBUG (debug checks on) and BATON_TEST_UCONTEXT
# (the portable switch) set to 0 or 1. Cross-compiled runs (qemu) get the
# light loops and a longer time scale (its variants too).
find_package(PkgConfig REQUIRED)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
find_program(VALGRIND valgrind)
option(BATON_TEST_VALGRIND "also run tests under valgrind memcheck" ON)

# tests/check.c, compiled once and linked into every test program.
add_library(baton_check STATIC ${PROJECT_SOURCE_DIR}/tests/check.c)
target_include_directories(baton_check PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_link_libraries(baton_check PRIVATE baton PkgConfig::CMOCKA)

function(baton_add_test name)
  cmake_parse_arguments(T "VALGRIND;NO_UNIT_LABEL" "TIMEOUT;PASS_REGEX;ASAN_REPEAT"
    "SOURCES;COMMAND;LABELS;LIBS;ENV;SANITIZER_ENV;ARGS;DEFINES;INCLUDES;REQUIRES;UNLESS;VARIANTS"
    ${ARGN})
  if(T_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "baton_add_test(${name}): unknown arguments ${T_UNPARSED_ARGUMENTS}")
  endif()
  foreach(_v IN LISTS T_REQUIRES)
    if(NOT ${_v})
      return()
    endif()
  endforeach()
  foreach(_v IN LISTS T_UNLESS)
    if(${_v})
      return()
    endif()
  endforeach()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set(_labels ${T_LABELS})
  if(NOT T_NO_UNIT_LABEL)
    list(PREPEND _labels unit)
  endif()

  if(T_COMMAND)
    add_test(NAME ${name} COMMAND ${T_COMMAND} COMMAND_EXPAND_LISTS)
  else()
    if(NOT T_SOURCES)
      set(T_SOURCES ${name}.c)
    endif()
    add_executable(${name} ${T_SOURCES})
    target_compile_definitions(${name} PRIVATE BATON_TEST_DEBUG=$<BOOL:${BATON_DEBUG}>
      BATON_TEST_UCONTEXT=$<BOOL:${BATON_SWITCH_UCONTEXT}> ${T_DEFINES})
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests
      ${PROJECT_BINARY_DIR}/generated ${T_INCLUDES})
    target_link_libraries(${name} PRIVATE baton_check baton PkgConfig::CMOCKA m ${T_LIBS})
    add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  endif()

  set(_cross_env)
  if(CMAKE_CROSSCOMPILING AND NOT T_COMMAND)
    set(_cross_env "BATON_TEST_LIGHT=1" "BATON_TEST_TIME_SCALE=5")
  endif()
  set(_env ${T_ENV} ${_cross_env})
  if(BATON_SANITIZE)
    list(APPEND _env ${T_SANITIZER_ENV})
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${_labels}" TIMEOUT ${T_TIMEOUT})
  if(_env)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${_env}")
  endif()
  if(T_PASS_REGEX)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS_REGEX}")
  endif()

  # The same program under another name and environment.
  foreach(_variant IN LISTS T_VARIANTS)
    string(REGEX MATCH "^([^:]+):(.*)$" _m "${_variant}")
    if(NOT _m)
      message(FATAL_ERROR "baton_add_test(${name}): VARIANTS wants name:VAR=value, not ${_variant}")
    endif()
    set(_vname ${CMAKE_MATCH_1})
    set(_venv ${CMAKE_MATCH_2} ${_cross_env})
    add_test(NAME ${_vname} COMMAND ${name} ${T_ARGS})
    set_tests_properties(${_vname} PROPERTIES LABELS "${_labels}" TIMEOUT ${T_TIMEOUT}
      ENVIRONMENT "${_venv}")
  endforeach()

  if(T_VALGRIND AND VALGRIND AND BATON_TEST_VALGRIND AND NOT BATON_SANITIZE
     AND NOT CMAKE_CROSSCOMPILING)
    add_test(NAME valgrind_${name}
      COMMAND ${VALGRIND} --quiet --error-exitcode=99 --leak-check=full
              --errors-for-leak-kinds=definite --track-origins=yes $<TARGET_FILE:${name}>)
    set_tests_properties(valgrind_${name} PROPERTIES LABELS valgrind TIMEOUT 900
      ENVIRONMENT "BATON_TEST_LIGHT=1;BATON_TEST_TIME_SCALE=10")
  endif()

  # Under AddressSanitizer, n runs in a row (quiet; the failing one again
  # with its output).
  if(T_ASAN_REPEAT AND BATON_SANITIZE STREQUAL "address")
    add_test(NAME ${name}_asan_repeat
      COMMAND sh -c "i=0; while [ $i -lt ${T_ASAN_REPEAT} ]; do i=$((i+1)); $<TARGET_FILE:${name}> >/dev/null 2>&1 || { $<TARGET_FILE:${name}>; exit 1; }; done")
    set_tests_properties(${name}_asan_repeat PROPERTIES LABELS "${_labels}" TIMEOUT ${T_TIMEOUT})
  endif()
endfunction()

# baton_add_spin_model(NAME VARIANT:pass|fail...): one CTest per variant of
# the Spin model tests/model/NAME.pml, named NAME_model_<variant> (label
# `model`), run by tests/model/run.sh: a `pass` variant must show no error
# in any interleaving, a `fail` one (a broken protocol) must be caught. The
# models check protocols, not the build, so a cross build or a machine
# without spin skips them, saying so.
function(baton_add_spin_model name)
  find_program(SPIN spin)
  if(CMAKE_CROSSCOMPILING)
    message(STATUS "${name} model: cross-compiling, Spin model test skipped")
    return()
  elseif(NOT SPIN)
    message(STATUS "${name} model: spin not found, Spin model test skipped")
    return()
  endif()
  foreach(_v ${ARGN})
    string(REPLACE ":" ";" _v ${_v})
    list(GET _v 0 _variant)
    list(GET _v 1 _expect)
    string(TOLOWER ${_variant} _lower)
    add_test(NAME ${name}_model_${_lower}
      COMMAND sh ${PROJECT_SOURCE_DIR}/tests/model/run.sh ${SPIN} ${CMAKE_C_COMPILER}
              ${PROJECT_SOURCE_DIR}/tests/model/${name}.pml
              ${CMAKE_BINARY_DIR}/tests/${name}-model ${_variant} ${_expect})
    set_tests_properties(${name}_model_${_lower} PROPERTIES LABELS model TIMEOUT 300)
  endforeach()
endfunction()
