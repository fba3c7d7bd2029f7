# Every tests/test_*.c is one test program: exit 0 pass, 77 skip, else fail.
file(GLOB TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/test_*.c)
foreach(src ${TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE comexops comexswap comexrt comexmemnode comexclient comexcore m)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
    ENVIRONMENT "COMEX_BIN=$<TARGET_FILE:comex>;COMEX_SRC=${CMAKE_SOURCE_DIR}")
endforeach()

# Every tests/e2e_*.sh runs against the built comex binary.
file(GLOB E2E_SCRIPTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/e2e_*.sh)
foreach(script ${E2E_SCRIPTS})
  get_filename_component(name ${script} NAME_WE)
  add_test(NAME ${name} COMMAND bash ${script})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
    ENVIRONMENT "COMEX_BIN=$<TARGET_FILE:comex>;COMEX_BUILD=${CMAKE_BINARY_DIR};COMEX_SRC=${CMAKE_SOURCE_DIR}")
endforeach()

# Fuzz targets need clang's libFuzzer. They compile the transport-free modules
# they exercise themselves, so that those get coverage instrumentation; the
# bounded run is a test of its own (a longer one: docs/TESTING.md).
if(CMAKE_C_COMPILER_ID STREQUAL "Clang")
  add_executable(fuzz_serve ${CMAKE_SOURCE_DIR}/tests/fuzz_serve.c
    ${CMAKE_SOURCE_DIR}/src/memnode/serve.c ${CMAKE_SOURCE_DIR}/src/proto.c
    ${CMAKE_SOURCE_DIR}/src/memnode/buddy.c ${CMAKE_SOURCE_DIR}/src/log.c
    ${CMAKE_SOURCE_DIR}/src/auth.c)
  target_include_directories(fuzz_serve PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/src/memnode)
  target_compile_options(fuzz_serve PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_serve PRIVATE -fsanitize=fuzzer,address,undefined)
  add_test(NAME fuzz_serve COMMAND fuzz_serve -runs=300000 -max_len=8192 -seed=1)
  set_tests_properties(fuzz_serve PROPERTIES TIMEOUT 300)
endif()

# tests/progs/prog_*.c: plain programs (no comex headers) that the
# e2e_run_*.sh scripts run natively and under `comex run`; built into
# build/progs, which those scripts find through COMEX_PROGS.
file(GLOB PROG_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/progs/prog_*.c)
foreach(src ${PROG_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE Threads::Threads)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/progs)
endforeach()
# A static build of prog_gate: what comex run refuses and comex swap serves
# (e2e_swap). Not in the sanitized build: the sanitizers do not link statically.
if(NOT COMEX_SANITIZE)
  add_executable(prog_gate_static ${CMAKE_SOURCE_DIR}/tests/progs/prog_gate.c)
  target_link_options(prog_gate_static PRIVATE -static)
  set_target_properties(prog_gate_static PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/progs)
endif()
foreach(script ${E2E_SCRIPTS})
  get_filename_component(name ${script} NAME_WE)
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT "COMEX_PROGS=${CMAKE_BINARY_DIR}/progs")
endforeach()

# Every bench/*.py script (benchlib.py, the library, aside) in its --quick
# form: tiny sizes, one run, outputs checked, nothing written to bench/results
# or docs/ (tests/bench_quick.sh); a few seconds to half a minute each. The
# ones that set up swap devices share the machine's swap with
# e2e_bench_smoke: one at a time.
file(GLOB BENCH_SCRIPTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/*.py)
list(FILTER BENCH_SCRIPTS EXCLUDE REGEX "/benchlib\\.py$")
foreach(script ${BENCH_SCRIPTS})
  get_filename_component(name ${script} NAME_WE)
  add_test(NAME bench_quick_${name} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/bench_quick.sh ${name})
  set_tests_properties(bench_quick_${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 200 LABELS bench
    ENVIRONMENT "COMEX_BUILD=${CMAKE_BINARY_DIR};COMEX_SRC=${CMAKE_SOURCE_DIR}")
endforeach()
set_tests_properties(bench_quick_swap_latency bench_quick_swap_reclaim e2e_bench_smoke PROPERTIES RESOURCE_LOCK swap)
