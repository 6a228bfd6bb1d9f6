# `cmake --install` and find_package(vibra): the modules' static libraries and headers (installed
# by vibra_add_module), the CLI and the OpenCV codecs module, and the package files
#   <prefix>/lib/cmake/vibra/vibraConfig.cmake, vibraConfigVersion.cmake, vibraTargets.cmake
# that give a consumer the targets vibra::core, vibra::store, vibra::analysis (and vibra::tracking
# when built). The libraries are static, so their private dependencies (HDF5 + libdeflate for
# store, FFTW for analysis, OpenCV imgproc for tracking, Threads) are link-only requirements of
# the exported targets: vibraConfig.cmake finds them again (docs/cpp-api.md).
include(CMakePackageConfigHelpers)

set(VIBRA_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/vibra CACHE STRING
    "Where vibraConfig.cmake is installed, relative to the prefix")
get_property(VIBRA_EXPORTED_MODULES GLOBAL PROPERTY VIBRA_EXPORTED_MODULES)

install(TARGETS vibra RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(VIBRA_WITH_TRACKING)
  # Beside the CLI's ../lib, where the tracking library looks for it (tracking/src/io/opencv_codecs.cpp).
  install(TARGETS vibra_opencv_codecs LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# The Python package (vibra report runs it; `PYTHONPATH=<prefix>/share/vibra/python` for scripts).
if(EXISTS ${PROJECT_SOURCE_DIR}/python/vibra)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/vibra DESTINATION ${CMAKE_INSTALL_DATADIR}/vibra/python
          PATTERN __pycache__ EXCLUDE)
endif()

install(EXPORT vibraTargets NAMESPACE vibra:: DESTINATION ${VIBRA_INSTALL_CMAKEDIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vibraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/vibraConfig.cmake INSTALL_DESTINATION ${VIBRA_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/vibraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/vibraConfig.cmake ${PROJECT_BINARY_DIR}/vibraConfigVersion.cmake
        DESTINATION ${VIBRA_INSTALL_CMAKEDIR})
