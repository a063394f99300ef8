#!/usr/bin/env bash
# Builds the proximityd image (Dockerfile) with podman and checks it: installs podman & co when missing,
# makes the local debian:bookworm-slim base (debootstrap minbase + podman import) when missing, builds
# localhost/proximityd, runs it on free loopback ports, waits until it serves, drives it with the Python
# client from this checkout (Debian's /usr/bin/python3 and the stubs of an existing build tree: run
# scripts/build.sh first), then stops it (SIGTERM, drain) and reports its exit code.
# Exits non-zero when any step fails. Idempotent: a second run reuses the base image and podman's layer
# cache. Needs root (apt-get, rootful podman). See ../shared/docs/STACK.md section 4 for why the
# podman settings below (runc, lowered ulimits) are needed on this kind of host.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${PROX_RUN_BUILD_DIR:-$root/build}"
image="${PROX_IMAGE:-localhost/proximityd}"
base=docker.io/library/debian:bookworm-slim
py=/usr/bin/python3
stubs="$build/clients/python/gen"

if [ ! -e "$stubs/proximity/v1/proximity_pb2.py" ]; then
  echo "container.sh: no Python stubs in $stubs (run scripts/build.sh first)" >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

echo "== podman"
pkgs=(podman buildah runc crun fuse-overlayfs slirp4netns uidmap debootstrap catatonit)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
podman --version

work="$(mktemp -d)"
name="proximityd-check-$$"
started=""
cleanup() {
  if [ -n "$started" ]; then podman rm -f "$name" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# runc (crun fails on cgroup v1 hybrid hosts) and ulimits the process may set (no CAP_SYS_RESOURCE).
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=1024:4096", "nproc=4096:4096"]
[engine]
runtime = "runc"
EOF
export CONTAINERS_CONF="$work/containers.conf"

echo
echo "== base image $base"
if podman image exists "$base"; then
  echo "present"
else
  # Registry pulls fail here: a minbase bookworm from the host's Debian mirror stands in for the slim image.
  mirror="$(grep -hoE '^(deb|URIs:)[^#]*https?://[^ ]*/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
              /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -oE 'https?://[^ ]*/debian/?' | head -n1 || true)"
  mirror="${mirror:-http://deb.debian.org/debian}"
  echo "debootstrap --variant=minbase bookworm from $mirror"
  $SUDO debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
  # As in the slim image: no downloaded .debs or package lists.
  $SUDO rm -rf "$work/rootfs"/var/cache/apt/archives/*.deb "$work/rootfs"/var/cache/apt/*.bin "$work/rootfs"/var/lib/apt/lists/*
  $SUDO tar -C "$work/rootfs" -c . | podman import - localhost/bookworm-min:latest >/dev/null
  podman tag localhost/bookworm-min:latest "$base"
  $SUDO rm -rf "$work/rootfs"
  echo "made localhost/bookworm-min, tagged $base"
fi

echo
echo "== podman build --pull=never -t $image $root"
build_start=$(date +%s)
podman build --pull=never -t "$image" "$root"
echo "built $image in $(( $(date +%s) - build_start )) s; size $(podman image inspect --format '{{.Size}}' "$image" \
  | awk '{printf "%.0f MB", $1 / 1e6}')"

# Two free loopback ports on the host: gRPC and metrics.
read -r port metrics_port < <("$py" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)

echo
echo "== podman run $image on 127.0.0.1:$port (metrics on 127.0.0.1:$metrics_port)"
podman rm -f "$name" >/dev/null 2>&1 || true
started=1
podman run -d --name "$name" -p "127.0.0.1:$port:50051" -p "127.0.0.1:$metrics_port:9464" "$image" \
  --log-format text >/dev/null
for _ in $(seq 1 300); do
  if podman logs "$name" 2>&1 | grep -q "proximityd listening on"; then break; fi
  if [ "$(podman inspect --format '{{.State.Running}}' "$name")" != "true" ]; then
    echo "container.sh: the container exited before serving:" >&2
    podman logs "$name" >&2 || true
    exit 1
  fi
  sleep 0.1
done
if ! podman logs "$name" 2>&1 | grep -q "proximityd listening on"; then
  echo "container.sh: proximityd did not report listening within 30 s:" >&2
  podman logs "$name" >&2 || true
  exit 1
fi
podman logs "$name" 2>&1 | grep -m1 "proximityd listening on"

check_rc=0
cli() { PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$root/clients/python/src:$stubs" "$py" -m proximity_client "$@"; }
echo
echo "== proximity info --target 127.0.0.1:$port"
cli info --target "127.0.0.1:$port" || check_rc=1
echo
echo "== proximity plan --target 127.0.0.1:$port --start=0,0,0,0,0,0 --goal=1,0.5,0,0,0,0"
cli plan --target "127.0.0.1:$port" --start=0,0,0,0,0,0 --goal=1,0.5,0,0,0,0 --out "$work/path.json" || check_rc=1
echo
echo "== proximity validate (the planned path)"
if [ -e "$work/path.json" ]; then cli validate --target "127.0.0.1:$port" "$work/path.json" || check_rc=1; else check_rc=1; fi
echo
echo "== metrics on 127.0.0.1:$metrics_port"
"$py" - "$metrics_port" <<'EOF' || check_rc=1
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode()
lines = [l for l in text.splitlines() if l and not l.startswith("#")]
print(f"{len(lines)} samples, e.g.:")
for l in lines[:3]:
    print("  " + l)
EOF

echo
echo "== podman stop (SIGTERM, drain)"
podman stop -t 30 "$name" >/dev/null
daemon_rc="$(podman inspect --format '{{.State.ExitCode}}' "$name")"
echo "proximityd exited with code $daemon_rc; its last log lines:"
podman logs "$name" 2>&1 | tail -n 3 | sed 's/^/  /'
podman rm "$name" >/dev/null
started=""

echo
if [ "$check_rc" -ne 0 ] || [ "$daemon_rc" != "0" ]; then
  echo "container.sh: FAILED (client checks exit $check_rc, container exit $daemon_rc)" >&2
  exit 1
fi
echo "container.sh: OK ($image serves the default scene, drained and exited 0)"
