#!/usr/bin/env bash
# The main job: installs dependencies (scripts/setup.sh, through build.sh), builds (Release), starts
# proximityd on its built-in default scene (a KUKA KR5 in a workcell) on free loopback ports, waits until
# it serves, runs a short client session (clients/python/examples/session.py with Debian's
# /usr/bin/python3), then stops the daemon with SIGTERM and reports its exit code.
# Exits non-zero when any step fails. Idempotent: a second run skips the installs and rebuilds
# incrementally.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PROX_RUN_BUILD_DIR:-$root/build}"
py=/usr/bin/python3

echo "== setup and build (Release) in $build"
CMAKE_BUILD_TYPE="${CMAKE_BUILD_TYPE:-Release}" "$root/scripts/build.sh" "$build"

daemon="$build/server/proximityd"
stubs="$build/clients/python/gen"
for f in "$daemon" "$stubs/proximity/v1/proximity_pb2.py"; do
  if [ ! -e "$f" ]; then
    echo "run.sh: $f was not built" >&2
    exit 1
  fi
done

# Two free loopback ports: gRPC and metrics.
read -r port metrics_port < <("$py" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)
work="$(mktemp -d)"
log="$work/proximityd.log"
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo
echo "== starting proximityd on 127.0.0.1:$port (metrics on 127.0.0.1:$metrics_port)"
start_ns=$(date +%s%N)
"$daemon" --listen "127.0.0.1:$port" --metrics-listen "127.0.0.1:$metrics_port" --log-format text 2>"$log" &
pid=$!
for _ in $(seq 1 300); do
  if grep -q "proximityd listening on" "$log"; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" && rc=0 || rc=$?
    echo "run.sh: proximityd exited with $rc before serving:" >&2
    cat "$log" >&2
    pid=""
    exit 1
  fi
  sleep 0.1
done
if ! grep -q "proximityd listening on" "$log"; then
  echo "run.sh: proximityd did not report listening within 30 s:" >&2
  cat "$log" >&2
  exit 1
fi
echo "$(grep -m1 "proximityd listening on" "$log") (after $(( ($(date +%s%N) - start_ns) / 1000000 )) ms)"

session_rc=0
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$root/clients/python/src:$stubs" "$py" "$root/clients/python/examples/session.py" \
  --target "127.0.0.1:$port" --metrics "http://127.0.0.1:$metrics_port/metrics" || session_rc=$?

echo
echo "== SIGTERM to proximityd (pid $pid)"
kill -TERM "$pid"
for _ in $(seq 1 300); do
  if ! kill -0 "$pid" 2>/dev/null; then break; fi
  sleep 0.1
done
if kill -0 "$pid" 2>/dev/null; then
  echo "run.sh: proximityd did not exit within 30 s of SIGTERM; killing it" >&2
  kill -KILL "$pid"
fi
daemon_rc=0
wait "$pid" || daemon_rc=$?
pid=""
echo "proximityd exited with code $daemon_rc; its last log lines:"
tail -n 4 "$log" | sed 's/^/  /'

echo
if [ "$session_rc" -ne 0 ] || [ "$daemon_rc" -ne 0 ]; then
  echo "run.sh: FAILED (session exit $session_rc, daemon exit $daemon_rc)" >&2
  exit 1
fi
echo "run.sh: OK (session complete, daemon drained and exited 0)"
