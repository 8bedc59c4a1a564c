# The scheduler, channels and select (include/baton/sched.h, chan.h):
# behaviour tests in both coroutine models with 1 and 2 workers, and a
# token-passing stress test whose waits all carry timeouts, so that a lost
# wake-up fails with a message. Every program starts worker threads, so all
# carry the threads label (they also run under TSan). test_chan_bias: the
# biased channels handed over to other workers and threads; test_copystack_tasks:
# copy-stack tasks that never block, park deep, keep pointers to locals;
# test_cancel: baton_task_cancel on every blocking call, and racing wake-ups.
foreach(_t test_sched test_sched_timer test_chan test_chan_bias test_copystack_tasks test_select
        test_stress_sched test_handoff
        test_sched_destroy test_cancel)
  baton_add_test(${_t} LABELS threads LIBS Threads::Threads)
endforeach()

# A million tasks in rings, in each model (bounded by its own watchdog).
# Native builds only: under a sanitizer the shadow memory of a million
# stacks would not fit, and under qemu it would take too long.
if(NOT BATON_SANITIZE AND NOT CMAKE_CROSSCOMPILING)
  baton_add_test(test_ring_million TIMEOUT 400)
endif()

# Under AddressSanitizer, the scheduler tests again, five times: they run
# copy-stack tasks through the copier on worker threads that end and are
# replaced, which is where redzones left in the shadow of an unmapped stack
# used to be reported as overflows in copy_in (7 runs in 10 failed before
# stacks were unpoisoned before munmap).
if(BATON_SANITIZE STREQUAL "address")
  add_test(NAME test_sched_asan_repeat
    COMMAND sh -c "for i in 1 2 3 4 5; do $<TARGET_FILE:test_sched> >/dev/null 2>&1 || { $<TARGET_FILE:test_sched>; exit 1; }; done")
  set_tests_properties(test_sched_asan_repeat PROPERTIES LABELS "unit;threads" TIMEOUT 600)
endif()

# The Spin model of the biased channel lock (tests/model/chan_bias.pml):
# under TSO with W's store buffer, the protocol keeps the two critical
# sections apart in every interleaving; without the heavy barrier, or
# without the bias worker's re-check, the model must find an overlap.
baton_add_spin_model(chan_bias BIAS:pass BROKEN_BARRIER:fail BROKEN_RECHECK:fail)
# The claims of baton/sched.h checked one by one (attributes, errors,
# calls outside tasks).
baton_add_test(test_promise_sched LABELS threads)
