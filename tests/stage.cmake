# Stages and resource pools (include/baton/stage.h, docs/stages.md): every
# test in both coroutine models on one and two workers, so both programs
# start worker threads and carry the threads label (they run under TSan).
foreach(_t test_stage test_stage_flow test_stage_pass test_stage_call)
  baton_add_test(${_t} LABELS threads)
endforeach()
