#!/usr/bin/env bash
# Starts the ROS bridge: a ROS master (unless ROS_MASTER_URI already answers), proximityd on a free
# loopback port (its built-in KR5 scene when no robot is given) and the proximity_bridge node as
# /proximity_bridge. Prints "ready" once every service of the node is advertised, and stops everything
# it started on SIGTERM or SIGINT (or when one of them exits).
#
#   scripts/ros-bridge.sh [--urdf FILE [--srdf FILE] [--package NAME=DIR]...] [--target HOST:PORT]
#
#   --urdf FILE         the robot (meshes: package:// through --package and ROS_PACKAGE_PATH, or relative
#                       to the URDF); without it the node takes /robot_description when set, else the
#                       built-in scene
#   --srdf FILE         its SRDF (groups, allowed pairs, virtual joint)
#   --package NAME=DIR  where package NAME is (repeatable)
#   --target HOST:PORT  use a running proximityd instead of starting one
#
# Environment: ROS_MASTER_URI (default http://127.0.0.1:11311), PROXIMITY_BUILD_DIR (default build/).
# Uses the build's proximityd and generated code: run scripts/build.sh first.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PROXIMITY_BUILD_DIR:-$root/build}"
py=/usr/bin/python3

urdf="" srdf="" target="" packages=()
usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --urdf) urdf="$(realpath "$2")"; shift 2 ;;
    --srdf) srdf="$(realpath "$2")"; shift 2 ;;
    --package)
      case "$2" in *=*) packages+=("${2%%=*}=$(realpath "${2#*=}")") ;; *) echo "ros-bridge: --package takes NAME=DIR, not '$2'" >&2; exit 2 ;; esac
      shift 2 ;;
    --target) target="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ros-bridge: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
if [ -n "$srdf" ] && [ -z "$urdf" ]; then echo "ros-bridge: --srdf needs --urdf" >&2; exit 2; fi
for f in "$urdf" "$srdf"; do
  if [ -n "$f" ] && [ ! -f "$f" ]; then echo "ros-bridge: no file $f" >&2; exit 2; fi
done
msgs="${PROXIMITY_ROS_MSGS_DIR:-$build/clients/ros/gen}"
stubs="${PROXIMITY_STUBS_DIR:-$build/clients/python/gen}"
daemon="${PROXIMITYD:-$build/server/proximityd}"
if [ ! -d "$msgs/proximity_msgs" ] || [ ! -d "$stubs/proximity" ] || { [ -z "$target" ] && [ ! -x "$daemon" ]; }; then
  echo "ros-bridge: build first (scripts/build.sh): missing $msgs/proximity_msgs, $stubs/proximity or $daemon" >&2
  exit 2
fi

export ROS_MASTER_URI="${ROS_MASTER_URI:-http://127.0.0.1:11311}"
if [ -z "${ROS_HOSTNAME:-}" ] && [ -z "${ROS_IP:-}" ]; then export ROS_HOSTNAME=127.0.0.1; fi
export PYTHONPATH="$root/clients/ros/src:$root/clients/python/src:$msgs:$stubs${PYTHONPATH:+:$PYTHONPATH}"

pids=()
stop_all() {
  trap - INT TERM EXIT
  local i
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM -- "-${pids[i]}" 2>/dev/null || true; done
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    for _ in $(seq 100); do kill -0 "${pids[i]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
}
trap 'stop_all; exit 0' INT TERM
trap stop_all EXIT
# Each child leads its own process group (setsid), so that stopping it reaches what it started.
start() { setsid "$@" >&2 & pids+=("$!"); }  # their output on stderr: stdout says "ready" only

master_up() {
  "$py" -c 'import os, sys, xmlrpc.client
try:
    sys.exit(0 if xmlrpc.client.ServerProxy(os.environ["ROS_MASTER_URI"]).getPid("/ros_bridge_sh")[0] == 1 else 1)
except OSError:
    sys.exit(1)' 2>/dev/null
}
wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local seconds="$1" what="$2"; shift 2
  for _ in $(seq $((seconds * 10))); do
    if "$@"; then return 0; fi
    for pid in "${pids[@]}"; do
      if ! kill -0 "$pid" 2>/dev/null; then echo "ros-bridge: a process exited while waiting for $what" >&2; exit 1; fi
    done
    sleep 0.1
  done
  echo "ros-bridge: $what not up after $seconds s" >&2
  exit 1
}

if master_up; then
  echo "ros-bridge: using the ROS master at $ROS_MASTER_URI" >&2
else
  port="$(echo "$ROS_MASTER_URI" | sed -n 's|.*:\([0-9][0-9]*\)/*$|\1|p')"
  export ROS_HOME="${ROS_HOME:-$(mktemp -d -t ros-bridge-XXXXXX)}"
  echo "ros-bridge: starting roscore at $ROS_MASTER_URI" >&2
  start roscore -p "${port:-11311}"
  wait_for 60 "the ROS master" master_up
fi

if [ -z "$target" ]; then
  port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  target="127.0.0.1:$port"
  echo "ros-bridge: starting proximityd at $target" >&2
  start "$daemon" --listen "$target" --metrics-listen ""
  serving() { "$py" -c "from proximity_client import Client; Client('$target', timeout=2).wait_until_serving(1.0)" 2>/dev/null; }
  wait_for 120 "proximityd" serving
fi

params=("_target:=$target")
if [ -n "$urdf" ]; then params+=("_robot:=files" "_urdf_file:=$urdf"); fi
if [ -n "$srdf" ]; then params+=("_srdf_file:=$srdf"); fi
if [ ${#packages[@]} -gt 0 ]; then params+=("_package_dirs:=$(IFS=,; echo "${packages[*]}")"); fi
start "$py" -m proximity_ros.node __name:=proximity_bridge "${params[@]}"
advertised() {
  "$py" -c 'import sys, rosservice
want = {"/proximity_bridge/" + s for s in ("check_state_validity", "check_states", "check_trajectory", "plan")}
sys.exit(0 if want <= set(rosservice.get_service_list()) else 1)' 2>/dev/null
}
wait_for 120 "the proximity_bridge services" advertised
echo ready
# Until a signal, or until one of the children exits.
wait -n "${pids[@]}" || true
echo "ros-bridge: a process exited; stopping the others" >&2
stop_all
exit 1
