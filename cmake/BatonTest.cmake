# baton_add_test(): how every cmocka test program of the project is built
# and registered with CTest - the library's, the parser's and the bindings'.
#
#   baton_add_test(NAME [SOURCES f.c...] [LIBS target...] [LABELS l...]
#                  [ARGS arg...] [DEFINES D=1...] [ENV V=1...] [TIMEOUT s])
#
# SOURCES defaults to NAME.c in the calling directory. Every test links
# libbaton, cmocka and libm, sees tests/ (harness.h) and carries the label
# `unit`; cross-compiled runs (qemu) get the light loops and a longer time
# scale.
find_package(PkgConfig REQUIRED)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)

function(baton_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LABELS;LIBS;ENV;ARGS;DEFINES" ${ARGN})
  if(NOT T_SOURCES)
    set(T_SOURCES ${name}.c)
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_compile_definitions(${name} PRIVATE BATON_TEST_DEBUG=$<BOOL:${BATON_DEBUG}>
                             ${T_DEFINES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE baton PkgConfig::CMOCKA m ${T_LIBS})
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set(_env ${T_ENV})
  if(CMAKE_CROSSCOMPILING)
    list(APPEND _env "BATON_TEST_LIGHT=1" "BATON_TEST_TIME_SCALE=5")
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "unit;${T_LABELS}" TIMEOUT ${T_TIMEOUT})
  if(_env)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${_env}")
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
