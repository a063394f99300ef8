# Compiler settings shared by every target of the project.

add_library(proximity_warnings INTERFACE)
add_library(proximity::warnings ALIAS proximity_warnings)
target_compile_options(proximity_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)

add_library(proximity_flags INTERFACE)
add_library(proximity::flags ALIAS proximity_flags)
set_target_properties(proximity_flags PROPERTIES EXPORT_NAME flags)
# The public headers are C++20 (std::span and more): consumers compile them as such.
target_compile_features(proximity_flags INTERFACE cxx_std_20)
# Eigen's alignment stays at 16 bytes even with AVX enabled, so objects built here share Eigen's ABI with
# Debian's prebuilt libraries (FCL in the tests and benchmarks).
# These definitions are part of the ABI: consumers of an installed package get them through proximity::core.
target_compile_definitions(proximity_flags INTERFACE EIGEN_MAX_ALIGN_BYTES=16)
# -march=native is for this build's own targets only (directory scope, never exported): an installed
# package's consumers choose their own. PROX_NATIVE is off by default (a portable build, what
# `cmake --install` should ship); scripts/build.sh turns it on for the benchmarks and tests here.
if(PROX_NATIVE AND NOT PROX_SANITIZE AND NOT PROX_FUZZ)
  add_compile_options(-march=native)
endif()

# Fuzzing: every target is built for libFuzzer's coverage feedback (fuzzer-no-link; the fuzz targets
# themselves link the fuzzer's main) with the address and undefined-behaviour sanitizers.
if(PROX_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "PROX_FUZZ needs clang with libFuzzer (e.g. CXX=clang++-16), not ${CMAKE_CXX_COMPILER_ID}")
  endif()
  if(PROX_SANITIZE AND NOT PROX_SANITIZE STREQUAL "address")
    message(FATAL_ERROR "PROX_FUZZ builds with the address sanitizer; PROX_SANITIZE='${PROX_SANITIZE}' conflicts")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

if(PROX_SANITIZE STREQUAL "address" OR PROX_FUZZ)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  # The test build (not the fuzzers) leaves out the undefined-behaviour sanitizer's checks on each pointer
  # use (null, alignment, object-size): each blocks GCC's inlining and scalar replacement, and together
  # they cost 35-50% of every file's compile (shape_query.cc 48 -> 25 s, a heavy test file 104 -> 52 s),
  # the longest stage of CI. The address sanitizer still checks every access there (all but alignment,
  # which x86-64 tolerates), and the fuzz build (PROX_FUZZ) keeps all three on what it fuzzes: the parsers
  # and the service's request boundary.
  if(NOT PROX_FUZZ)
    add_compile_options(-fno-sanitize=null,alignment,object-size)
  endif()
elseif(PROX_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(PROX_SANITIZE)
  message(FATAL_ERROR "PROX_SANITIZE must be '', 'address' or 'thread', not '${PROX_SANITIZE}'")
endif()

# Sources made of the convex kernels' template instances (EPA, contact regions, and the tests that
# instantiate them for every shape pair) skip the address sanitizer's use-after-scope check: it nearly
# doubles their compile time (contact_instances.cc 91 -> 51 s at -O1) for code that keeps its values on the
# stack of one function. They also skip the undefined-behaviour sanitizer's checks on each pointer use
# (null, alignment, object-size) in the fuzz build too (as every source of the test build does, above),
# which halves them again (epa_instances.cc 115 -> 60 s): every access is still checked by the address
# sanitizer. Every other check stays on.
# Call from the directory that adds the sources (source properties are per directory).
function(prox_template_heavy_sources)
  if(PROX_SANITIZE STREQUAL "address" OR PROX_FUZZ)
    set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS
      "-fno-sanitize-address-use-after-scope;-fno-sanitize=null,alignment,object-size")
  endif()
endfunction()
