# VIBRA_SANITIZE — build every target of this tree (libraries, the vibra CLI, the OpenCV codecs
# module, tests, benches) with the given sanitizers, e.g. -DVIBRA_SANITIZE=address,undefined or
# -DVIBRA_SANITIZE=thread. Empty (the default): no sanitizer. Set at the top-level directory
# before any target exists, so every target and every link picks the flags up; the CLI that the
# integration tests run is instrumented too. -O1 -g1 (line tables: file:line in every report, a fraction of
# full debug info's compile and link time) replaces vibra_options' -O2 (VibraOptions.cmake).
# How to run: docs/reliability.md, "Sanitizers"; CI: .ci/sanitize.
set(VIBRA_SANITIZE "" CACHE STRING
    "Sanitizers for every target (-fsanitize=...): address,undefined or thread; empty for none")
if(VIBRA_SANITIZE)
  if(VIBRA_SANITIZE MATCHES "thread" AND VIBRA_SANITIZE MATCHES "address")
    message(FATAL_ERROR "VIBRA_SANITIZE=${VIBRA_SANITIZE}: thread cannot be combined with address")
  endif()
  set(VIBRA_SANITIZE_FLAGS -O1 -g1 -fsanitize=${VIBRA_SANITIZE} -fno-sanitize-recover=all
      -fno-omit-frame-pointer)
  add_compile_options(${VIBRA_SANITIZE_FLAGS})
  add_link_options(-fsanitize=${VIBRA_SANITIZE})
  message(STATUS "vibra: sanitizers ${VIBRA_SANITIZE} on every target")
endif()
