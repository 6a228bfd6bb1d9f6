# cmake -DBINARY_DIR=… -DSOURCE_DIR=… -DSCRATCH=… -DCLI=… -DCXX=… -DWITH_TRACKING=ON|OFF -P test_find_package.cmake
# `cmake --install` of the build into SCRATCH/prefix, then, as a user would: configure and build
# docs/examples/find_package against the installed package only, run it on a trajectory file of
# ballistic particles (MSD known exactly) and compare its output; with tracking, the same for
# tests/install/tracking_consumer (every exported target linked, disks located in a rendered frame).
cmake_minimum_required(VERSION 3.20)
foreach(v BINARY_DIR SOURCE_DIR SCRATCH CLI CXX WITH_TRACKING)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "test_find_package.cmake: -D${v}=… missing")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH})
set(prefix ${SCRATCH}/prefix)
run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
foreach(f lib/cmake/vibra/vibraConfig.cmake lib/cmake/vibra/vibraConfigVersion.cmake
          lib/cmake/vibra/vibraTargets.cmake include/vibra/core/trajectory.hpp
          include/vibra/store/trajectory_file.hpp include/vibra/analysis/msd.hpp bin/vibra
          share/vibra/python/vibra/report.py)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "cmake --install did not install ${f} under ${prefix}")
  endif()
endforeach()

# Three particles moving with constant velocities (1,0), (0,2), (3,4) px/frame over 8 frames:
# MSD(τ) = mean |v|² τ² = 10 τ² px², with frames 0.5 s apart (lag = 0.5 τ s).
set(csv "frame,particle,x,y,species\n")
foreach(f RANGE 0 7)
  math(EXPR x1 "10 + ${f}")
  math(EXPR y2 "20 + 2 * ${f}")
  math(EXPR x3 "30 + 3 * ${f}")
  math(EXPR y3 "40 + 4 * ${f}")
  string(APPEND csv "${f},0,${x1},10,0\n${f},1,20,${y2},1\n${f},2,${x3},${y3},0\n")
endforeach()
file(WRITE ${SCRATCH}/ballistic.csv "${csv}")
run(${CLI} -q import ${SCRATCH}/ballistic.csv -o ${SCRATCH}/ballistic.h5 --dt 0.5 --time-unit s)

set(common -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release
           -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/docs/examples/find_package -B ${SCRATCH}/example ${common})
file(STRINGS ${SCRATCH}/example/CMakeCache.txt vibra_dir REGEX "^vibra_DIR:")
if(NOT vibra_dir STREQUAL "vibra_DIR:PATH=${prefix}/lib/cmake/vibra")
  message(FATAL_ERROR "the example found vibra elsewhere than the install prefix: ${vibra_dir}")
endif()
run(${CMAKE_COMMAND} --build ${SCRATCH}/example)
run(${SCRATCH}/example/msd_example ${SCRATCH}/ballistic.h5)
set(expected "lag [s], msd [px^2]\n0 0\n0.5 10\n1 40\n1.5 90\n2 160\n")
if(NOT out STREQUAL expected)
  message(FATAL_ERROR "msd_example printed\n${out}\nexpected\n${expected}")
endif()
message(STATUS "docs/examples/find_package: built against ${prefix}, MSD = 10 τ² as expected")

if(WITH_TRACKING)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/tracking_consumer -B ${SCRATCH}/tracking ${common})
  run(${CMAKE_COMMAND} --build ${SCRATCH}/tracking)
  run(${SCRATCH}/tracking/tracking_consumer)
  if(NOT out MATCHES "3 disks found, worst error below 0.05 px")
    message(FATAL_ERROR "tracking_consumer printed: ${out}")
  endif()
  message(STATUS "tests/install/tracking_consumer: ${out}")
endif()
