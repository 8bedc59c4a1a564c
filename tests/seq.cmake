# The call sequencer (include/baton/seq.h). Threads are involved, so it also
# runs under ThreadSanitizer.
baton_add_test(test_seq LABELS threads TIMEOUT 300)
baton_add_test(test_seq_tasks LABELS threads TIMEOUT 300)
