# Stages and resource pools (include/baton/stage.h, docs/stages.md): every
# test in both coroutine models on one and two workers.
baton_add_test(test_stage LABELS threads)
