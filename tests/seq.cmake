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
baton_add_spin_model(seq_sleep SEQ:pass BROKEN_BARRIER:fail BROKEN_ORDER:fail)
# The claims of baton/seq.h checked one by one (attributes, errors, names,
# destroy from its own stack).
baton_add_test(test_promise_seq TIMEOUT 60)
