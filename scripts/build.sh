#!/usr/bin/env bash
# Installs what the build needs, then configures and builds the project (Release unless
# CMAKE_BUILD_TYPE says otherwise). Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${1:-$root/build}"
shift || true
"$root/scripts/setup.sh"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  # Built here to run here: -march=native (PROX_NATIVE) unless the environment says PROX_NATIVE=OFF.
  cmake -S "$root" -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" \
    -DPROX_NATIVE="${PROX_NATIVE:-ON}" "$@" >/dev/null
else
  cmake "$build_dir" "$@" >/dev/null
fi
# PROX_BUILD_TARGET: space-separated targets to build instead of all.
# shellcheck disable=SC2086
cmake --build "$build_dir" -j"$(nproc)" ${PROX_BUILD_TARGET:+--target $PROX_BUILD_TARGET}
