#!/bin/bash
# A/B: old vs new bench binaries, alternating; prints ours overall medians per run.
source /work/main/bench/results/amd-epyc-2cpu/robot_flags.sh
cd /work/main
for round in 1 2 3; do
  for b in old new; do
    for r in mbm ur5 kr5 wam; do
      if [ $r = mbm ]; then args="--quick"; else args="${F[$r]} --problems /tmp/probs/$r --quick"; fi
      /tmp/ab_nn/$b mbm $args 2>/dev/null > /tmp/ab_nn/$b.$r.$round.jsonl
      /usr/bin/python3 - "$b" "$r" "$round" /tmp/ab_nn/$b.$r.$round.jsonl <<'PY'
import sys, json
b, r, rnd, f = sys.argv[1:5]
for l in open(f):
    d = json.loads(l)
    if d.get("case") == "ours_overall":
        print(rnd, b, r, "median_ms %.3f plan %.3f simplify %.3f p95 %.1f mean %.2f solved %d/%d" % (d["time_ms_median"], d["plan_ms_median"], d["simplify_ms_median"], d["time_ms_p95"], d["time_ms_mean"], d["solved"], d["n"]))
PY
    done
  done
done
