#!/usr/bin/env bash
# Installs every Debian package the build, tests and benchmarks need. Idempotent: packages already
# present are not reinstalled, and apt-get update runs only when something is missing.
set -euo pipefail

# zlib1g-dev: assimp's CMake config links libz.so, which libassimp-dev does not depend on.
# python3 runs the CLI and benchmark checks (python3-yaml: an independent YAML cross-check); bzip2
# extracts the MotionBenchMaker archive in tests. gRPC, Protobuf, spdlog, Boost (Beast and Asio, header-only):
# proximityd; cpp-httplib: the service tests' HTTP client.
# python3-grpcio and friends: the Python client, its tests and the main job (Debian's /usr/bin/python3).
# OMPL (with the Boost libraries its CMake config names but does not depend on): the planning peer.
# KDL: the inverse-kinematics peer (proximity-bench ik).
# clang-16, its runtime libraries (libFuzzer, sanitizers) and llvm-16 (llvm-symbolizer for readable
# reports): the fuzz targets (scripts/fuzz.sh). libjs-three: the viewer's three.js (proximityd serves
# it from /usr/share/javascript/three); chromium, chromium-driver and python3-selenium: the browser test.
# ROS 1 from Debian (no catkin, no MoveIt): rospy, a master, the standard messages' Python code and
# definitions (ros-*-msgs, for genpy to generate proximity_msgs), rospkg: the ROS bridge (clients/ros).
# nginx: the L7 gRPC proxy in front of replicas (deploy/nginx; ctest replica_proxy starts its own,
# unprivileged, from a temporary folder). valgrind: fuzz corpora replayed through the uninstrumented
# libraries (scripts/fuzz_valgrind.sh).
PACKAGES=(
  build-essential cmake ninja-build pkg-config git python3 python3-yaml bzip2
  libeigen3-dev libassimp-dev zlib1g-dev liburdfdom-dev libtinyxml2-dev libqhull-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev
  libcli11-dev
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler grpc-proto
  libspdlog-dev libfmt-dev libcpp-httplib-dev libboost-dev nlohmann-json3-dev libxxhash-dev
  python3-grpcio python3-protobuf python3-numpy python3-tqdm python3-pytest python3-prometheus-client
  python3-pip python3-setuptools
  libfcl-dev libccd-dev
  libompl-dev libboost-serialization-dev libboost-filesystem-dev libboost-system-dev libnanoflann-dev
  liborocos-kdl-dev
  dart-doc
  openssl
  clang-16 libclang-rt-16-dev llvm-16
  python3-rospy python3-rosmaster rosout python3-roslaunch python3-rostopic python3-rosservice python3-rospkg
  python3-genpy python3-genmsg python3-std-msgs python3-sensor-msgs python3-geometry-msgs python3-shape-msgs
  python3-trajectory-msgs python3-tf2-ros ros-std-msgs ros-sensor-msgs ros-geometry-msgs ros-shape-msgs ros-trajectory-msgs
  libjs-three chromium chromium-driver python3-selenium
  nginx
  valgrind
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
