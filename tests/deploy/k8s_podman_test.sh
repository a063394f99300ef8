#!/usr/bin/env bash
# deploy/k8s under `podman kube play`: builds the image from the repository's Dockerfile with podman, plays
# the ConfigMap and the Deployment (podman runs one pod of it and ignores the Service, budget and
# autoscaler), checks that the pod runs as the manifests say (user, read-only root, the ConfigMap's flags)
# and answers the Python client on its pod IP, then stops it (SIGTERM, drain, exit 0) and removes it.
#
# Opt-in: PROX_PODMAN_TEST=1, because the image build compiles the project inside the image (many minutes
# on 2 cores). Otherwise, or without podman or the local base image, it prints a line starting with
# "k8s podman test skipped:" and exits 0 (ctest reports it skipped). A recorded run is in
# deploy/k8s/podman-kube-play.txt. Usage: k8s_podman_test.sh BUILD_DIR (for the Python client's stubs).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
image=localhost/proximityd:latest
base=docker.io/library/debian:bookworm-slim
py=/usr/bin/python3

skip() { echo "k8s podman test skipped: $*"; exit 0; }
[ "${PROX_PODMAN_TEST:-0}" = 1 ] || skip "set PROX_PODMAN_TEST=1 to build the image with podman and play deploy/k8s" \
  "(many minutes on 2 cores; a recorded run: deploy/k8s/podman-kube-play.txt)"
command -v podman >/dev/null || skip "podman is not installed (scripts/container.sh installs it)"
# kube play's pods need catatonit for their infra (pause) container.
command -v catatonit >/dev/null || skip "catatonit is not installed (apt-get install catatonit): podman kube play needs it"
[ -e "$build/clients/python/gen/proximity/v1/proximity_pb2.py" ] || skip "no Python stubs in $build (build first)"

work="$(mktemp -d)"
cleanup() {
  if [ -e "$work/play.yaml" ]; then podman kube down "$work/play.yaml" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
# STACK.md section 4: runc and ulimits the process may set. Equal soft and hard limits: podman 4.3's kube
# play swaps them ("nofile=1024:4096" became soft 4096 > hard 1024, and runc failed "error setting rlimit
# type 7: invalid argument").
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF="$work/containers.conf"
podman image exists "$base" || skip "no local $base image (scripts/container.sh makes it with debootstrap)"
podman --version

echo "== podman build --pull=never -t $image $root"
start=$(date +%s)
podman build --pull=never -t "$image" "$root" >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"

# One stream, as kubectl would read the folder: the ConfigMap first, then the Deployment, with one replica:
# podman publishes every containerPort on the host, so a second pod's ports would clash with the first's.
cat "$root/deploy/k8s/configmap.yaml" <(echo "---") "$root/deploy/k8s/deployment.yaml" \
  | sed 's/^  replicas: [0-9]*/  replicas: 1/' >"$work/play.yaml"
grep -q '^  replicas: 1$' "$work/play.yaml" || { echo "k8s podman test: cannot set one replica"; exit 1; }
echo "== podman kube play (configmap.yaml + deployment.yaml)"
podman kube play "$work/play.yaml"
ctr=proximityd-pod-0-proximityd
for _ in $(seq 1 600); do
  if podman logs "$ctr" 2>&1 | grep -q "proximityd listening on"; then break; fi
  sleep 0.2
done
podman logs "$ctr" 2>&1 | grep -m1 "proximityd listening on" || { podman logs "$ctr"; exit 1; }
# The pod's address on podman's network (its infra container holds the network namespace).
infra="$(podman pod inspect --format '{{.InfraContainerID}}' proximityd-pod-0)"
ip="$(podman inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$infra" | awk '{print $1}')"
[ -n "$ip" ] || { echo "k8s podman test: the pod has no IP address"; podman inspect "$infra"; exit 1; }
echo "pod IP $ip"

rc=0
echo "== as the manifests say"
user="$(podman inspect --format '{{.Config.User}}' "$ctr")"
readonly_root="$(podman inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$ctr")"
echo "user=$user read-only root=$readonly_root"
[ "${user%%:*}" = 65534 ] || { echo "FAIL: user $user, expected 65534"; rc=1; }
[ "$readonly_root" = true ] || { echo "FAIL: the root file system is writable"; rc=1; }
# The ConfigMap reached the daemon: it listens on every interface, with the drain and connection age set.
podman logs "$ctr" 2>&1 | grep -m1 '"msg":"serving"' | grep -q '0.0.0.0:50051' || { echo "FAIL: not listening on 0.0.0.0:50051"; rc=1; }

echo "== the Python client on $ip:50051"
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$root/clients/python/src:$build/clients/python/gen" "$py" - "$ip" <<'EOF' || rc=1
import sys
import numpy as np
from proximity_client import Client
with Client(f"{sys.argv[1]}:50051", timeout=60) as c:
    c.wait_until_serving(timeout=60)
    print("health:", c.health(), "/", c.health("proximity.v1.ProximityService"))
    info = c.get_scene()
    states = info.sample(2000, np.random.default_rng(1))
    free = c.check_states(states)
    print(f"scene {info.scene_id[:12]}: {info.robot_name}, {info.dof} joints; {int(free.sum())} of {len(free)} "
          "random states free")
    assert info.dof == 6 and 0 < free.sum() < len(free)
EOF

echo "== podman pod stop -t 35 (terminationGracePeriodSeconds): SIGTERM, drain"
podman pod stop -t 35 proximityd-pod-0 >/dev/null
code="$(podman inspect --format '{{.State.ExitCode}}' "$ctr")"
podman logs "$ctr" 2>&1 | grep -E '"msg":"(draining|stopped)"' | sed 's/^/  /'
echo "proximityd exited with $code"
[ "$code" = 0 ] || rc=1
if [ "$rc" -ne 0 ]; then echo "k8s podman test: FAILED"; exit 1; fi
echo "k8s podman test: OK"
