# The migration options through the `weft` program: `weft ctl` validates and appends commands to
# a job's control file (and refuses one that is missing, a symlink or writable by others), a job
# never takes over a control file it did not create, `weft demo` accepts --balance/--drain/--ctl
# and --write-mapping writes a mapping that `weft mapping check` accepts.
# Run with -DWEFT=<weft binary> -DWORK=<scratch folder>.
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
expect_rc(2 ${WEFT} ctl migrate scale --to rank:1/gpu:0 --ctl ${WORK}/job.ctl)   # no job made it
# A file as a running job leaves it (its header line, mode 0600).
file(WRITE ${WORK}/job.ctl "# weft control file\n")
file(CHMOD ${WORK}/job.ctl PERMISSIONS OWNER_READ OWNER_WRITE)
expect_rc(0 ${WEFT} ctl migrate scale --to rank:1/gpu:0 --ctl ${WORK}/job.ctl)
expect_rc(0 ${WEFT} ctl drain cpu --ctl ${WORK}/job.ctl)
file(READ ${WORK}/job.ctl ctl)
if(NOT ctl STREQUAL "# weft control file\nmigrate scale rank:1/gpu:0\ndrain rank:0/cpu\n")
  message(FATAL_ERROR "control file holds '${ctl}'")
endif()
# A job never truncates or obeys a control file it did not create.
expect_rc(2 ${WEFT} demo --devices cpu --tokens 10 --ctl ${WORK}/job.ctl)
file(READ ${WORK}/job.ctl after)
if(NOT after STREQUAL ctl)
  message(FATAL_ERROR "a refused job changed the control file: '${after}'")
endif()
# weft ctl refuses a symlink and a file others may write.
file(CREATE_LINK ${WORK}/job.ctl ${WORK}/link.ctl SYMBOLIC)
expect_rc(2 ${WEFT} ctl drain cpu --ctl ${WORK}/link.ctl)
file(CHMOD ${WORK}/job.ctl PERMISSIONS OWNER_READ OWNER_WRITE GROUP_WRITE WORLD_WRITE)
expect_rc(2 ${WEFT} ctl drain cpu --ctl ${WORK}/job.ctl)
expect_rc(2 ${WEFT} demo --devices cpu --tokens 10 --balance sideways)
expect_rc(2 ${WEFT} demo --devices cpu --tokens 10 --drain rank:x)
expect_rc(2 ${WEFT} demo --devices cpu --tokens 10 --drain rank:5/cpu)
expect_rc(0 ${WEFT} demo --devices cpu --tokens 300 --length 64 --balance greedy --balance-period 0.05
          --ctl ${WORK}/run.ctl --drain cpu:1 --write-mapping ${WORK}/where.yaml)
if(EXISTS ${WORK}/run.ctl)
  message(FATAL_ERROR "the job left its control file ${WORK}/run.ctl behind")
endif()
expect_rc(0 ${WEFT} mapping check ${WORK}/where.yaml --app demo)
