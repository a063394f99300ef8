#!/usr/bin/python3
"""The per-robot table from scripts/bench_robots.sh's results: one row per robot folder under
bench/results/<machine>/robots/, with the targets each row misses.

Usage: bench/summarize_robots.py RESULTS_DIR   (e.g. bench/results/amd-epyc-2cpu/robots); prints Markdown.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Dict, List, Optional

# The targets every robot is held to (issue "Many configurations at once"; the narrowed LINK's and the
# load's from issue "Fast on every robot").
CLEAR_RATIO, CLEAR_US = 20.0, 1.0
LINK_RATIO = 2.0       # certified LINK as planners ask it against discrete FCL at 1%
NARROW_RATIO = 1.0     # certified LINK narrowing a colliding edge to 1/1024 (the peer does not narrow)
PLAN_RATIO, PLAN_MS = 20.0, 2.0
BATCH_US = 0.25        # CheckStates in batches of 1,000, on the Panda's random states
LOAD_S, RSS_MB = 2.0, 100.0


def cases(path: Path) -> Dict[str, dict]:
    out: Dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                obj = json.loads(line)
                out[obj["case"]] = obj
    return out


def num(v: Optional[float], digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}"


def warm_cell(case: dict) -> str:
    """The share of the case's hull GJK tests its warm caches answered, and iterations per test."""
    if "ours_convex_warm_share" not in case:
        return "-"
    return f"{100 * case['ours_convex_warm_share']:.0f}% ({case['ours_convex_iterations_per_test']:.1f})"


def row(label: str, folder: Path) -> tuple[str, List[str]]:
    r = cases(folder / "robot.jsonl")
    m = cases(folder / "mbm.jsonl")
    load, cr, cs = r.get("load", {}), r.get("clear_random", {}), r.get("clear_start_goal", {})
    batch = r.get("clear_batch", {})  # CheckStates over random states in batches of 1,000
    link, exact, rel = r.get("link_certified", {}), r.get("distance_exact", {}), r.get("distance_rel_0.2", {})
    # The same certified answer (free or not) a planner asks for, without narrowing a colliding edge's
    # first contact to 1/1024 of it (which the discrete peer does not compute at all).
    plink = r.get("link_certified_planning", {})
    ours, peer, ratios = m.get("ours_overall", {}), m.get("peer_overall", {}), m.get("ratios", {})
    rel_speedup = exact["ours_us"] / rel["ours_us"] if exact and rel and rel["ours_us"] > 0 else None
    cells = [
        label, str(load.get("robot_triangles", "-")), num(load.get("robot_and_scenes_load_s"), 2),
        num(load.get("rss_mb"), 0),
        num(cr.get("ours_us"), 2), num(cr.get("ratio"), 1), num(cs.get("ours_us"), 2), num(cs.get("ratio"), 1),
        num(batch.get("ours_us"), 2), num(batch.get("ratio"), 1),
        num(link.get("ours_us"), 1), num(link.get("ratio"), 2), num(plink.get("ours_us"), 1), num(plink.get("ratio"), 2),
        str(link.get("misses_certified", "-")),
        warm_cell(link), num(rel_speedup, 2),
        num(ours.get("time_ms_median"), 2), num(ours.get("plan_ms_median"), 2), num(ours.get("simplify_ms_median"), 2),
        num(ours.get("time_ms_p95"), 1),
        f"{ours.get('solved', '-')}/{peer.get('solved', '-')} of {ours.get('n', '-')}",
        str(ours.get("invalid_simplified", "-")), str(peer.get("invalid_simplified", "-")),
        num(ratios.get("time_ratio"), 1),
    ]
    missed: List[str] = []
    if cr and cr["ratio"] < CLEAR_RATIO:
        missed.append(f"CLEAR random {cr['ratio']:.1f}x FCL (target {CLEAR_RATIO:g}x)")
    if cr and cr["ours_us"] > CLEAR_US:
        missed.append(f"CLEAR random {cr['ours_us']:.2f} us (target <= {CLEAR_US:g})")
    if label == "panda" and batch and batch["ours_us"] > BATCH_US:
        missed.append(f"CheckStates in batches {batch['ours_us']:.2f} us a state (target <= {BATCH_US:g})")
    if plink and plink["ratio"] < LINK_RATIO:
        missed.append(f"certified LINK (free or not) {plink['ratio']:.2f}x discrete FCL (target >= {LINK_RATIO:g}x)")
    if link and link["ratio"] < NARROW_RATIO:
        missed.append(f"certified LINK narrowing colliding edges to 1/1024 {link['ratio']:.2f}x discrete FCL "
                      f"(target >= {NARROW_RATIO:g}x; the peer does not narrow)")
    if ratios and ratios.get("time_ratio", 0) < PLAN_RATIO:
        missed.append(f"planning {ratios['time_ratio']:.1f}x OMPL + FCL (target {PLAN_RATIO:g}x)")
    if ours and ours.get("time_ms_median", 0) > PLAN_MS:
        missed.append(f"planning median {ours['time_ms_median']:.2f} ms (target <= {PLAN_MS:g})")
    if ours and peer and ours.get("solved", 0) < peer.get("solved", 0):
        missed.append(f"solved {ours['solved']} where the peer solved {peer['solved']}")
    if ours and ours.get("invalid_simplified", 0):
        missed.append(f"{ours['invalid_simplified']} invalid paths")
    if rel_speedup is not None and rel_speedup < 2.5:
        missed.append(f"distance rel_err 0.2 {rel_speedup:.2f}x exact (target 2.5x)")
    if label.startswith("ur5_visual") and load:
        if load["robot_and_scenes_load_s"] > LOAD_S * (1 + load.get("scenes", 0)):
            missed.append("load time")
        if load["rss_mb"] > RSS_MB:
            missed.append(f"resident memory {load['rss_mb']:.0f} MiB with every scene loaded (target <= {RSS_MB:g})")
    return "| " + " | ".join(cells) + " |", missed


def main() -> int:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("bench/results/amd-epyc-2cpu/robots")
    header = ["robot", "robot tri", "load s (robot + scenes)", "RSS MiB", "CLEAR random us", "x FCL",
              "CLEAR start/goal us", "x FCL", "CheckStates batch us", "x FCL", "cert. LINK narrowed us",
              "x discrete FCL 1%",
              "cert. LINK free/not us", "x discrete FCL 1%", "LINK misses",
              "LINK hull GJK warm (iter./test)", "dist rel 0.2 speedup", "RRT-C median ms", "search ms", "simplify ms",
              "p95 ms", "solved ours/peer", "invalid ours", "invalid peer", "plan x OMPL+FCL"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    misses: Dict[str, List[str]] = {}
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        line, missed = row(folder.name, folder)
        print(line)
        misses[folder.name] = missed
    print()
    for label, missed in misses.items():
        print(f"- {label}: " + ("every target met" if not missed else "missed: " + "; ".join(missed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
