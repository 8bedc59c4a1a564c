# The public contract's mechanical parts: error codes and version.
baton_add_test(test_error)
target_compile_definitions(test_error PRIVATE
  BATON_TEST_PROJECT_VERSION="${PROJECT_VERSION}")
