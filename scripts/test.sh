#!/usr/bin/env bash
# Every test: installs dependencies, builds (Release), runs the whole ctest suite, then the sanitizer
# builds: address + undefined behaviour over every test, thread over the shared-model and shared-validity
# threading tests; then a short fuzzing run of every fuzz target (scripts/fuzz.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc)"

# Each stage says how long it took (the whole run must stay well inside CI's budget).
stage_start=$SECONDS
took() { echo "-- $1: $((SECONDS - stage_start)) s (total $SECONDS s)"; stage_start=$SECONDS; }

echo "== Release build and tests"
"$root/scripts/build.sh" "$root/build"
took "Release build"
ctest --test-dir "$root/build" --output-on-failure -j"$jobs"
took "Release tests"

# Sanitizer builds compile at -O1 with line tables only (-g1): 2-3x faster to build than -O2 -g, and
# reports still name files and lines. Assertions stay on there (no -DNDEBUG), and the standard library
# checks every container index (_GLIBCXX_ASSERTIONS); Eigen's own per-coefficient checks are left out
# (EIGEN_NO_DEBUG): under the sanitizers they made the brute-force oracle tests exceed their timeouts.
sanitizer_cflags="-O1 -g1 -D_GLIBCXX_ASSERTIONS -DEIGEN_NO_DEBUG"
sanitizer_flags=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$sanitizer_cflags" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$sanitizer_cflags"
                 -DPROX_BUILD_BENCH=OFF)

# The Release build above is -march=native. A certified bound must not depend on one CPU's code
# generation (vector widths, fused multiply-adds): sanitizer builds never take -march=native
# (cmake/ProximityOptions.cmake), so every test below also runs built for the x86-64 baseline, without
# AVX or FMA (Scene::CheckStates' lane pass keeps its AVX2 and AVX-512 builds, chosen by the CPU at run
# time; state_batch_test forces each against one at a time).
echo "== address + undefined behaviour sanitizers (x86-64 baseline)"
CMAKE_BUILD_TYPE=RelWithDebInfo "$root/scripts/build.sh" "$root/build-asan" -DPROX_SANITIZE=address "${sanitizer_flags[@]}"
took "sanitizer build"
# Left to the Release run: the tests that repeat smaller tests' code paths at volume (clouds of
# 100,000 points against a brute-force oracle: 357 of the 1,737 test-seconds of this run here, 12 s in
# Release) and the replica kill drills (process orchestration, 72 s; the same client and server code
# runs in the other replica tests).
ctest --test-dir "$root/build-asan" --output-on-failure -j"$jobs" -E 'AtVolume|ReplicaKillTest'
took "sanitizer tests"

echo "== thread sanitizer"
CMAKE_BUILD_TYPE=RelWithDebInfo PROX_BUILD_TARGET="mesh_query_threads_test scene_validity_test" \
  "$root/scripts/build.sh" "$root/build-tsan" -DPROX_SANITIZE=thread "${sanitizer_flags[@]}"
ctest --test-dir "$root/build-tsan" --output-on-failure \
  -R '^(mesh_query_threads_test\.|scene_validity_test\.)'
took "thread sanitizer"

echo "== fuzzing (libFuzzer, address + undefined behaviour sanitizers)"
# A fixed seed and number of inputs: the same inputs on every run and machine, at most 60 s a target;
# built unoptimized (FUZZ_OPT=-O0): a few thousand inputs run in seconds either way, and the build is
# this stage's cost.
FUZZ_SEED="${FUZZ_SEED:-1}" FUZZ_RUNS="${FUZZ_RUNS:-3000}" FUZZ_OPT="${FUZZ_OPT:--O0}" \
  "$root/scripts/fuzz.sh" "${PROX_FUZZ_SECONDS:-60}"
took "fuzzing"
