# cmake --install puts the library, its headers (<prefix>/include/hdl/{media,decoders,pipeline})
# and a package config, so a C++ user writes:
#   find_package(HabanaDataLoader REQUIRED)
#   target_link_libraries(app PRIVATE HabanaDataLoader::hdl)
include(CMakePackageConfigHelpers)

install(TARGETS hdl EXPORT HabanaDataLoaderTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
foreach(dir media decoders pipeline)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hdl/${dir}
          FILES_MATCHING PATTERN "*.h" PATTERN "detail" EXCLUDE PATTERN "operators" EXCLUDE)
endforeach()
install(EXPORT HabanaDataLoaderTargets NAMESPACE HabanaDataLoader::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/HabanaDataLoader)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/HabanaDataLoaderConfig.cmake.in
  ${PROJECT_BINARY_DIR}/HabanaDataLoaderConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/HabanaDataLoader)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/HabanaDataLoaderConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/HabanaDataLoaderConfig.cmake
              ${PROJECT_BINARY_DIR}/HabanaDataLoaderConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/HabanaDataLoader)
