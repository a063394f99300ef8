#!/bin/bash
# A/B of the swept cell walk (self-clearance maps): new = the walk on, base = off (PROX_NO_SWEPT=1, a
# temporary switch in the measured build of this commit, not kept), one binary, base and new in turn.
# usage: ab.sh OUT ROUNDS CASES robots...
S=/work/shared/data; T=/work/main/tests/data/robots; D=/usr/share/doc/dart/data/urdf
declare -A F
F[panda]="--robot $S/robots/panda/moveit_resources_panda_description/urdf/panda.urdf --srdf $S/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf --package moveit_resources_panda_description=$S/robots/panda/moveit_resources_panda_description --group panda_arm"
F[mbm_panda]="--robot $S/robots/mbm_panda/panda.urdf --srdf $S/robots/mbm_panda/panda.srdf --package meshes=$S/robots/mbm_panda/meshes"
F[ur5]="--robot $S/robots/ur5/ur_description/urdf/ur5_robot.urdf --srdf $S/robots/ur5/ur5_moveit_config/config/ur5.srdf --package ur_description=$S/robots/ur5/ur_description"
F[ur5_visual]="${F[ur5]} --collision-from-visual"
F[kr5]="--robot /tmp/kr5/KR5_sixx_R650.urdf"
F[wam]="--robot $D/wam/wam.urdf --srdf $T/wam.srdf --package herb_description=$D/wam"
F[hubo_left_arm]="--robot $D/drchubo/drchubo.urdf --srdf $T/drchubo.srdf --package drchubo=$D/drchubo --group left_arm"
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
