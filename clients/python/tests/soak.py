#!/usr/bin/python3
"""Soak test: concurrent clients against one real proximityd, every answer checked against a reference.

    /usr/bin/python3 clients/python/tests/soak.py --seconds 600 --out soak.json

What it does:

1. Starts a proximityd (built-in default scene, default worker threads) on free loopback ports.
2. Reference phase, one call at a time: builds a fixed request pool (seeded) for the default scene and, per
   client, a family of scenes of its own (a KR5 scene made with CreateScene, three UpdateWorld versions of
   it that add, move and remove objects, and two UpdateWorld versions of the default scene), and records
   the daemon's answer to every request and the id of every scene. The default scene's CLEAR and certified
   LINK answers are also compared with proximity-scene (the same scene answered in process, no gRPC).
   Each family's content is unique to its client, so one client deleting its scenes never touches
   another's (scene ids are content hashes).
3. Concurrent phase: ``--clients`` processes (8 by default), each with its own gRPC channel and
   connection, for ``--seconds``. Each repeats a cycle: CreateScene, UpdateWorld x 5, DeleteScene x 6, and
   between those scene operations random queries (CheckStates on packed batches, certified CheckMotion,
   CheckPath, ValidatePaths streams) on the default scene and on whichever of its scenes exist at the
   time. Every answer and every scene id is compared with the reference: any difference is a mismatch,
   any failed call an error. Loops are bounded by time and by a call count.
4. The daemon's RSS, thread count and open descriptors are sampled from /proc all along.
5. After the clients stop: the daemon holds exactly the scenes it started with, its metrics count no
   failed call, it still gives the reference answers, and SIGTERM stops it with exit code 0.

RSS criterion (leak detection): the first 20 % of the concurrent phase is warm-up (allocator arenas,
self-clearance maps and caches filling). The baseline is the median RSS over the next 10 % of the phase,
the final value the median over its last 10 % (medians, because RSS moves with how many scenes the
clients hold at a given instant). The run passes when final <= 1.25 x baseline + 8 MiB. A leak of a
fraction of the call rate (for example 100 bytes per call at ~1,000 calls/s over 10 minutes) grows RSS
by far more than that; the allocator's normal breathing does not. The least-squares slope over the
samples after warm-up is reported too (not asserted).

The allocator: with glibc's default of up to 8 malloc arenas per core, the daemon's RSS climbs for the
first minute or two under eight clients (about +25 MiB in the first 30 s here) while its threads spread
over new arenas that each grow to their own peak, then levels off; with MALLOC_ARENA_MAX=2 the same load
is flat from the first seconds. A run of half a minute cannot tell that climb from a leak, so short runs
cap the arenas (``--malloc-arena-max 2``), which also makes small leaks stand out; long runs show the
daemon as deployed.

Latencies are wall-clock times of each client call as the client sees it (serialisation included), on a
machine shared with the daemon: they describe this run, they are not a benchmark.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import support  # noqa: E402
from proximity_client import Client, ProximityError, geometry  # noqa: E402

#: Call kinds, in report order.
QUERY_KINDS = ("check_states", "check_motion", "check_path", "validate_paths")
SCENE_KINDS = ("create_scene", "update_world", "delete_scene")
KINDS = QUERY_KINDS + SCENE_KINDS
#: How often each query kind is drawn between scene operations.
QUERY_WEIGHTS = (0.3, 0.35, 0.15, 0.2)
#: Floating-point results (t_free, t_collide) must agree to this (the bound tests/test_equivalence uses);
#: answers that agree within it but not bit for bit are counted separately as "float_jitter".
TOLERANCE = 1e-12
#: Each client's channel gets its own connection (a channel otherwise shares subchannels with the
#: process's other channels to the same address).
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]

RSS_WARMUP = 0.2
RSS_WINDOW = 0.1
RSS_RATIO = 1.25
RSS_SLACK_MIB = 8.0


# ---- the request pool -------------------------------------------------------------------------------

class Sizes:
    """How many requests of each kind one scene's pool holds (the default scene's, a family scene's)."""

    def __init__(self, batches: int, batch_rows: int, motions: int, paths: int, sets: int, set_paths: int) -> None:
        self.batches, self.batch_rows, self.motions = batches, batch_rows, motions
        self.paths, self.sets, self.set_paths = paths, sets, set_paths


DEFAULT_SIZES = Sizes(batches=6, batch_rows=1000, motions=96, paths=24, sets=4, set_paths=12)
FAMILY_SIZES = Sizes(batches=2, batch_rows=500, motions=16, paths=6, sets=2, set_paths=8)
#: Queries between two scene operations of a cycle.
QUERIES_PER_STEP = 6


def _random_paths(rng: np.random.Generator, lower: np.ndarray, upper: np.ndarray, count: int) -> List[np.ndarray]:
    """Random walks of 2 to 6 waypoints, steps of at most 0.3 rad per joint (some free, some not)."""
    out = []
    for _ in range(count):
        n = int(rng.integers(2, 7))
        q = lower + rng.random(len(lower)) * (upper - lower)
        rows = [q]
        for _ in range(n - 1):
            q = np.clip(q + rng.uniform(-0.3, 0.3, len(lower)), lower, upper)
            rows.append(q)
        out.append(np.array(rows))
    return out


def make_pool(rng: np.random.Generator, lower: np.ndarray, upper: np.ndarray, sizes: Sizes) -> Dict[str, Any]:
    dof = len(lower)
    q0, q1 = support.random_motions(rng, lower, upper, sizes.motions, short_fraction=0.6, step=0.4)
    return {
        "states": [lower + rng.random((sizes.batch_rows, dof)) * (upper - lower) for _ in range(sizes.batches)],
        "motions": np.stack([q0, q1], axis=1),
        "paths": _random_paths(rng, lower, upper, sizes.paths),
        "sets": [_random_paths(rng, lower, upper, sizes.set_paths) for _ in range(sizes.sets)],
    }


def motion_answer(r: Any) -> tuple:
    return (bool(r.free), bool(r.undecided), float(r.t_free), None if r.free else float(r.t_collide),
            support.contact_names(r.contact))


def path_answer(r: Any) -> tuple:
    return (bool(r.free), int(r.segment), motion_answer(r.motion))


def compare(got: Any, want: Any, tol: float = TOLERANCE) -> str:
    """"same" (bit for bit), "close" (floats within tol, everything else equal) or "different"."""
    if isinstance(want, float) and isinstance(got, float):
        if got == want:
            return "same"
        return "close" if abs(got - want) <= tol else "different"
    if isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)):
        if len(got) != len(want):
            return "different"
        worst = "same"
        for g, w in zip(got, want):
            c = compare(g, w, tol)
            if c == "different":
                return c
            if c == "close":
                worst = c
        return worst
    return "same" if got == want else "different"


def ask(client: Client, scene: str, kind: str, request: Any, timeout: Optional[float] = None) -> Any:
    """One query call; returns its answer in comparable form."""
    if kind == "check_states":
        return client.check_states(request, scene=scene, timeout=timeout)
    if kind == "check_motion":
        return motion_answer(client.check_motion(request[0], request[1], scene=scene, timeout=timeout))
    if kind == "check_path":
        return path_answer(client.check_path(request, scene=scene, timeout=timeout))
    if kind == "validate_paths":
        return [path_answer(r) for r in client.validate_paths(request, progress=False, scene=scene, timeout=timeout)]
    raise ValueError(kind)


def pool_requests(pool: Dict[str, Any], kind: str) -> Sequence[Any]:
    return {"check_states": pool["states"], "check_motion": pool["motions"], "check_path": pool["paths"],
            "validate_paths": pool["sets"]}[kind]


def reference_answers(client: Client, scene: str, pool: Dict[str, Any]) -> Dict[str, List[Any]]:
    """The daemon's answers to every request of the pool, one call at a time."""
    return {kind: [ask(client, scene, kind, req) for req in pool_requests(pool, kind)] for kind in QUERY_KINDS}


# ---- each client's scene family ---------------------------------------------------------------------

def _object(spec: Tuple[Any, ...]) -> Any:
    kind, oid, dims, at = spec
    part = {"box": lambda: geometry.box(dims), "sphere": lambda: geometry.sphere(dims[0]),
            "cylinder": lambda: geometry.cylinder(dims[0], dims[1])}[kind]()
    return geometry.collision_object(oid, [part], at=at)


def family_plan(index: int) -> Dict[str, Any]:
    """Client `index`'s scenes as plain data: a KR5 scene with a table and a crate, then UpdateWorld steps
    (key, parent key, add, move, remove). Object ids and places depend on `index`, so the content (and the
    id) of every scene differs between clients."""
    a = 2.0 * math.pi * index / 8.0 + 0.3 * index

    def around(r: float, angle: float, z: float) -> Tuple[float, float, float]:
        return (round(r * math.cos(angle), 4), round(r * math.sin(angle), 4), z)

    crate, ball, pillar = f"crate_{index}", f"ball_{index}", f"pillar_{index}"
    return {
        "create": [("box", "table", (0.6, 1.0, 0.05), (0.55, 0.0, 0.1)),
                   ("box", crate, (0.18, 0.2, 0.22), around(0.5, a, 0.35))],
        "updates": [
            ("v1", "base", [("sphere", ball, (0.12,), around(0.45, a + 1.6, 0.6))], {}, []),
            ("v2", "v1", [], {crate: around(0.55, a + math.pi, 0.3)}, []),
            ("v3", "v2", [], {}, [ball]),
            ("d1", "default", [("cylinder", pillar, (0.06, 0.8), around(0.45, a + 0.8, 0.4))], {}, ["post"]),
            ("d2", "d1", [], {pillar: around(0.4, a - 0.8, 0.5)}, []),
        ],
    }


def family_keys(plan: Dict[str, Any]) -> List[str]:
    return ["base"] + [u[0] for u in plan["updates"]]


def create_base(client: Client, plan: Dict[str, Any], timeout: Optional[float] = None) -> Any:
    return client.create_scene(urdf_path=support.KR5_URDF, objects=[_object(s) for s in plan["create"]],
                               timeout=timeout)


def apply_update(client: Client, step: Tuple[Any, ...], parent_id: str, timeout: Optional[float] = None) -> Any:
    _key, _parent, add, move, remove = step
    return client.update_world(add=[_object(s) for s in add], move=move, remove=remove, scene=parent_id,
                               timeout=timeout)


# ---- the reference phase ----------------------------------------------------------------------------

def build_workload(client: Client, clients: int, seed: int, families: bool = True,
                   default_sizes: Sizes = DEFAULT_SIZES, family_sizes: Sizes = FAMILY_SIZES) -> Dict[str, Any]:
    """Request pools and their reference answers, computed one call at a time on `client`'s daemon."""
    rng = np.random.default_rng(seed)
    info = client.get_scene("default")
    pool = make_pool(rng, info.lower, info.upper, default_sizes)
    work: Dict[str, Any] = {"default": {"pool": pool, "ref": reference_answers(client, "default", pool)},
                            "families": []}
    if not families:
        return work
    for index in range(clients):
        plan = family_plan(index)
        ids: Dict[str, str] = {"default": "default"}
        scenes: Dict[str, Any] = {}
        made: List[str] = []
        try:
            base = create_base(client, plan)
            if not base.created:
                raise RuntimeError(f"client {index}'s scene already existed: family contents must be unique")
            ids["base"] = base.scene_id
            made.append(base.scene_id)
            for step in plan["updates"]:
                v = apply_update(client, step, ids[step[1]])
                ids[step[0]] = v.scene_id
                made.append(v.scene_id)
            for key in family_keys(plan):
                p = make_pool(rng, info.lower, info.upper, family_sizes)
                scenes[key] = {"pool": p, "ref": reference_answers(client, ids[key], p)}
        finally:
            for sid in reversed(made):
                client.delete_scene(sid)
        if len(set(made)) != len(made):
            raise RuntimeError(f"client {index}'s family has repeated scene ids: {made}")
        work["families"].append({"plan": plan, "ids": ids, "scenes": scenes})
    return work


def cross_check_with_tool(work: Dict[str, Any]) -> Dict[str, Any]:
    """The default scene's reference CLEAR and certified LINK answers against proximity-scene's."""
    pool, ref = work["default"]["pool"], work["default"]["ref"]
    states = np.concatenate(pool["states"])
    want = np.array([a["free"] for a in support.tool_states(states)])
    got = np.concatenate(ref["check_states"])
    state_diff = int(np.count_nonzero(want != got))
    motions = pool["motions"]
    tool = support.tool_motions(motions[:, 0], motions[:, 1], "certified")
    motion_diff = 0
    for r, t in zip(ref["check_motion"], tool):
        expect = (bool(t["free"]), bool(t["undecided"]), float(t["t_free"]),
                  None if t["free"] else float(t["t_collide"]), support.contact_names(t["contact"]))
        if compare(r, expect) == "different":
            motion_diff += 1
    return {"states": int(len(states)), "states_free": int(got.sum()), "state_mismatches": state_diff,
            "motions": int(len(motions)), "motions_free": int(sum(r[0] for r in ref["check_motion"])),
            "motion_mismatches": motion_diff}


# ---- one client -------------------------------------------------------------------------------------

class Recorder:
    """Latencies, errors and mismatches of one client."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.latency: Dict[str, List[float]] = {k: [] for k in KINDS}
        self.errors = 0
        self.error_samples: List[str] = []
        self.mismatches = 0
        self.mismatch_samples: List[str] = []
        self.float_jitter = 0
        self.checked = 0
        self.stopped_by: Optional[str] = None
        self.stop_calls = 0

    def error(self, what: str) -> None:
        self.errors += 1
        if len(self.error_samples) < 10:
            self.error_samples.append(f"client {self.index}: {what}")

    def mismatch(self, what: str) -> None:
        self.mismatches += 1
        if len(self.mismatch_samples) < 10:
            self.mismatch_samples.append(f"client {self.index}: {what}")

    def result(self) -> Dict[str, Any]:
        return {"index": self.index, "latency": {k: v for k, v in self.latency.items()}, "errors": self.errors,
                "error_samples": self.error_samples, "mismatches": self.mismatches,
                "mismatch_samples": self.mismatch_samples, "float_jitter": self.float_jitter,
                "checked": self.checked, "stopped_by": self.stopped_by, "stop_calls": self.stop_calls}


class _Stop(Exception):
    """The client's loop ends: time or call budget used up, or a status in `stop_codes`."""


def run_client(index: int, target: str, work: Dict[str, Any], seconds: float, seed: int,
               family: Optional[Dict[str, Any]] = None, max_calls: Optional[int] = None,
               go: Any = None, ready: Optional[Callable[[], None]] = None, stop_codes: Sequence[str] = (),
               call_timeout: float = 60.0) -> Dict[str, Any]:
    """One client's loop: cycles of scene operations with random queries between them, every answer and
    scene id compared with the reference. A call failing with a status named in `stop_codes` (for
    example "UNAVAILABLE" while the daemon drains) ends the loop and is not an error."""
    rec = Recorder(index)
    rng = np.random.default_rng([seed, index])
    budget = int(max_calls if max_calls is not None else max(1000, seconds * 4000))
    calls = 0
    with Client(target, timeout=call_timeout, options=CHANNEL_OPTIONS, auto_restore=False) as client:
        client.wait_until_serving(timeout=30)
        if ready is not None:
            ready()
        if go is not None:
            go.wait()
        end = time.monotonic() + seconds

        def timed(kind: str, fn: Callable[[], Any]) -> Any:
            nonlocal calls
            if calls >= budget or time.monotonic() >= end or rec.stopped_by is not None:
                raise _Stop()
            calls += 1
            t0 = time.perf_counter()
            try:
                out = fn()
            except ProximityError as e:
                if e.code.name in stop_codes:
                    rec.stopped_by = e.code.name
                    rec.stop_calls += 1
                    raise _Stop() from None
                raise
            rec.latency[kind].append(time.perf_counter() - t0)
            return out

        def query(alive: Dict[str, str]) -> None:
            key = list(alive)[int(rng.integers(len(alive)))]
            kind = QUERY_KINDS[int(rng.choice(len(QUERY_KINDS), p=QUERY_WEIGHTS))]
            scene = work["default"] if key == "default" else family["scenes"][key]  # type: ignore[index]
            requests = pool_requests(scene["pool"], kind)
            i = int(rng.integers(len(requests)))
            try:
                got = timed(kind, lambda: ask(client, alive[key], kind, requests[i]))
            except ProximityError as e:
                rec.error(f"{kind} #{i} on {key}: {e}")
                return
            want = scene["ref"][kind][i]
            rec.checked += 1
            if kind == "check_states":
                diff = np.flatnonzero(got != want)
                if len(diff):
                    rec.mismatch(f"check_states #{i} on {key}: {len(diff)} of {len(want)} states differ "
                                 f"(first row {int(diff[0])})")
                return
            c = compare(got, want)
            if c == "different":
                rec.mismatch(f"{kind} #{i} on {key}: got {got!r}, reference {want!r}")
            elif c == "close":
                rec.float_jitter += 1

        def queries(alive: Dict[str, str]) -> None:
            for _ in range(QUERIES_PER_STEP):
                query(alive)

        try:
            while True:
                alive: Dict[str, str] = {"default": "default"}
                if family is None:
                    queries(alive)
                    continue
                plan, ids = family["plan"], family["ids"]
                try:
                    try:
                        base = timed("create_scene", lambda: create_base(client, plan))
                    except ProximityError as e:
                        rec.error(f"create_scene: {e}")
                        continue
                    alive["base"] = base.scene_id
                    if base.scene_id != ids["base"]:
                        rec.mismatch(f"create_scene gave id {base.scene_id}, reference {ids['base']}")
                        continue
                    queries(alive)
                    for step in plan["updates"]:
                        key, parent = step[0], step[1]
                        try:
                            v = timed("update_world", lambda: apply_update(client, step, alive[parent]))
                        except ProximityError as e:
                            rec.error(f"update_world {key}: {e}")
                            break
                        alive[key] = v.scene_id
                        if v.scene_id != ids[key]:
                            rec.mismatch(f"update_world {key} gave id {v.scene_id}, reference {ids[key]}")
                            break
                        queries(alive)
                finally:
                    # Delete in a random order, querying what is left in between; on the way out (time
                    # is up, or the daemon is going away) the deletes are still attempted.
                    mine = [k for k in alive if k != "default"]
                    rng.shuffle(mine)
                    for key in mine:
                        sid = alive.pop(key)
                        t0 = time.perf_counter()
                        try:
                            client.delete_scene(sid, timeout=call_timeout)
                            rec.latency["delete_scene"].append(time.perf_counter() - t0)
                            calls += 1
                        except ProximityError as e:
                            if e.code.name in stop_codes:
                                rec.stopped_by = rec.stopped_by or e.code.name
                                rec.stop_calls += 1
                            else:
                                rec.error(f"delete_scene {key}: {e}")
                        if time.monotonic() < end and calls < budget and rec.stopped_by is None:
                            try:
                                queries(alive)
                            except _Stop:
                                pass  # the remaining deletes still go out
        except _Stop:
            pass
        except Exception as e:  # noqa: BLE001 - any other failure is an error of this client, reported
            rec.error(f"{type(e).__name__}: {e}")
    return rec.result()


def _process_main(args: Dict[str, Any], go: Any, queue: Any) -> None:
    try:
        queue.put(run_client(go=go, ready=lambda: queue.put({"ready": args.get("index")}), **args))
    except BaseException as e:  # noqa: BLE001 - reported to the parent instead of lost
        queue.put({"index": args.get("index"), "fatal": f"{type(e).__name__}: {e}"})


# ---- the daemon's resources -------------------------------------------------------------------------

def proc_status(pid: int) -> Dict[str, float]:
    """VmRSS and VmHWM (MiB), thread count and open descriptors of a process."""
    out: Dict[str, float] = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024.0
            elif key == "Threads":
                out[key] = int(value)
    try:
        out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        out["fds"] = -1
    return out


class Sampler(threading.Thread):
    """Samples a process's /proc status every `interval` seconds: (seconds since `t0`, RSS MiB, threads,
    descriptors)."""

    def __init__(self, pid: int, interval: float) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.t0 = time.monotonic()
        self.samples: List[Tuple[float, float, int, int]] = []
        self._stop_event = threading.Event()

    def sample(self) -> None:
        try:
            s = proc_status(self.pid)
        except OSError:
            return
        self.samples.append((round(time.monotonic() - self.t0, 2), round(s["VmRSS"], 2), int(s["Threads"]),
                             int(s["fds"])))

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            self.sample()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=5)


def rss_verdict(samples: Sequence[Tuple[float, float, int, int]], start: float, seconds: float) -> Dict[str, Any]:
    """The RSS criterion (see the module's doc) over samples taken `start` .. `start + seconds`."""
    def window(a: float, b: float) -> List[float]:
        return [s[1] for s in samples if start + a * seconds <= s[0] <= start + b * seconds]

    base = window(RSS_WARMUP, RSS_WARMUP + RSS_WINDOW)
    last = window(1.0 - RSS_WINDOW, 1.0)
    after = [(s[0], s[1]) for s in samples if start + RSS_WARMUP * seconds <= s[0] <= start + seconds]
    out: Dict[str, Any] = {
        "criterion": f"median RSS over the last {RSS_WINDOW:.0%} of the concurrent phase <= {RSS_RATIO} x the "
                     f"median over the {RSS_WINDOW:.0%} after a {RSS_WARMUP:.0%} warm-up + {RSS_SLACK_MIB:g} MiB",
        "samples_in_baseline": len(base), "samples_in_final": len(last)}
    if not base or not last:
        out.update(ok=False, why="too few samples")
        return out
    baseline, final = float(np.median(base)), float(np.median(last))
    limit = RSS_RATIO * baseline + RSS_SLACK_MIB
    phase = [s[1] for s in samples if start <= s[0] <= start + seconds]
    slope = 0.0
    if len(after) >= 3:
        t = np.array([a[0] for a in after])
        r = np.array([a[1] for a in after])
        slope = float(np.polyfit(t, r, 1)[0]) * 60.0
    out.update(baseline_mib=round(baseline, 2), final_mib=round(final, 2), limit_mib=round(limit, 2),
               min_mib=round(min(phase), 2), max_mib=round(max(phase), 2),
               slope_after_warmup_mib_per_min=round(slope, 3), ok=final <= limit)
    return out


# ---- the run ----------------------------------------------------------------------------------------

def _percentiles(values: Sequence[float]) -> Dict[str, Any]:
    if not values:
        return {"calls": 0}
    a = np.asarray(values) * 1e3
    return {"calls": int(len(a)), "p50_ms": round(float(np.percentile(a, 50)), 3),
            "p90_ms": round(float(np.percentile(a, 90)), 3), "p99_ms": round(float(np.percentile(a, 99)), 3),
            "max_ms": round(float(a.max()), 3)}


def server_failures(daemon: support.Daemon) -> Dict[str, Dict[str, float]]:
    """Calls the daemon's metrics count as failed (any code but OK), by method and code."""
    samples = support.metric_samples(support.fetch(daemon.metrics_url))
    out: Dict[str, Dict[str, float]] = {}
    for s in samples.get("grpc_server_handled_total", []):
        code = s.labels.get("grpc_code", "")
        if code.replace("_", "").lower() != "ok" and s.value:
            out.setdefault(s.labels.get("grpc_method", "?"), {})[code] = s.value
    return out


def _binary(path: Path) -> Dict[str, Any]:
    """Which daemon ran: its path, modification time and SHA-256 (a build tree may be rebuilt between runs)."""
    import hashlib
    try:
        data = Path(path).read_bytes()
        built = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(Path(path).stat().st_mtime))
    except OSError:
        return {"path": str(path)}
    return {"path": str(path), "modified": built, "sha256": hashlib.sha256(data).hexdigest()}


def _machine() -> Dict[str, Any]:
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "-C", str(support.REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    return {"cpu": model, "cpus": os.cpu_count(), "python": platform.python_version(), "commit": commit,
            "load_average_before": [round(x, 2) for x in os.getloadavg()],
            "date": time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())}


def run(seconds: float, clients: int = 8, seed: int = 20261125, out: Optional[Path] = None,
        malloc_arena_max: Optional[int] = None, sample_interval: Optional[float] = None,
        log: Callable[[str], None] = print) -> Dict[str, Any]:
    """The whole soak; returns the report (also written to `out` as JSON) with ``passed`` and
    ``failures``. `malloc_arena_max` caps glibc's malloc arenas in the daemon (MALLOC_ARENA_MAX; None: the
    default of 8 per core)."""
    env = None if malloc_arena_max is None else {"MALLOC_ARENA_MAX": str(int(malloc_arena_max))}
    report: Dict[str, Any] = {"seconds": seconds, "clients": clients, "seed": seed, "machine": _machine(),
                              "daemon": _binary(support.DAEMON), "daemon_args": "defaults (worker threads: CPU count)",
                              "daemon_env": env or {}}
    interval = sample_interval or max(0.25, min(2.0, seconds / 150.0))
    daemon = support.Daemon(env=env).start()
    failures: List[str] = []
    try:
        sampler = Sampler(daemon.proc.pid, interval)
        sampler.sample()
        with daemon.client(options=CHANNEL_OPTIONS) as client:
            client.wait_until_serving()
            initial_scenes = sorted(s.scene_id for s in client.list_scenes())
            t = time.monotonic()
            work = build_workload(client, clients, seed)
            report["reference_seconds"] = round(time.monotonic() - t, 2)
            log(f"reference phase: {report['reference_seconds']} s; "
                f"{len(work['families'])} client scene families of {len(family_keys(family_plan(0)))} scenes")
            check = cross_check_with_tool(work)
            report["reference_vs_in_process"] = check
            if check["state_mismatches"] or check["motion_mismatches"]:
                failures.append(f"the daemon's reference answers differ from proximity-scene's: {check}")
            sampler.start()

            ctx = multiprocessing.get_context("spawn")
            go = ctx.Event()
            queue = ctx.Queue()
            procs = []
            early: List[Dict[str, Any]] = []
            for i in range(clients):
                args = {"index": i, "target": daemon.target, "work": {"default": work["default"]}, "seconds": seconds, "seed": seed,
                        "family": work["families"][i]}
                procs.append(ctx.Process(target=_process_main, args=(args, go, queue), daemon=True))
            for p in procs:
                p.start()
            # Every client connected and serving before the clock starts.
            ready = 0
            deadline = time.monotonic() + 120
            while ready < clients and time.monotonic() < deadline:
                try:
                    msg = queue.get(timeout=1.0)
                except Exception:  # noqa: BLE001 - queue.Empty: keep waiting
                    continue
                if "ready" in msg:
                    ready += 1
                else:
                    early.append(msg)
            if ready < clients:
                failures.append(f"only {ready} of {clients} clients connected")
            phase_start = time.monotonic() - sampler.t0
            go.set()
            log(f"{clients} clients running for {seconds:g} s")
            results: List[Dict[str, Any]] = list(early)
            wait_until = time.monotonic() + seconds + 120
            while len(results) < clients and time.monotonic() < wait_until:
                try:
                    results.append(queue.get(timeout=1.0))
                except Exception:  # noqa: BLE001 - queue.Empty: keep waiting
                    if not any(p.is_alive() for p in procs) and queue.empty():
                        break
            phase_seconds = time.monotonic() - sampler.t0 - phase_start
            for p in procs:
                p.join(timeout=10)
                if p.is_alive():
                    p.kill()
            sampler.sample()
            sampler.stop()
            if len(results) < clients:
                failures.append(f"only {len(results)} of {clients} clients reported")

            report["phase_seconds"] = round(phase_seconds, 2)
            fatal = [r["fatal"] for r in results if "fatal" in r]
            results = [r for r in results if "fatal" not in r]
            for f in fatal:
                failures.append(f"a client died: {f}")
            calls = {k: _percentiles([x for r in results for x in r["latency"][k]]) for k in KINDS}
            report["calls"] = calls
            report["total_calls"] = sum(c["calls"] for c in calls.values())
            report["calls_per_second"] = round(report["total_calls"] / max(phase_seconds, 1e-9), 1)
            report["answers_checked"] = sum(r["checked"] for r in results)
            report["errors"] = sum(r["errors"] for r in results)
            report["error_samples"] = [s for r in results for s in r["error_samples"]][:20]
            report["mismatches"] = sum(r["mismatches"] for r in results)
            report["mismatch_samples"] = [s for r in results for s in r["mismatch_samples"]][:20]
            report["float_jitter"] = sum(r["float_jitter"] for r in results)
            report["per_client_calls"] = [sum(len(v) for v in r["latency"].values()) for r in results]
            if report["errors"]:
                failures.append(f"{report['errors']} failed calls, e.g. {report['error_samples'][:3]}")
            if report["mismatches"]:
                failures.append(f"{report['mismatches']} answers differ from the reference, "
                                f"e.g. {report['mismatch_samples'][:3]}")
            for k in KINDS:
                if calls[k]["calls"] == 0:
                    failures.append(f"no {k} call was made")

            rss = rss_verdict(sampler.samples, phase_start, phase_seconds)
            report["rss"] = rss
            if not rss.get("ok"):
                failures.append(f"RSS grew: {rss}")
            report["trace"] = {"columns": ["seconds", "rss_mib", "threads", "fds"],
                               "phase_start": round(phase_start, 2), "samples": sampler.samples}
            status = proc_status(daemon.proc.pid)
            report["rss_peak_mib"] = round(status["VmHWM"], 2)

            # Afterwards: the scenes the daemon started with and no others, no failed call in its own
            # counts, and still the reference answers.
            left = sorted(s.scene_id for s in client.list_scenes())
            report["scenes_left"] = len(left)
            if left != initial_scenes:
                failures.append(f"scenes left behind: {sorted(set(left) - set(initial_scenes))}, "
                                f"missing: {sorted(set(initial_scenes) - set(left))}")
            report["server_failed_calls"] = server_failures(daemon)
            if report["server_failed_calls"]:
                failures.append(f"the daemon counted failed calls: {report['server_failed_calls']}")
            default = work["default"]
            after = {kind: [ask(client, "default", kind, req) for req in pool_requests(default["pool"], kind)[:4]]
                     for kind in QUERY_KINDS}
            stale = []
            for kind in QUERY_KINDS:
                for i, got in enumerate(after[kind]):
                    want = default["ref"][kind][i]
                    same = bool(np.array_equal(got, want)) if kind == "check_states" else \
                        compare(got, want) != "different"
                    if not same:
                        stale.append(f"{kind} #{i}")
            if stale:
                failures.append(f"after the soak the daemon answers differently: {stale}")
            if client.health() != "SERVING":
                failures.append("the daemon is not SERVING after the soak")
        t = time.monotonic()
        rc = daemon.terminate(timeout=30)
        report["sigterm_exit_code"] = rc
        report["sigterm_seconds"] = round(time.monotonic() - t, 2)
        if rc != 0:
            failures.append(f"proximityd exited {rc} after SIGTERM")
    finally:
        daemon.kill()
    report["failures"] = failures
    report["passed"] = not failures
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(json.dumps(report, indent=1) + "\n")
    return report


def summary(report: Dict[str, Any]) -> str:
    lines = [f"soak: {report['clients']} clients, {report.get('phase_seconds', 0):g} s, "
             f"{report.get('total_calls', 0)} calls ({report.get('calls_per_second', 0)}/s), "
             f"{report.get('answers_checked', 0)} answers checked"]
    for k, c in report.get("calls", {}).items():
        if c["calls"]:
            lines.append(f"  {k:15s} {c['calls']:8d} calls  p50 {c['p50_ms']:9.3f} ms  p99 {c['p99_ms']:9.3f} ms")
    rss = report.get("rss", {})
    lines.append(f"  RSS MiB: baseline {rss.get('baseline_mib')}, final {rss.get('final_mib')}, limit "
                 f"{rss.get('limit_mib')}, range {rss.get('min_mib')}..{rss.get('max_mib')}, slope "
                 f"{rss.get('slope_after_warmup_mib_per_min')} MiB/min")
    lines.append(f"  errors {report.get('errors')}, mismatches {report.get('mismatches')}, "
                 f"float jitter {report.get('float_jitter')}, SIGTERM exit {report.get('sigterm_exit_code')}")
    lines.append("  PASSED" if report["passed"] else "  FAILED:\n    " + "\n    ".join(report["failures"]))
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="length of the concurrent phase")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seed", type=int, default=20261125)
    ap.add_argument("--out", type=Path, help="write the report here as JSON")
    ap.add_argument("--malloc-arena-max", type=int, help="MALLOC_ARENA_MAX for the daemon (default: glibc's)")
    args = ap.parse_args(argv)
    report = run(args.seconds, clients=args.clients, seed=args.seed, out=args.out,
                 malloc_arena_max=args.malloc_arena_max)
    print(summary(report))
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
