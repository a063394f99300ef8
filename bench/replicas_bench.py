#!/usr/bin/python3
"""Throughput of batch validation over 1, 2 and 3 proximityd replicas behind one round-robin client.

Each configuration starts its replicas (separate processes on loopback ports, ``--threads`` each), sends
the client's scene to all of them, then times two workloads with several calls in flight (two per
replica): CheckStates over ``--states`` random states (chunks of ``--chunk`` rows) and ValidatePaths
over ``--paths`` random 6-waypoint paths (certified; ``--path-chunk`` paths per call, one thread per call
in flight). It reports states/s and paths/s, the answers' agreement with the first configuration, and
each replica's CPU time over the run (utime + stime from /proc, seconds and as a share of the wall
time), so that the figure reads against the cores the machine has. One JSON object per line on stdout.

    PROXIMITY_BUILD_DIR=build /usr/bin/python3 bench/replicas_bench.py [--replicas 1,2,3] [--threads 1]
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "clients" / "python" / "tests"))

import numpy as np  # noqa: E402

import support  # noqa: E402
from proximity_client import Client, geometry  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def world() -> list:
    return [geometry.collision_object("wall", [geometry.box((0.05, 2.0, 2.0))], at=(0.5, 0.0, 0.5)),
            geometry.collision_object("ball", [geometry.sphere(0.15, at=(0.0, 0.0, 0.2))], at=(0.3, 0.3, 0.9))]


def run(n: int, args: argparse.Namespace, states: np.ndarray, paths: List[np.ndarray]) -> Dict[str, Any]:
    replicas = [support.Daemon("--threads", str(args.threads), "--log-level", "warn", metrics=False).start()
                for _ in range(n)]
    try:
        in_flight = 2 * n
        with Client([d.target for d in replicas], timeout=600, max_in_flight=in_flight) as c:
            scene = None
            for d in replicas:  # every replica loads the scene before the clock starts
                with d.client(timeout=600) as one:
                    scene = one.create_scene_from_files(support.KR5_URDF, objects=world()).scene_id
            c.create_scene_from_files(support.KR5_URDF, objects=world())
            c.check_states(states[: args.chunk * n], scene=scene, batch_size=args.chunk)  # warm every replica
            cpu0 = [cpu_seconds(d.proc.pid) for d in replicas]
            t0 = time.perf_counter()
            free = c.check_states(states, scene=scene, batch_size=args.chunk)
            t_states = time.perf_counter() - t0
            cpu1 = [cpu_seconds(d.proc.pid) for d in replicas]
            slices = [paths[i:i + args.path_chunk] for i in range(0, len(paths), args.path_chunk)]
            t0 = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(in_flight) as pool:
                results = [r for part in pool.map(
                    lambda p: c.validate_paths(p, progress=False, scene=scene), slices) for r in part]
            t_paths = time.perf_counter() - t0
            cpu2 = [cpu_seconds(d.proc.pid) for d in replicas]
        return {
            "suite": "replicas", "replicas": n, "threads_per_replica": args.threads, "calls_in_flight": in_flight,
            "states": len(states), "states_per_s": round(len(states) / t_states, 1), "states_seconds": round(t_states, 3),
            "paths": len(paths), "paths_per_s": round(len(paths) / t_paths, 1), "paths_seconds": round(t_paths, 3),
            "replica_cpu_s_states": [round(b - a, 3) for a, b in zip(cpu0, cpu1)],
            "replica_cpu_share_states": [round((b - a) / t_states, 2) for a, b in zip(cpu0, cpu1)],
            "replica_cpu_s_paths": [round(b - a, 3) for a, b in zip(cpu1, cpu2)],
            "replica_cpu_share_paths": [round((b - a) / t_paths, 2) for a, b in zip(cpu1, cpu2)],
            "free_states": int(free.sum()), "free_paths": int(sum(r.free for r in results)),
            "_answers": (free, [(r.free, r.segment) for r in results]),
        }
    finally:
        for d in replicas:
            d.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", default="1,2,3", help="comma-separated replica counts")
    ap.add_argument("--threads", type=int, default=1, help="worker threads per replica")
    ap.add_argument("--states", type=int, default=100_000)
    ap.add_argument("--chunk", type=int, default=2000)
    ap.add_argument("--paths", type=int, default=1000)
    ap.add_argument("--path-chunk", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    counts = [int(x) for x in args.replicas.split(",")]
    rng = np.random.default_rng(args.seed)
    with support.Daemon("--threads", "1", metrics=False) as d, d.client() as c:
        info = c.get_scene()
    lower, upper = np.array([l.lower for l in info.limits]), np.array([l.upper for l in info.limits])
    states = lower + rng.random((args.states, info.dof)) * (upper - lower)
    paths = [lower + rng.random((6, info.dof)) * (upper - lower) for _ in range(args.paths)]
    first = None
    for n in counts:
        r = run(n, args, states, paths)
        answers = r.pop("_answers")
        if first is None:
            first = answers
        r["answers_equal_first"] = bool(np.array_equal(answers[0], first[0]) and answers[1] == first[1])
        r["load_avg_1m"] = round(os.getloadavg()[0], 2)
        print(json.dumps(r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
