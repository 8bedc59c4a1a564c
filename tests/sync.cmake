# Wait groups, mutexes and semaphores (include/baton/sync.h, docs/sync.md):
# every primitive in both coroutine models on one and two workers.
baton_add_test(test_sync LABELS threads)
baton_add_test(test_sync_sem LABELS threads)
