# The io_uring reactor (src/io/uring.c): run with the backend asked for;
# where the build has liburing the test also checks that it is the one in
# use (without liburing it checks the fall-back to epoll).
baton_add_test(test_io_uring_backend LABELS threads TIMEOUT 120
  ENV "BATON_IO_BACKEND=io_uring")
if(BATON_HAVE_LIBURING)
  target_compile_definitions(test_io_uring_backend PRIVATE BATON_EXPECT_URING=1)
endif()
