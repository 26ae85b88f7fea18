# The migration options through the `weft` program: `weft ctl` validates and appends commands,
# `weft demo` accepts --balance/--drain/--ctl and --write-mapping writes a mapping that
# `weft mapping check` accepts. Run with -DWEFT=<weft binary> -DWORK=<scratch folder>.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(expect_rc rc)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE got OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT got EQUAL rc)
    message(FATAL_ERROR "expected exit ${rc}, got ${got}: ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
expect_rc(2 ${WEFT} ctl migrate scale --to gpu:x --ctl ${WORK}/job.ctl)
expect_rc(2 ${WEFT} ctl migrate scale)
expect_rc(0 ${WEFT} ctl migrate scale --to rank:1/gpu:0 --ctl ${WORK}/job.ctl)
expect_rc(0 ${WEFT} ctl drain cpu --ctl ${WORK}/job.ctl)
file(READ ${WORK}/job.ctl ctl)
if(NOT ctl STREQUAL "migrate scale rank:1/gpu:0\ndrain rank:0/cpu\n")
  message(FATAL_ERROR "control file holds '${ctl}'")
endif()
expect_rc(2 ${WEFT} demo --devices cpu --tokens 10 --balance sideways)
expect_rc(2 ${WEFT} demo --devices cpu --tokens 10 --drain rank:x)
expect_rc(0 ${WEFT} demo --devices cpu --tokens 300 --length 64 --balance greedy --balance-period 0.05
          --ctl ${WORK}/run.ctl --drain cpu:1 --write-mapping ${WORK}/where.yaml)
expect_rc(0 ${WEFT} mapping check ${WORK}/where.yaml --app demo)
