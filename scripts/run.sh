#!/usr/bin/env bash
# The main job: installs dependencies, builds, and runs proximity-mesh on real robot meshes (the
# KUKA KR5 sixx R650 from Debian's dart-doc): a separated, a near and a colliding pose of two links,
# each with collision, certified distance bounds, nearest points and the work done.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/build.sh" "$root/build"
tool="$root/build/tools/proximity-mesh"
kr5=/usr/share/doc/dart/data/urdf/KR5/meshes
a="$kr5/bicep.STL"
b="$kr5/forearm.STL"

echo
echo "== KR5 bicep and forearm, well apart"
"$tool" "$a" "$b" --pose-b 0.6 0.0 0.3 0 0 0
echo
echo "== the forearm swung close, exact distance and with a 20% relative budget"
"$tool" "$a" "$b" --pose-b 0.2 0.1 0.25 0 0.6 0.3
"$tool" "$a" "$b" --pose-b 0.2 0.1 0.25 0 0.6 0.3 --rel-err 0.2 | tail -2
echo
echo "== the forearm driven into the bicep, every intersecting triangle pair"
"$tool" "$a" "$b" --pose-b 0.05 0.02 0.1 0.3 0.2 0.1 --all-contacts
