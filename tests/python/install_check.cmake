# Installs the build into PREFIX and imports the Python package from PREFIX/SITE (run by ctest).
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${PREFIX} RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install failed: ${rc}")
endif()
set(ENV{PYTHONPATH} "${PREFIX}/${SITE}")
execute_process(COMMAND ${PYTHON} -c
  "import numpy as np, weft; a = np.arange(25, dtype=np.uint8).reshape(5, 5); m = weft.median(a, 3, devices='cpu'); assert m.shape == (5, 5) and int(m[2, 2]) == 12, m; print('installed weft', weft.version()['version'], 'from', weft.__file__)"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc OR NOT out MATCHES "from ${PREFIX}")
  message(FATAL_ERROR "importing the installed package failed: ${rc}\n${out}\n${err}")
endif()
message(STATUS "${out}")
file(REMOVE_RECURSE ${PREFIX})
