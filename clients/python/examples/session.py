#!/usr/bin/python3
"""A short, realistic session with proximityd through the Python client (the main job's demo).

    PYTHONPATH=clients/python/src:<build>/clients/python/gen \\
        /usr/bin/python3 clients/python/examples/session.py --target 127.0.0.1:50051 \\
        --metrics http://127.0.0.1:9464/metrics

Steps: scene info; CLEAR on a batch of random states with throughput; a certified motion check that
collides and one that does not, each beside OMPL-style discrete checking at OMPL's default resolution;
distance with its certified interval and witness; time of first contact on the colliding motion; a plan
around that motion's obstacle (RRT-Connect with certified edges), re-validated with CheckPath; a batch
of random paths validated over the streaming RPC with a progress bar; an excerpt of the metrics page.
Exits 1 when a step fails.
"""
from __future__ import annotations

import argparse
import sys
import time
import urllib.request
from typing import Optional, Tuple

import numpy as np

from proximity_client import Client, MotionResult, ProximityError, SceneInfo

Motion = Tuple[np.ndarray, np.ndarray]


def header(title: str) -> None:
    print(f"\n== {title}", flush=True)


def fmt_q(q: np.ndarray) -> str:
    return "[" + ", ".join(f"{x:+.3f}" for x in q) + "]"


def describe(r: MotionResult) -> str:
    if r.free:
        return "free"
    if r.undecided:
        return f"UNDECIDED (graze), free for t in [0, {r.t_free:.5f}]"
    return f"COLLIDES at t = {r.t_collide:.5f} ({r.contact}), free for t in [0, {r.t_free:.5f}]"


def ompl_resolution(info: SceneInfo) -> float:
    """OMPL's DiscreteMotionValidator step: longest valid segment fraction 0.01 of the space's extent."""
    return 0.01 * float(np.linalg.norm(info.upper - info.lower))


def scene_info(c: Client) -> SceneInfo:
    header("Scene info")
    print(f"server {c.target}: health {c.health()}")
    scenes = c.list_scenes()
    print(f"{len(scenes)} scene(s) loaded: {', '.join(s.scene_id[:16] + '...' for s in scenes)}")
    info = c.get_scene("default")
    print(f"default scene {info.scene_id[:16]}... (version {info.version}): robot {info.robot_name}, {info.dof} joints,"
          f" {len(info.link_names)} links, {info.triangles} triangles")
    for lim in info.limits:
        print(f"  {lim.joint_name:<16} [{lim.lower:+.3f}, {lim.upper:+.3f}] rad")
    print(f"  links:   {', '.join(info.link_names)}")
    print(f"  objects: {', '.join(info.object_ids)}")
    return info


def batch(c: Client, info: SceneInfo, rng: np.random.Generator, n: int) -> Tuple[np.ndarray, np.ndarray]:
    header(f"CLEAR on {n:,} random states (one packed batch call)")
    states = info.sample(n, rng)
    t0 = time.perf_counter()
    free = c.check_states(states)
    dt = time.perf_counter() - t0
    print(f"{int(free.sum()):,} of {n:,} free ({100 * free.mean():.1f}%), {dt * 1e3:.0f} ms round trip, "
          f"{n / dt:,.0f} states/s")
    detail = c.check_states(states[:2000], include_contacts=True)
    counts: dict = {}
    for p in detail.contacts.values():
        counts[str(p)] = counts.get(str(p), 0) + 1
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:4]
    print("most frequent first contacts (first 2,000 states): " + "; ".join(f"{k}: {v}" for k, v in top))
    return states, free


def sample_motions(c: Client, free_states: np.ndarray, rng: np.random.Generator) -> Tuple[Motion, Motion]:
    """A motion between two free states that the certified check says collides, and one it says is free,
    by sampling short hops between the free states of the batch."""
    colliding = free_motion = None
    for _ in range(2000):
        i, j = rng.integers(len(free_states), size=2)
        q0 = free_states[i]
        q1 = q0 + rng.uniform(0.1, 0.5) * (free_states[j] - q0)
        if not c.check_state(q1).free:
            continue
        r = c.check_motion(q0, q1)
        if r.free and free_motion is None:
            free_motion = (q0, q1)
        elif not r.free and not r.undecided and colliding is None:
            colliding = (q0, q1)
        if colliding is not None and free_motion is not None:
            return colliding, free_motion
    raise RuntimeError("sampling found no colliding or no free motion between free states")


def find_graze(c: Client, colliding: Motion, free_motion: Motion, resolution: float) -> Optional[Motion]:
    """A short motion whose endpoints are free and that clips an obstacle between them, shorter than
    ``resolution``: discrete checking at that step samples only its two free endpoints.

    Bisects between a colliding and a free motion (blending their endpoints) for the boundary where the
    certified answer flips; near it the colliding stretch [a, b] (from the forward and the reverse
    certified checks) is short, and the motion from just before a to just after b is the graze.
    """
    (a0, a1), (b0, b1) = colliding, free_motion
    lo, hi = 0.0, 1.0  # blend weight: lo collides, hi is free
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        m0, m1 = (1 - mid) * a0 + mid * b0, (1 - mid) * a1 + mid * b1
        if not (c.check_state(m0).free and c.check_state(m1).free):
            return None  # the blend leaves free space at an endpoint: try another pair
        fwd = c.check_motion(m0, m1)
        if fwd.free:
            hi = mid
            continue
        lo = mid
        if fwd.undecided:
            continue
        length = float(np.linalg.norm(m1 - m0))
        a, b = fwd.t_free, 1.0 - c.check_motion(m1, m0).t_free  # [0, a] and [b, 1] are certified free
        if (b - a) * length < 0.7 * resolution:
            margin = (0.95 * resolution - (b - a) * length) / 2 / length
            return m0 + max(0.0, a - margin) * (m1 - m0), m0 + min(1.0, b + margin) * (m1 - m0)
    return None


def motions(c: Client, info: SceneInfo, free_states: np.ndarray, rng: np.random.Generator) -> Motion:
    res = ompl_resolution(info)
    header(f"Certified LINK vs discrete checking at OMPL's default resolution ({res:.4f} rad)")
    colliding, free_motion = sample_motions(c, free_states, rng)
    graze = None
    deadline = time.monotonic() + 10.0
    pair = (colliding, free_motion)
    while graze is None and time.monotonic() < deadline:
        graze = find_graze(c, pair[0], pair[1], res)
        if graze is None:
            pair = sample_motions(c, free_states, rng)
    shown = [("motion A (collides)", colliding), ("motion B (free)", free_motion)]
    if graze is not None:
        shown.append(("motion C (a graze between OMPL's samples)", graze))
    for title, (q0, q1) in shown:
        print(f"{title}: {fmt_q(q0)} -> {fmt_q(q1)} (length {np.linalg.norm(q1 - q0):.3f} rad)")
        t0 = time.perf_counter()
        cert = c.check_motion(q0, q1)
        dt_c = time.perf_counter() - t0
        print(f"  certified            : {describe(cert)}  [{cert.stats.states} states, "
              f"{cert.stats.distance_queries} distance queries, {dt_c * 1e3:.2f} ms]")
        for r in (res, 0.01):
            d = c.check_motion(q0, q1, mode="discrete", resolution=r)
            print(f"  discrete step {r:<7.4f}: {describe(d)}  [{d.stats.states} states]")
    if graze is not None:
        print("motion C: both endpoints are free and closer than OMPL's step, so the discrete check samples only "
              "them and calls the motion free; the certified check finds the obstacle in between")
    else:
        print("(no graze shorter than OMPL's step found within 10 s)")
    return colliding


def distance(c: Client, info: SceneInfo, free_states: np.ndarray) -> None:
    header("Distance at a free state: certified [lower, upper] interval and witness")
    q = free_states[0]
    print(f"q = {fmt_q(q)}")
    for rel in (0.0, 0.2):
        t0 = time.perf_counter()
        d = c.distance(q, rel_err=rel)
        dt = time.perf_counter() - t0
        n = d.nearest
        print(f"  rel_err {rel:.1f}: clearance in [{d.lower:.6f}, {d.upper:.6f}] m  ({n.pair}; "
              f"{d.stats.pairs_tested} pairs tested, {dt * 1e3:.2f} ms)")
    print(f"  witness: robot point {fmt_q(n.point_robot)}, other point {fmt_q(n.point_other)}, "
          f"|p - p'| = {np.linalg.norm(n.point_robot - n.point_other):.6f} m")


def first_contact(c: Client, motion: Motion) -> None:
    header("Time of first contact on motion A (conservative advancement)")
    q0, q1 = motion
    link = c.check_motion(q0, q1)
    toi = c.time_of_first_contact(q0, q1)
    pair = toi.nearest.pair
    print(f"  contact {toi.contact} at t* = {toi.t_contact:.6f} ({pair}); clearance there <= {toi.clearance:.2e} m;"
          f" {toi.iterations} advancement steps")
    print(f"  [0, {toi.t_contact:.6f}) is certified contact-free; certified LINK found the colliding state at "
          f"t = {link.t_collide:.6f}")
    if toi.contact and toi.t_contact > link.t_collide + 1e-9:
        raise RuntimeError("time of first contact lies after a colliding state")


def planning(c: Client, motion: Motion) -> None:
    header("Planning around motion A's obstacle (RRT-Connect, certified edges, seed 1)")
    q0, q1 = motion
    straight = c.check_motion(q0, q1)
    print(f"  straight line: {describe(straight)}")
    t0 = time.perf_counter()
    r = c.plan(q0, q1, planner="rrt_connect", time_limit=10.0, seed=1)
    dt = time.perf_counter() - t0
    s = r.stats
    if not r.solved:
        raise RuntimeError(f"planning: {r.outcome}: {r.message}")
    print(f"  {r.outcome}: {s.plan_time * 1e3:.1f} ms planning + {s.simplify_time * 1e3:.1f} ms simplifying "
          f"({dt * 1e3:.0f} ms round trip); {s.iterations} iteration{'s' if s.iterations != 1 else ''}, "
          f"{s.state_checks} state checks, "
          f"{s.quick_motion_checks} sampled and {s.motion_checks} certified motion checks, {s.vertices} tree vertices")
    print(f"  path: {s.raw_waypoints} -> {len(r.path)} waypoints, joint-space length {s.raw_length:.3f} -> "
          f"{s.length:.3f} rad (straight line {np.linalg.norm(q1 - q0):.3f} rad)")
    check = c.check_path(r.as_path())
    print(f"  re-validated with CheckPath (certified): {'free' if check.free else 'NOT FREE'}, "
          f"{len(r.path) - 1} segments, {check.stats.states} states, {check.stats.distance_queries} distance queries")
    if not check.free:
        raise RuntimeError(f"the planned path is not free at segment {check.segment}: {describe(check.motion)}")


def paths(c: Client, info: SceneInfo, free_states: np.ndarray, rng: np.random.Generator, n: int) -> None:
    header(f"Validating {n} random paths (server-streaming ValidatePaths, certified)")
    batch = []
    for _ in range(n):
        k = int(rng.integers(3, 8))
        start = free_states[rng.integers(len(free_states))]
        steps = rng.normal(0.0, 0.12, (k - 1, info.dof))
        w = np.vstack([start, start + np.cumsum(steps, axis=0)])
        batch.append(np.clip(w, info.lower, info.upper))
    t0 = time.perf_counter()
    results = c.validate_paths(batch, progress="always")
    dt = time.perf_counter() - t0
    valid = sum(r.free for r in results)
    segs = sum(len(w) - 1 for w in batch)
    print(f"{valid} of {n} paths valid, {segs} segments in {dt * 1e3:.0f} ms ({segs / dt:,.0f} segments/s)")
    for i, r in enumerate(results):
        if not r.free:
            print(f"  first invalid: path {i}, segment {r.segment}: {describe(r.motion)}")
            break


def metrics(url: str) -> None:
    header(f"Metrics excerpt ({url})")
    with urllib.request.urlopen(url, timeout=5) as resp:
        text = resp.read().decode()
    shown = 0
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if ("grpc_server_handled_total" in line and 'grpc_code="OK"' in line) or line.startswith("proximity_"):
            if "_bucket" in line or line.endswith(" 0"):
                continue
            print("  " + line)
            shown += 1
            if shown >= 16:
                break
    print(f"  ({len(text.splitlines())} lines in all)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="127.0.0.1:50051")
    ap.add_argument("--metrics", default=None, help="URL of the daemon's /metrics page")
    ap.add_argument("--states", type=int, default=10_000)
    ap.add_argument("--paths", type=int, default=200)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    try:
        with Client(args.target, timeout=60) as c:
            c.wait_until_serving(timeout=30)
            info = scene_info(c)
            states, free = batch(c, info, rng, args.states)
            free_states = states[free]
            if len(free_states) < 10:
                raise RuntimeError("fewer than 10 free states in the batch")
            motion = motions(c, info, free_states, rng)
            distance(c, info, free_states)
            first_contact(c, motion)
            planning(c, motion)
            paths(c, info, free_states, rng, args.paths)
            if args.metrics:
                metrics(args.metrics)
    except ProximityError as e:
        print(f"\nsession failed: {e.method}: {e.code.name}: {e.details}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - report any failure as the step's failure
        print(f"\nsession failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    print("\nsession complete")
    return 0


if __name__ == "__main__":
    sys.exit(main())
