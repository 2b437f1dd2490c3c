# Runs bench/rating_stability.py on the smoke plan twice and checks the JSON it writes: one rated
# cell (bert-tiny cpu q8_0; the f32 baseline is left out), two labels, agreement 1 or 2 of 2.
file(REMOVE ${OUT})
execute_process(COMMAND ${PY} ${SCRIPT} --plan ${PLAN} --runs 2 --accelmatrix ${EXE} --json ${OUT}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "rating_stability.py exited ${rc}")
endif()
file(READ ${OUT} doc)
string(JSON cells GET "${doc}" cell_count)
string(JSON runs LENGTH "${doc}" runs)
string(JSON model GET "${doc}" cells 0 model)
string(JSON precision GET "${doc}" cells 0 precision)
string(JSON labels LENGTH "${doc}" cells 0 labels)
string(JSON agree GET "${doc}" cells 0 agree)
if(NOT cells EQUAL 1 OR NOT runs EQUAL 2 OR NOT model STREQUAL "bert-tiny" OR NOT precision STREQUAL "q8_0"
   OR NOT labels EQUAL 2 OR agree LESS 1 OR agree GREATER 2)
  message(FATAL_ERROR "unexpected stability JSON: cells=${cells} runs=${runs} ${model} ${precision} labels=${labels} agree=${agree}")
endif()
# Each run's host speed against the median run (of two runs: the faster one, so one of them is
# exactly 1), and the main phase holds that run at least.
string(JSON speed0 GET "${doc}" runs 0 host_speed)
string(JSON speed1 GET "${doc}" runs 1 host_speed)
string(JSON phase_runs LENGTH "${doc}" main_phase_runs)
if(speed0 LESS_EQUAL 0 OR speed1 LESS_EQUAL 0 OR phase_runs LESS 1
   OR NOT (speed0 EQUAL 1 OR speed1 EQUAL 1))
  message(FATAL_ERROR "unexpected host speeds: ${speed0} ${speed1}, main phase of ${phase_runs} run(s)")
endif()
