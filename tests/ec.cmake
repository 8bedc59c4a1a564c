# Event counts (include/baton/ec.h): unit tests, the threaded stress test
# and the Spin model of the wake-up protocol (docs/ec.md).
baton_add_test(test_ec)
# 1,000,000 hand-overs natively; sanitizers (TSan runs this label) and qemu
# get the light count, a twentieth.
if(BATON_SANITIZE)
  baton_add_test(test_ec_threads LABELS threads LIBS Threads::Threads
    ENV BATON_TEST_LIGHT=1 BATON_TEST_TIME_SCALE=5)
else()
  baton_add_test(test_ec_threads LABELS threads LIBS Threads::Threads)
endif()

# The Spin model (tests/model/ec.pml): the real protocols must show no lost
# wake-up in any interleaving, and three broken ones must be caught. It
# checks the protocol, not the build, so a cross build skips it.
find_program(SPIN spin)
if(CMAKE_CROSSCOMPILING)
  message(STATUS "ec model: cross-compiling, Spin model test skipped")
elseif(NOT SPIN)
  message(STATUS "ec model: spin not found, Spin model test skipped")
else()
  foreach(_v MP:pass SP:pass BROKEN_MP:fail BROKEN_ORDER:fail BROKEN_SP:fail)
    string(REPLACE ":" ";" _v ${_v})
    list(GET _v 0 _variant)
    list(GET _v 1 _expect)
    string(TOLOWER ${_variant} _name)
    add_test(NAME ec_model_${_name}
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/model/run.sh ${SPIN} ${CMAKE_C_COMPILER}
              ${CMAKE_CURRENT_SOURCE_DIR}/model/ec.pml ${CMAKE_CURRENT_BINARY_DIR}/ec-model
              ${_variant} ${_expect})
    set_tests_properties(ec_model_${_name} PROPERTIES LABELS model TIMEOUT 300)
  endforeach()
endif()
