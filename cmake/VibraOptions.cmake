# Interface targets every vibra module links PRIVATE: language level and warnings.
add_library(vibra_options INTERFACE)
target_compile_features(vibra_options INTERFACE cxx_std_20)
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  target_compile_options(vibra_options INTERFACE -O2)
endif()

add_library(vibra_warnings INTERFACE)
target_compile_options(vibra_warnings INTERFACE -Wall -Wextra)
if(VIBRA_WERROR)
  target_compile_options(vibra_warnings INTERFACE -Werror)
endif()

# vibra_add_module(NAME SOURCES...) — static library vibra_NAME with alias vibra::NAME,
# public headers under NAME/include (included as "vibra/NAME/...").
function(vibra_add_module name)
  add_library(vibra_${name} STATIC ${ARGN})
  add_library(vibra::${name} ALIAS vibra_${name})
  target_include_directories(vibra_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  target_link_libraries(vibra_${name} PRIVATE vibra_warnings PUBLIC vibra_options)
  set_target_properties(vibra_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
endfunction()
