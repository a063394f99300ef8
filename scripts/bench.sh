#!/usr/bin/env bash
# Runs a full benchmark suite and records it: bench/results/<machine>/<suite>.jsonl (one JSON object
# per case), bench/results/<machine>/machine.txt (what it ran on), <suite>.run.txt (the commit, date
# and load of this run) and, for mbm, OMPL benchmark logs in bench/results/<machine>/mbm_ompl/.
# Usage: scripts/bench.sh SUITE
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
suite="${1:?usage: scripts/bench.sh SUITE [extra proximity-bench args]}"
shift
"$root/scripts/build.sh" "$root/build" >/dev/null
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
slug="$(echo "$cpu" | tr 'A-Z' 'a-z' | sed 's/([^)]*)//g; s/processor//; s/cpu//; s/@.*//; s/[^a-z0-9]\+/-/g; s/^-//; s/-$//')"
machine="${slug}-$(nproc)cpu"
out="$root/bench/results/$machine"
mkdir -p "$out"
{
  echo "cpu: $cpu"
  echo "cores: $(nproc)"
  echo "memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "flags: $(grep -m1 flags /proc/cpuinfo | grep -o -w 'avx2\|avx512f\|fma' | sort -u | tr '\n' ' ')"
  echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "compiler: $(c++ --version | head -1)"
  echo "fcl: $(dpkg-query -W -f='${Version}' libfcl-dev 2>/dev/null)"
  echo "ompl: $(dpkg-query -W -f='${Version}' libompl-dev 2>/dev/null)"
} > "$out/machine.txt"
{
  echo "commit: $(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet HEAD -- core planners bench ':!bench/results' || echo ' (with local changes)')"
  echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/$suite.run.txt"
extra=()
# The planning suite also writes OMPL benchmark logs (one per problem family) for Planner Arena.
if [ "$suite" = mbm ]; then extra=(--ompl-log "$out/mbm_ompl"); fi
"$root/build/bench/proximity-bench" "$suite" "${extra[@]}" "$@" | tee "$out/$suite.jsonl"
echo "written: $out/$suite.jsonl" >&2
