# Event counts (include/baton/ec.h): unit tests, the threaded stress test
# and the Spin model of the wake-up protocol (docs/ec.md).
baton_add_test(test_ec)
baton_add_test(test_ec_threads LABELS threads LIBS Threads::Threads)
