# Interface targets every vibra module links PRIVATE: language level and warnings.
include(GNUInstallDirs)
add_library(vibra_options INTERFACE)
target_compile_features(vibra_options INTERFACE cxx_std_20)
if(CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT VIBRA_SANITIZE)   # sanitizers: -O1 (VibraSanitize)
  target_compile_options(vibra_options INTERFACE -O2)
endif()

add_library(vibra_warnings INTERFACE)
target_compile_options(vibra_warnings INTERFACE -Wall -Wextra)
if(VIBRA_WERROR)
  target_compile_options(vibra_warnings INTERFACE -Werror)
endif()

# VIBRA_UNITY: compile each module in unity batches of VIBRA_UNITY_BATCH sources. The sources of a
# module share headers (the standard library, Eigen, FFTW, OpenCV) and the templates instantiated
# from them; a batch parses and generates them once. Sources keep their file-local helpers in
# distinct names (or in namespaces named for the file) so that they compile together.
option(VIBRA_UNITY "Compile the modules in unity batches" ON)
set(VIBRA_UNITY_BATCH 8 CACHE STRING "Sources per unity batch (VIBRA_UNITY)")

# vibra_add_module(NAME SOURCES...) — static library vibra_NAME with alias vibra::NAME,
# public headers under NAME/include (included as "vibra/NAME/..."). The library, its headers and
# its usage requirements are installed and exported as vibra::NAME (cmake/VibraInstall.cmake):
# vibra_options and vibra_warnings stay build-only (an installed consumer gets C++20, not -O2).
function(vibra_add_module name)
  add_library(vibra_${name} STATIC ${ARGN})
  add_library(vibra::${name} ALIAS vibra_${name})
  target_include_directories(vibra_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(vibra_${name} PRIVATE $<BUILD_INTERFACE:vibra_warnings>
                                      PUBLIC $<BUILD_INTERFACE:vibra_options>)
  target_compile_features(vibra_${name} PUBLIC cxx_std_20)
  set_target_properties(vibra_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON EXPORT_NAME ${name})
  if(VIBRA_UNITY)
    set_target_properties(vibra_${name} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${VIBRA_UNITY_BATCH})
  endif()
  if(VIBRA_SANITIZE)   # an instrumented static library needs the sanitizer runtime wherever it is linked
    target_link_options(vibra_${name} INTERFACE -fsanitize=${VIBRA_SANITIZE})
  endif()
  install(TARGETS vibra_${name} EXPORT vibraTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set_property(GLOBAL APPEND PROPERTY VIBRA_EXPORTED_MODULES ${name})
endfunction()
