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
# wake-up in any interleaving, and three broken ones must be caught.
baton_add_spin_model(ec MP:pass SP:pass BROKEN_MP:fail BROKEN_ORDER:fail BROKEN_SP:fail)
