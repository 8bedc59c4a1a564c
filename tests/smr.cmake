# Safe memory reclamation (include/baton/smr.h, docs/smr.md): one program,
# run once per asymmetric barrier the environment forces (BATON_BARRIER;
# under TSan every run takes `fence`), and the Spin model of both flavours.
baton_add_test(test_smr LABELS threads TIMEOUT 300 ENV BATON_BARRIER=membarrier)
foreach(_b mprotect fence)
  add_test(NAME test_smr_${_b} COMMAND test_smr)
  set_tests_properties(test_smr_${_b} PROPERTIES LABELS "unit;threads" TIMEOUT 300
    ENVIRONMENT "BATON_BARRIER=${_b}")
endforeach()
if(BATON_FAULT_INJECTION)
  baton_add_test(test_faults_smr LABELS threads TIMEOUT 600)
endif()
baton_add_spin_model(smr SMR:pass HP:pass BROKEN_BARRIER:fail BROKEN_UNLOCK:fail
  HP_BROKEN_BARRIER:fail HP_BROKEN_RECHECK:fail)
