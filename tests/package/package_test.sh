#!/usr/bin/env bash
# The installed package as a consumer sees it (ctest: package.find_package):
#   1. cmake --install <build> --prefix <tmp>/prefix, then the layout: config files, libraries, public
#      headers and no private one (core/src/**), programs, no build option or build path exported;
#   2. tests/package configured against that prefix (find_package(proximity), CMAKE_PREFIX_PATH only),
#      built and run: CLEAR, LINK, a plan, and the components the installation has (remote, ompl);
#   3. the Python client: the cmake-installed package and stubs import from the prefix and answer
#      (no server: UNAVAILABLE), the `proximity` launcher runs; then the pip route
#      (pip install --no-build-isolation --no-deps --no-index --prefix) from a copy of clients/python.
# Everything happens in one temporary folder, removed on exit.
#
# Usage: package_test.sh <source dir> <build dir> [cmake] [C++ compiler]
set -euo pipefail
src="$(cd "$1" && pwd)"
build="$(cd "$2" && pwd)"
cmake="${3:-cmake}"
cxx="${4:-}"
python=/usr/bin/python3
start_s=$SECONDS

tmp="$(mktemp -d "${TMPDIR:-/tmp}/proximity-package.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"

step() { echo "== $* ($((SECONDS - start_s)) s)"; }
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok    $*"; }
# Runs a command with its output in a log, shown only when it fails.
quiet() {
  local log="$tmp/last.log"
  if ! "$@" >"$log" 2>&1; then
    cat "$log"
    fail "$*"
  fi
}

# ---- 1. install and the installed tree ---------------------------------------------------------------
step "cmake --install $build --prefix $prefix"
quiet "$cmake" --install "$build" --prefix "$prefix"
grep -h "Note:" "$tmp/last.log" || true

cmakedir="$prefix/lib/cmake/proximity"
for f in proximityConfig.cmake proximityConfigVersion.cmake proximityTargets.cmake; do
  [ -f "$cmakedir/$f" ] || fail "lib/cmake/proximity/$f is missing"
done
for lib in core contact mbm planners; do
  compgen -G "$prefix/lib/libproximity_$lib.*" >/dev/null || fail "libproximity_$lib is missing"
done
for h in core/base/result.h core/scene/scene.h core/scene/geometry.h core/contact/tracker.h planners/planner.h mbm/mbm.h; do
  [ -f "$prefix/include/proximity/$h" ] || fail "include/proximity/$h is missing"
done
ok "config files, libraries and public headers"

# Private headers (core/src/**/*.h) are never installed; nothing lands beside include/proximity.
while IFS= read -r private; do
  name="$(basename "$private")"
  if [ -n "$(find "$prefix/include" -name "$name")" ]; then fail "private header $name was installed"; fi
done < <(find "$src/core/src" -name '*.h')
[ "$(ls "$prefix/include")" = "proximity" ] || fail "include/ holds more than proximity/: $(ls "$prefix/include")"
# Every project include of an installed header is installed too.
while IFS= read -r included; do
  [ -f "$prefix/include/$included" ] || fail "an installed header includes \"$included\", which is not installed"
done < <(grep -rh '^#include "' "$prefix/include" | sed 's/^#include "\([^"]*\)".*/\1/' | sort -u)
ok "no private header installed, every included header installed"

# The exported targets carry neither this build's options (warnings, -march=native, sanitizers) nor a
# path into the source or build tree.
if grep -nE 'march|-W(all|extra|shadow)|fsanitize|proximity_warnings|proximity::warnings' "$cmakedir"/*.cmake; then
  fail "a build option of this project is exported"
fi
if grep -nF -e "$src/" -e "$build/" "$cmakedir"/*.cmake; then fail "an exported file names the source or build tree"; fi
grep -q 'EIGEN_MAX_ALIGN_BYTES=16' "$cmakedir/proximityTargets.cmake" || fail "proximity::flags is not exported"
ok "exported targets: EIGEN_MAX_ALIGN_BYTES=16, no build option, no build path"

# Every program this build made is installed and starts (static libraries: no library path needed).
for program in proximityd proximity-mesh proximity-scene proximity-bench; do
  if [ -n "$(find "$build" -maxdepth 3 -type f -name "$program" -perm -u+x)" ]; then
    [ -x "$prefix/bin/$program" ] || fail "bin/$program is missing"
    quiet "$prefix/bin/$program" --help
    ok "bin/$program --help"
  fi
done

# ---- 2. a consumer project ---------------------------------------------------------------------------
step "tests/package against the prefix"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
quiet "$cmake" -S "$src/tests/package" -B "$tmp/consumer" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"}
grep -h "^-- proximity " "$tmp/last.log"
quiet "$cmake" --build "$tmp/consumer" -j2
commands="$tmp/consumer/compile_commands.json"
grep -q 'EIGEN_MAX_ALIGN_BYTES=16' "$commands" || fail "the consumer is not compiled with EIGEN_MAX_ALIGN_BYTES=16"
grep -qE -- '-std=(c|gnu)\+\+(20|2a)' "$commands" || fail "the consumer is not compiled as C++20"
if grep -n -- '-march' "$commands"; then fail "-march reached the consumer"; fi
ok "consumer compiled with C++20 and EIGEN_MAX_ALIGN_BYTES=16, without -march"

urdf="$src/tests/data/robots/planar_2link.urdf"
"$tmp/consumer/package_consumer" "$urdf" || fail "package_consumer"
if [ -f "$cmakedir/proximityRemoteTargets.cmake" ]; then
  [ -x "$tmp/consumer/package_remote" ] || fail "the remote component was not found"
  "$tmp/consumer/package_remote" || fail "package_remote"
fi
if [ -f "$cmakedir/proximityOmplTargets.cmake" ]; then
  [ -x "$tmp/consumer/package_ompl" ] || fail "the ompl component was not found"
  "$tmp/consumer/package_ompl" "$urdf" || fail "package_ompl"
fi

# ---- 3. the Python client ----------------------------------------------------------------------------
# Imports the package and its stubs from under $1 only, and calls a port where nothing listens.
check_python() {
  env -u PROXIMITY_STUBS_DIR PYTHONPATH="$1" PYTHONDONTWRITEBYTECODE=1 "$python" - "$2" <<'EOF'
import sys
root = sys.argv[1]
import proximity_client
from proximity_client import Client, ProximityError, _stubs
for module in (proximity_client, _stubs.pb, _stubs.pb_grpc, _stubs.health_pb):
    assert module.__file__.startswith(root), f"{module.__name__} from {module.__file__}, not under {root}"
assert "ProximityService" in _stubs.pb.DESCRIPTOR.services_by_name
try:
    with Client("127.0.0.1:1", timeout=2) as client:
        client.get_scene("default")
    raise SystemExit("a call without a server succeeded")
except ProximityError as e:
    code = e.code.name
    assert code in ("UNAVAILABLE", "DEADLINE_EXCEEDED"), e
print(f"ok    proximity_client {proximity_client.__version__} from {proximity_client.__file__[len(root):]}: "
      f"no server -> {code}")
EOF
}

if [ -f "$build/clients/python/gen/proximity/v1/proximity_pb2.py" ]; then
  step "Python client installed by cmake"
  pydir="$(cd "$prefix" && find lib -maxdepth 3 -type d -name proximity_client | head -1)"
  [ -n "$pydir" ] || fail "the Python client was not installed"
  [ -f "$prefix/$(dirname "$pydir")/proximity/v1/proximity_pb2_grpc.py" ] || fail "the gRPC stubs were not installed"
  check_python "$prefix/$(dirname "$pydir")" "$prefix/" || fail "the installed Python client"
  quiet env -u PROXIMITY_STUBS_DIR "$prefix/bin/proximity" --help
  ok "bin/proximity --help"

  if "$python" -m pip --version >/dev/null 2>&1; then
    step "Python client installed by pip"
    mkdir "$tmp/pysrc"
    cp -r "$src/clients/python/pyproject.toml" "$src/clients/python/setup.py" "$src/clients/python/README.md" \
      "$src/clients/python/src" "$tmp/pysrc/"
    # No index, no build isolation, no dependencies: setuptools and the runtime come from Debian.
    quiet env PROXIMITY_PROTO_ROOT="$src/proto" PIP_ROOT_USER_ACTION=ignore \
      "$python" -m pip install --no-build-isolation --no-deps --no-index --no-cache-dir \
      --disable-pip-version-check --prefix "$tmp/pip" "$tmp/pysrc"
    site="$(find "$tmp/pip" -type d -name proximity_client -path '*-packages/*' | head -1)"
    [ -n "$site" ] || fail "pip installed no proximity_client"
    check_python "$(dirname "$site")" "$tmp/pip/" || fail "the pip-installed Python client"
    [ -n "$(find "$tmp/pip" -path '*/bin/proximity')" ] || fail "pip installed no proximity script"
  else
    echo "skipped: pip install (python3-pip is not installed)"
  fi
fi

step "package test passed"
