#!/bin/bash
# A/B of distance(q) with rel_err 0.2 against exact: base = HEAD b7816da, new = leaf plane gaps.
source "$(dirname "$0")/../robot_flags.sh"
# /tmp/bench_base: proximity-bench at b7816da (its distance case timed with PROX_DREPS=5 repetitions, a
# temporary switch); /tmp/bench_final: this commit (5 repetitions built in). Problems: /tmp/probs/<robot>
# from `proximity-bench generate <flags> --count 40 --seed 1 --out /tmp/probs/<robot>`.
F[mbm_panda]=""
export PROX_DREPS=5
for round in 1 2 3; do
  for r in panda mbm_panda ur5 ur5_visual kr5 wam; do
    P=""; [ $r != mbm_panda ] && P="--problems /tmp/probs/${r%_visual}"
    for v in base final; do
      /tmp/bench_$v robot ${F[$r]} $P --cases distance 2>/dev/null | /usr/bin/python3 -c "
import sys,json
e=None
for l in sys.stdin:
  d=json.loads(l)
  if d['case']=='distance_exact': e=d; continue
  if d['case'].startswith('distance_rel'):
    print('$round $r $v exact_us %.2f rel_us %.2f ratio %.3f tri_tests %.1f/%.1f bv_tests %.1f/%.1f peer_below_lower %d/%d' % (e['ours_us'], d['ours_us'], e['ours_us']/d['ours_us'], e['ours_triangle_tests'], d['ours_triangle_tests'], e['ours_bv_tests'], d['ours_bv_tests'], e['peer_below_lower'], d['peer_below_lower']))"
    done
  done
  for v in base final; do
    /tmp/bench_$v envrob 2>/dev/null | /usr/bin/python3 -c "
import sys,json
for l in sys.stdin:
  d=json.loads(l)
  if d['case']=='distance_rel_0.20': print('$round envrob $v rel_us %.2f separated_us %.2f speedup %.3f separated %.3f tri_tests %.2f violations %d' % (d['ours_us'], d['ours_separated_us'], d['speedup_vs_our_exact'], d['speedup_vs_our_exact_separated'], d['ours_triangle_tests'], d['budget_violations']))"
  done
done
