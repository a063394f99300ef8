#!/bin/bash
# A/B of the swept cell walk (self-clearance maps): new = the walk on, base = off (PROX_NO_SWEPT=1, a
# temporary switch in the measured build of this commit, not kept), one binary, base and new in turn.
# usage: ab.sh OUT ROUNDS CASES robots...
source "$(dirname "$0")/../robot_flags.sh"
O=$1; ROUNDS=$2; CASES=$3; shift 3  # the clear runs: ROUNDS 1, CASES clear; the link_* files: CASES clear,link
mkdir -p $O
B=/work/main/build/bench/proximity-bench
for r in "$@"; do
  [ -d /tmp/probs/$r ] || $B generate ${F[$r]} --count 40 --seed 1 --out /tmp/probs/$r > $O/gen_$r.log 2>&1
done
for round in $(seq 1 $ROUNDS); do
  for r in "$@"; do
    for v in base new; do
      if [ $v = base ]; then export PROX_NO_SWEPT=1; else unset PROX_NO_SWEPT; fi
      $B robot ${F[$r]} --problems /tmp/probs/$r --cases $CASES > $O/${r}_${v}_$round.jsonl 2> $O/${r}_${v}_$round.err
    done
  done
done
