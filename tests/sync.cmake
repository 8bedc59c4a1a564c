# Wait groups, mutexes and semaphores (include/baton/sync.h, docs/sync.md):
# every primitive in both coroutine models on one and two workers.
baton_add_test(test_sync LABELS threads)
baton_add_test(test_sync_sem LABELS threads)
# One rule for timeout 0 (only try: BATON_EAGAIN) in every module.
baton_add_test(test_timeout_zero LABELS threads)
