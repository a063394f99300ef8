#!/usr/bin/env bash
# Replays fuzz corpora under valgrind. Builds tests/fuzz's targets as plain replay programs
# (PROX_FUZZ_REPLAY=ON: RelWithDebInfo, no sanitizer, no -march=native, which valgrind cannot run) in
# build-replay/, then runs each target once over its seed corpus (tests/fuzz/corpus/<target>/) plus any
# folders given, all inputs in one process. Fails when valgrind reports an invalid read or write, a jump
# on uninitialised memory or a bad free: errors inside Debian's uninstrumented libraries (assimp,
# urdfdom, tinyxml, yaml-cpp) that the sanitizers see only if they crash, and often later than the input
# that caused them (tests/fuzz/RESULTS.md, finding 11). Leaks are left to the fuzz runs' LeakSanitizer.
# The report of each target is build-replay/logs/<target>.log; the input named last before a report
# ("replay <file>") is the one that caused it.
#
# Usage: scripts/fuzz_valgrind.sh [TARGET [CORPUS_DIR...]]
#   no TARGET: mesh_fuzz, urdf_fuzz, srdf_fuzz and mbm_fuzz on their seeds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build-replay"
targets=(mesh_fuzz urdf_fuzz srdf_fuzz mbm_fuzz)
extra=()
if [ $# -gt 0 ]; then
  targets=("$1")
  shift
  extra=("$@")
fi

CMAKE_BUILD_TYPE=RelWithDebInfo PROX_NATIVE=OFF PROX_BUILD_TARGET="${targets[*]/%/_replay}" "$root/scripts/build.sh" "$build" \
  -DPROX_FUZZ_REPLAY=ON -DPROX_BUILD_TESTS=OFF -DPROX_BUILD_BENCH=OFF
mkdir -p "$build/logs"
failed=()
for t in "${targets[@]}"; do
  inputs=()
  for dir in "$root/tests/fuzz/corpus/$t" "${extra[@]}"; do
    while IFS= read -r -d '' f; do inputs+=("$f"); done < <(find "$dir" -maxdepth 1 -type f -print0 | sort -z)
  done
  echo "== $t: ${#inputs[@]} inputs under valgrind"
  start=$(date +%s)
  # The replay programs run from the build's fuzz folder, like the fuzz targets.
  if (cd "$build/tests/fuzz" && printf '%s\0' "${inputs[@]}" |
        xargs -0 valgrind -q --error-exitcode=99 "./${t}_replay") > "$build/logs/$t.log" 2>&1; then
    echo "$t: clean ($(( $(date +%s) - start )) s)"
  else
    echo "$t: valgrind reported errors (or the replay failed); see $build/logs/$t.log"
    grep -E "^==[0-9]+== [A-Z]" "$build/logs/$t.log" | sort | uniq -c | head -5 || true
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "valgrind found errors in: ${failed[*]}"
  exit 1
fi
echo "valgrind: every corpus replayed clean"
