# Install rules and the exported package:
#   find_package(weft)                                 weft::weft, the runtime library
#   find_package(weft COMPONENTS demo io ...)          also the task libraries weft::demo, weft::io, ...
# The `weft` program installs itself (apps/CMakeLists.txt).
include(CMakePackageConfigHelpers)
set(_weft_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
install(TARGETS weft_runtime EXPORT weftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${_weft_cmake_dir})

# Every task library (tasks/<family>, registered by weft_register_tasks) is the install component
# <family>: its static library, its headers and its own export file, which weftConfig.cmake loads
# only when the component is asked for. A static library hands its private dependencies to
# whoever links it, so the package must find them again for a consumer: weftConfig.cmake.in does
# it for the imported targets listed here, and configuring stops if a task library links another
# one, so that a new dependency cannot be forgotten there.
set(_weft_config_finds PNG::PNG ZLIB::ZLIB TIFF::TIFF hdf5::hdf5 OpenMP::OpenMP_CXX PkgConfig::FFTW3F
    CUDA::cudart CUDA::cufft)
get_property(_weft_task_targets GLOBAL PROPERTY WEFT_TASK_TARGETS)
set(WEFT_INSTALL_COMPONENTS "")
set(WEFT_INSTALL_COMPONENT_LINKS "")
foreach(_t IN LISTS _weft_task_targets)
  get_target_property(_component ${_t} EXPORT_NAME)
  list(APPEND WEFT_INSTALL_COMPONENTS ${_component})
  set(_requires "")
  set(_imports "")
  get_target_property(_libs ${_t} LINK_LIBRARIES)
  foreach(_l IN LISTS _libs)
    if(TARGET ${_l})
      get_target_property(_aliased ${_l} ALIASED_TARGET)
      if(_aliased)
        set(_l ${_aliased})
      endif()
    endif()
    if(_l IN_LIST _weft_task_targets)
      get_target_property(_other ${_l} EXPORT_NAME)
      list(APPEND _requires ${_other})
    elseif(_l MATCHES "::")
      # Another package's imported target (those found in a family's folder are not visible here,
      # hence the test on the name).
      if(NOT _l IN_LIST _weft_config_finds)
        message(FATAL_ERROR "${_t} links ${_l}, which cmake/weftConfig.cmake.in does not find for "
                            "a consumer of the installed package: add it there and to cmake/install.cmake")
      endif()
      list(APPEND _imports ${_l})
    endif()
  endforeach()
  string(APPEND WEFT_INSTALL_COMPONENT_LINKS
         "set(_weft_${_component}_requires ${_requires})\nset(_weft_${_component}_imports ${_imports})\n")
  get_target_property(_dir ${_t} SOURCE_DIR)
  install(TARGETS ${_t} EXPORT weft-${_component}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ${_component})
  install(DIRECTORY ${_dir}/include/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT ${_component})
  install(EXPORT weft-${_component}-targets NAMESPACE weft:: DESTINATION ${_weft_cmake_dir}
          COMPONENT ${_component})
endforeach()

set(WEFT_INSTALL_HAVE_CUDA ${WEFT_HAVE_CUDA})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in
  ${PROJECT_BINARY_DIR}/weftConfig.cmake INSTALL_DESTINATION ${_weft_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/weftConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/weftConfig.cmake ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
        DESTINATION ${_weft_cmake_dir})
