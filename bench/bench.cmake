# Benchmark drivers are C programs; the Python harness in bench/ runs them.
file(GLOB BENCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bench/*_bench.c)
foreach(src ${BENCH_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src})
  target_link_libraries(${name} PRIVATE comexclient comexcore)
endforeach()

# The fault-path floor (userfaultfd round trips, no comex code involved).
add_executable(uffd_floor ${CMAKE_SOURCE_DIR}/bench/uffd_floor.c)
target_link_libraries(uffd_floor PRIVATE Threads::Threads)
