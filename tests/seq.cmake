# The call sequencer (include/baton/seq.h). Threads are involved, so it also
# runs under ThreadSanitizer.
baton_add_test(test_seq LABELS threads TIMEOUT 300)
baton_add_test(test_seq_tasks LABELS threads TIMEOUT 300)
# Onto the dedicated stack and back (src/seq/enter.h): alignment, registers,
# the floating-point control state.
baton_add_test(test_seq_enter TIMEOUT 60
  DEFINES BATON_TEST_UCONTEXT=$<STREQUAL:${BATON_SWITCH},ucontext>)

# The Spin model of the asymmetric Dekker pair between a release and a
# waiter going to sleep (tests/model/seq_sleep.pml): no lost wake-up under
# TSO with the releaser's store buffer; without the sleeper's heavy
# barrier, or with its loads before its announcement, the model must find
# the lost wake-up (which the threaded tests cannot: they pass without the
# barrier too).
find_program(SPIN spin)
if(NOT CMAKE_CROSSCOMPILING AND SPIN)
  foreach(_v SEQ:pass BROKEN_BARRIER:fail BROKEN_ORDER:fail)
    string(REPLACE ":" ";" _v ${_v})
    list(GET _v 0 _variant)
    list(GET _v 1 _expect)
    string(TOLOWER ${_variant} _name)
    add_test(NAME seq_sleep_model_${_name}
      COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/model/run.sh ${SPIN} ${CMAKE_C_COMPILER}
              ${CMAKE_CURRENT_SOURCE_DIR}/model/seq_sleep.pml
              ${CMAKE_CURRENT_BINARY_DIR}/seq-sleep-model ${_variant} ${_expect})
    set_tests_properties(seq_sleep_model_${_name} PROPERTIES LABELS model TIMEOUT 300)
  endforeach()
endif()
