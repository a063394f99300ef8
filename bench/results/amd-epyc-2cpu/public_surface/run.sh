#!/bin/bash
# The before/after runs of the installed-headers change (issue 30): base = proximity-bench built at fe8ff08
# (a worktree, Release, PROX_NATIVE=ON), new = the same build at 4f8e61d. Robot suite on the Panda, KR5
# and UR5, then the convex and service suites, base and new alternating, two rounds (the UR5 a third).
#   run.sh BASE_BINARY NEW_BINARY OUT_DIR
# PROBLEMS/<robot>: proximity-bench generate <robot flags> --count 40 --seed 1 --out PROBLEMS/<robot>;
# KR5_URDF: dart-doc's KR5 as ../batch/lanes/run.txt uses it (kr5 line there).
set -u
BASE=$1; NEW=$2; O=$3
S=../shared/data
: "${PROBLEMS:?set PROBLEMS}" "${KR5_URDF:?set KR5_URDF}"
declare -A F
F[panda]="--robot $S/robots/panda/moveit_resources_panda_description/urdf/panda.urdf --srdf $S/robots/panda/moveit_resources_panda_moveit_config/config/panda.srdf --package moveit_resources_panda_description=$S/robots/panda/moveit_resources_panda_description --group panda_arm"
F[ur5]="--robot $S/robots/ur5/ur_description/urdf/ur5_robot.urdf --srdf $S/robots/ur5/ur5_moveit_config/config/ur5.srdf --package ur_description=$S/robots/ur5/ur_description"
F[kr5]="--robot $KR5_URDF"
for round in 1 2; do
  for r in panda kr5 ur5; do
    for v in base new; do
      bin=$BASE; [ $v = new ] && bin=$NEW
      $bin robot ${F[$r]} --problems $PROBLEMS/$r > $O/${r}_${v}_$round.jsonl 2> $O/${r}_${v}_$round.err
    done
  done
  for s in convex service; do
    for v in base new; do
      bin=$BASE; [ $v = new ] && bin=$NEW
      $bin $s > $O/${s}_${v}_$round.jsonl 2> $O/${s}_${v}_$round.err
    done
  done
done
for v in base new; do  # a third UR5 round
  bin=$BASE; [ $v = new ] && bin=$NEW
  $bin robot ${F[ur5]} --problems $PROBLEMS/ur5 > $O/ur5_${v}_3.jsonl 2> $O/ur5_${v}_3.err
done
