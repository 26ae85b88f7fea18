# Install rules and the exported package: find_package(weft) then link weft::weft.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS weft_runtime EXPORT weftTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/weft DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT weftTargets NAMESPACE weft:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
set(WEFT_INSTALL_HAVE_CUDA ${WEFT_HAVE_CUDA})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/weftConfig.cmake.in
  ${PROJECT_BINARY_DIR}/weftConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/weftConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/weftConfig.cmake ${PROJECT_BINARY_DIR}/weftConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/weft)
