# The call sequencer (include/baton/seq.h). Threads are involved, so it also
# runs under ThreadSanitizer.
baton_add_test(test_seq LABELS threads TIMEOUT 300)
baton_add_test(test_seq_tasks LABELS threads TIMEOUT 300)
# Onto the dedicated stack and back (src/seq/enter.h): alignment, registers,
# the floating-point control state.
baton_add_test(test_seq_enter TIMEOUT 60
  DEFINES BATON_TEST_UCONTEXT=$<STREQUAL:${BATON_SWITCH},ucontext>)
