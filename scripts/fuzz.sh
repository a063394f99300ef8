#!/usr/bin/env bash
# Fuzzing: installs what it needs, builds the libFuzzer targets of tests/fuzz with clang-16 (address +
# undefined-behaviour sanitizers) in build-fuzz/, and runs each for SECONDS_PER_TARGET seconds (default
# 20) on a scratch copy of its seed corpus (tests/fuzz/corpus/<target>/ is only read), with its
# dictionary. Fails when any target crashes, leaks, times out or trips a sanitizer or an invariant; the
# input that did it is kept in build-fuzz/artifacts/<target>/ (reproduce: build-fuzz/tests/fuzz/<target>
# <file>) and each target's log in build-fuzz/logs/<target>.log.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
# Environment: FUZZ_RUNS=N stops each target after N inputs (deterministic with FUZZ_SEED);
# FUZZ_TARGETS="mesh_fuzz urdf_fuzz ..." runs only those; FUZZ_SEED fixes libFuzzer's random
# seed (scripts/test.sh sets 1, so that a CI run explores the same inputs each time on a given machine;
# unset, every run explores anew); FUZZ_ARGS adds libFuzzer flags; FUZZ_OPT the optimization level (default
# -O1).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-20}"
build="$root/build-fuzz"
targets=(${FUZZ_TARGETS:-mesh_fuzz urdf_fuzz srdf_fuzz mbm_fuzz service_fuzz})

echo "== fuzz build (clang-16, libFuzzer, address + undefined) in $build"
start=$(date +%s)
# Line tables only (-g1) at -O1, as the sanitizer builds: reports name files and lines; assertions stay on.
# FUZZ_OPT=-O0 builds unoptimized: 5x faster to compile the heaviest template files (EPA's instances:
# 27 s against 133 s), for runs of a few thousand inputs (CI) where execution speed does not matter.
CC=clang-16 CXX=clang++-16 CMAKE_BUILD_TYPE=RelWithDebInfo PROX_BUILD_TARGET=fuzz "$root/scripts/build.sh" "$build" \
  -DPROX_FUZZ=ON -DPROX_BUILD_TESTS=OFF -DPROX_BUILD_BENCH=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="${FUZZ_OPT:--O1} -g1"
echo "fuzz build: $(( $(date +%s) - start )) s"

mkdir -p "$build/artifacts" "$build/logs"
# Symbolized reports; leaks inside Debian's uninstrumented libraries are listed in lsan.supp.
export ASAN_SYMBOLIZER_PATH=/usr/lib/llvm-16/bin/llvm-symbolizer
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan.supp:print_suppressions=0"
failed=()
for t in "${targets[@]}"; do
  work="$(mktemp -d)"
  mkdir -p "$build/artifacts/$t"
  echo "== $t: ${seconds} s on $(ls "$root/tests/fuzz/corpus/$t" | wc -l) seeds"
  dict=()
  name="${t%_fuzz}"
  if [ -f "$root/tests/fuzz/dict/$name.dict" ]; then dict=(-dict="$root/tests/fuzz/dict/$name.dict"); fi
  # -timeout: one input taking longer than 10 s is a finding (the service's calls stop within 0.25 s).
  seed=()
  if [ -n "${FUZZ_SEED:-}" ]; then seed=(-seed="$FUZZ_SEED"); fi
  # FUZZ_RUNS: a fixed number of inputs per target (the seconds stay a cap). With FUZZ_SEED it makes the
  # run explore the same inputs on any machine, however fast: CI gates on what was run here.
  if [ -n "${FUZZ_RUNS:-}" ]; then seed+=(-runs="$FUZZ_RUNS"); fi
  # shellcheck disable=SC2086
  if "$build/tests/fuzz/$t" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=4096 "${seed[@]}" \
       -artifact_prefix="$build/artifacts/$t/" "${dict[@]}" ${FUZZ_ARGS:-} \
       "$work" "$root/tests/fuzz/corpus/$t" >"$build/logs/$t.log" 2>&1; then
    grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)|cov: ' \
      "$build/logs/$t.log" | grep -v '^#' | tail -5 || true
    grep -E '^#[0-9]+ +DONE' "$build/logs/$t.log" || true
  else
    echo "!! $t failed; its log ends:"
    tail -40 "$build/logs/$t.log"
    failed+=("$t")
  fi
  rm -rf "$work"
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing found problems in: ${failed[*]} (inputs in $build/artifacts/)"
  exit 1
fi
echo "fuzzing: ${#targets[@]} targets, ${seconds} s each, no finding"
