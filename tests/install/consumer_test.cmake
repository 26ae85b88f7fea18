# Script run by ctest (tests/install/CMakeLists.txt): install, run the installed program, build and
# run the projects that use the package.
function(run what)
  cmake_parse_arguments(R "FAIL" "MATCH" "COMMAND" ${ARGN})
  execute_process(COMMAND ${R_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(R_FAIL)
    if(NOT rc OR NOT "${out}${err}" MATCHES "${R_MATCH}")
      message(FATAL_ERROR "${what}: expected to fail saying '${R_MATCH}', got ${rc}\n${out}${err}")
    endif()
  elseif(rc OR (R_MATCH AND NOT "${out}${err}" MATCHES "${R_MATCH}"))
    message(FATAL_ERROR "${what} failed: ${rc}\n${out}${err}")
  endif()
  message(STATUS "${what}: ok")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("install" COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# The program finds libweft relative to itself (RUNPATH $ORIGIN/../lib), wherever the prefix is.
run("weft devices in the prefix" COMMAND ${prefix}/bin/weft devices MATCH "rank 0")
file(RENAME ${prefix} ${WORK_DIR}/moved)
run("weft devices in a moved prefix" COMMAND ${WORK_DIR}/moved/bin/weft devices MATCH "rank 0")
file(RENAME ${WORK_DIR}/moved ${prefix})

set(configure -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
if(CUDA_COMPILER)  # a package built with CUDA finds the same toolkit
  get_filename_component(cuda_root ${CUDA_COMPILER} DIRECTORY)
  get_filename_component(cuda_root ${cuda_root} DIRECTORY)
  list(APPEND configure -DCUDAToolkit_ROOT=${cuda_root})
endif()
string(REPLACE "|" ";" mpiexec_extra "${MPIEXEC_EXTRA}")

run("configure the consumer" COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/consumer -B ${WORK_DIR}/consumer ${configure})
run("build the consumer" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run("the consumer on one rank" COMMAND ${WORK_DIR}/consumer/consumer ${WORK_DIR}
    MATCH "consumer: 40 tokens of 1000 values checked on rank 0 of 1, scale on cpu; HDF5 and PNG read back")
run("the consumer on two ranks"
    COMMAND ${MPIEXEC} ${MPIEXEC_NUMPROC_FLAG} 2 ${mpiexec_extra} ${WORK_DIR}/consumer/consumer ${WORK_DIR}
    MATCH "consumer: 40 tokens of 1000 values checked on rank 0 of 2, scale on rank:1/cpu; HDF5 and PNG read back")

run("configure the components project" COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/components -B ${WORK_DIR}/components ${configure})
run("build the components project" COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/components)
run("the components project" COMMAND ${WORK_DIR}/components/components
    MATCH "components: filters, morphology, saliency and flow checked")
run("an unknown required component" FAIL MATCH "weft has no component 'nosuch'"
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/components -B ${WORK_DIR}/unknown-required ${configure} -DUNKNOWN=required)
run("an unknown optional component"
    COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/components -B ${WORK_DIR}/unknown-optional ${configure} -DUNKNOWN=optional)
