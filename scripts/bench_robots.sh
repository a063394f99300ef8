#!/usr/bin/env bash
# The per-robot benchmark: for each robot below, 200 problems from `proximity-bench generate` (seed 1),
# then the robot suite (CLEAR, distance, LINK, against the FCL checker) and the planning suite (RRT-Connect
# against OMPL + FCL) on them, each in one run beside its peer. Writes
# bench/results/<machine>/robots/<label>/{robot,mbm}.jsonl, run.txt (commit, date, load, command lines)
# and the generator's summary; bench/summarize_robots.py makes the table from them.
# Usage: scripts/bench_robots.sh [LABEL...]   (default: every robot below; needs ../shared/data and
# Debian's dart-doc). PROX_BENCH_BINARY overrides the binary (default build/bench/proximity-bench),
# PROX_BENCH_COUNT the problem count (200), PROX_BENCH_TIME_LIMIT the seconds per plan (5) and
# PROX_BENCH_SUITES the suites to run ("robot mbm").
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
binary="${PROX_BENCH_BINARY:-$root/build/bench/proximity-bench}"
count="${PROX_BENCH_COUNT:-200}"
time_limit="${PROX_BENCH_TIME_LIMIT:-5}"
suites="${PROX_BENCH_SUITES:-robot mbm}"
if [ -z "${PROX_BENCH_BINARY:-}" ]; then "$root/scripts/build.sh" "$root/build" >/dev/null; fi
shared="$root/../shared/data"
dart=/usr/share/doc/dart/data/urdf
panda="$shared/robots/panda"
mbm_panda="$shared/robots/mbm_panda"
ur5="$shared/robots/ur5"
# label -> robot flags
declare -A robots=(
  [panda]="--robot $panda/moveit_resources_panda_description/urdf/panda.urdf --srdf $panda/moveit_resources_panda_moveit_config/config/panda.srdf --package moveit_resources_panda_description=$panda/moveit_resources_panda_description --group panda_arm"
  [mbm_panda]="--robot $mbm_panda/panda.urdf --srdf $mbm_panda/panda.srdf --package meshes=$mbm_panda/meshes"
  [ur5]="--robot $ur5/ur_description/urdf/ur5_robot.urdf --srdf $ur5/ur5_moveit_config/config/ur5.srdf --package ur_description=$ur5/ur_description"
  [ur5_visual]="--robot $ur5/ur_description/urdf/ur5_robot.urdf --srdf $ur5/ur5_moveit_config/config/ur5.srdf --package ur_description=$ur5/ur_description --collision-from-visual"
  [kr5]="--robot WORK/kr5/KR5_sixx_R650.urdf"
  [wam]="--robot $dart/wam/wam.urdf --srdf $root/tests/data/robots/wam.srdf --package herb_description=$dart/wam"
  [hubo_left_arm]="--robot $dart/drchubo/drchubo.urdf --srdf $root/tests/data/robots/drchubo.srdf --package drchubo=$dart/drchubo --group left_arm"
  [hubo_both_arms]="--robot $dart/drchubo/drchubo.urdf --srdf $root/tests/data/robots/drchubo.srdf --package drchubo=$dart/drchubo --group both_arms"
)
labels=("$@")
if [ ${#labels[@]} -eq 0 ]; then labels=(panda mbm_panda ur5 ur5_visual kr5 wam hubo_left_arm hubo_both_arms); fi
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
slug="$(echo "$cpu" | tr 'A-Z' 'a-z' | sed 's/([^)]*)//g; s/processor//; s/cpu//; s/@.*//; s/[^a-z0-9]\+/-/g; s/^-//; s/-$//')"
out_root="$root/bench/results/${slug}-$(nproc)cpu/robots"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The KR5's file name holds spaces: a copy of its folder under a plain name keeps the flags word-split safely.
mkdir -p "$work/kr5" "$work/problems"
cp -r "$dart/KR5/meshes" "$work/kr5/"
cp "$dart/KR5/KR5 sixx R650.urdf" "$work/kr5/KR5_sixx_R650.urdf"
for label in "${labels[@]}"; do
  flags="${robots[$label]:?unknown robot label $label}"
  flags="${flags//WORK/$work}"
  out="$out_root/$label"
  mkdir -p "$out"
  # shellcheck disable=SC2086
  {
    echo "commit: $(git -C "$root" rev-parse --short HEAD)"
    echo "date: $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "generate: proximity-bench generate $flags --count $count --seed 1 --out PROBLEMS"
    echo "suites: $suites"
    echo "robot: proximity-bench robot $flags --problems PROBLEMS"
    echo "mbm: proximity-bench mbm $flags --problems PROBLEMS --time-limit $time_limit"
  } > "$out/run.txt"
  # shellcheck disable=SC2086
  "$binary" generate $flags --count "$count" --seed 1 --out "$work/problems/$label" 2> "$out/generate.txt"
  cp "$work/problems/$label/generator.yaml" "$out/generator.yaml" 2>/dev/null || true
  for suite in $suites; do
    extra=()
    if [ "$suite" = mbm ]; then extra=(--time-limit "$time_limit"); fi
    # shellcheck disable=SC2086
    "$binary" "$suite" $flags --problems "$work/problems/$label" "${extra[@]}" > "$out/$suite.jsonl" \
      2> "$out/$suite.stderr.txt"
  done
  echo "written: $out" >&2
done
