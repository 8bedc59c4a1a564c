# The reactor (include/baton/io.h): once per backend. io_uring needs the
# library built with liburing and a kernel that allows it; otherwise the
# worker falls back to epoll and the test still runs.
baton_add_test(test_io LABELS threads ENV "BATON_IO_BACKEND=epoll")
add_test(NAME test_io_uring COMMAND test_io)
set_tests_properties(test_io_uring PROPERTIES LABELS "unit;threads" TIMEOUT 600
  ENVIRONMENT "BATON_IO_BACKEND=io_uring")
# The claims of baton/io.h checked one by one (the backend's owner and its
# setter, calls outside tasks); without BATON_IO_BACKEND, which overrides.
baton_add_test(test_promise_io LABELS threads)
