#!/usr/bin/python3
"""Bridge overhead: state-validity round trips per second through rospy (persistent service proxy)
beside the same CheckState calls over the Python gRPC client, and ~check_states throughput for 10,000
states beside one direct CheckStates batch; then ~clearance's publishing rate for a Panda (the
MotionBenchMaker Panda of ../shared/data, 7 joints) among 10 objects fed /joint_states at 1 kHz along a
trajectory of 1e-3 rad steps (the tracked pairs of one track query per state), beside the same track
queries from the Python client alone. Starts its own roscore, proximityd (built-in scene) and nodes;
prints one JSON object per case.

    PROXIMITY_BUILD_DIR=build /usr/bin/python3 clients/ros/bench_bridge.py [--calls 2000] [--states 10000]
        [--clearance-seconds 5] [--rate 1000] [--cases validity,states,clearance]

The clearance case is skipped, saying so, when the Panda is absent (PROXIMITY_SHARED_DATA: another
../shared/data).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, List

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
import rosenv  # noqa: E402


SHARED = Path(os.environ.get("PROXIMITY_SHARED_DATA", rosenv.REPO.parent / "shared" / "data"))
PANDA = SHARED / "robots" / "mbm_panda"


def _objects(rng: Any, count: int = 10) -> List[Any]:
    """``count`` seeded CollisionObjects (boxes, cylinders, spheres) around a Panda's base, within about 1.3
    times its reach (0.855 m) on the upper side, sized like the track suite's world of 10 (6% of the reach)."""
    import numpy as np
    from geometry_msgs.msg import Pose
    from shape_msgs.msg import SolidPrimitive
    from proximity_msgs.msg import CollisionObject
    reach, size = 0.855, 0.06 * 0.855
    out = []
    for i in range(count):
        a, b, c = size * (0.5 + rng.random(3))
        kind = i % 3
        prim = SolidPrimitive(type=[SolidPrimitive.BOX, SolidPrimitive.CYLINDER, SolidPrimitive.SPHERE][kind],
                              dimensions=[[2 * a, 2 * b, 2 * c], [2 * b, 0.6 * a], [a]][kind])
        while True:
            d = rng.uniform(-1.0, 1.0, 3)
            if 0.1 < np.linalg.norm(d) <= 1.0 and d[2] >= -0.2 * np.linalg.norm(d):
                break
        lo = 0.15 + 2 * size
        r = lo + rng.random() * max(0.0, 1.3 * reach - lo)
        p = 0.333 * np.array([0.0, 0.0, 1.0]) + r * d / np.linalg.norm(d)  # about the shoulder
        pose = Pose()
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in p)
        pose.orientation.w = 1.0
        identity = Pose()
        identity.orientation.w = 1.0
        out.append(CollisionObject(id=f"obj{i}", pose=pose, primitives=[prim], primitive_poses=[identity],
                                   operation=CollisionObject.ADD))
    return out


def _trajectory(client: Any, info: Any, rng: Any, legs: int, frames: int, step: float = 1e-3) -> Any:
    """Legs from free states, each joint moving at most ``step`` a frame, turned back at its limits."""
    import numpy as np
    out = []
    lower, upper = info.lower, info.upper
    while len(out) < legs * frames:
        starts = info.sample(50, rng)
        q = starts[client.check_states(starts, scene=info.scene_id)][0].copy()
        v = rng.uniform(-1.0, 1.0, info.dof)
        v *= step / np.abs(v).max()
        for _ in range(frames):
            out.append(q.copy())
            turn = (q + v > upper) | (q + v < lower)
            v[turn] = -v[turn]
            q += v
    return np.array(out)


def clearance_case(master: Any, daemon: Any, client: Any, args: argparse.Namespace) -> None:
    """~clearance's rate for a Panda among 10 objects, /joint_states published at ``args.rate`` Hz."""
    import numpy as np
    import rospy
    from sensor_msgs.msg import JointState
    from proximity_msgs.msg import Clearance, CollisionObject, SceneStatus
    if not (PANDA / "panda.urdf").is_file():
        print(f"bench_bridge: clearance case skipped: {PANDA / 'panda.urdf'} is absent", file=sys.stderr)
        print(json.dumps({"suite": "ros_bridge", "case": "rospy_clearance_panda", "skipped": f"{PANDA} is absent"}))
        return
    node = rosenv.BridgeProcess(master, name="panda_bridge", target=daemon.target, params={
        "robot": "files", "urdf_file": str(PANDA / "panda.urdf"), "srdf_file": str(PANDA / "panda.srdf"),
        "package_dirs": f"meshes={PANDA / 'meshes'}"})
    try:
        node.wait_ready()
        rng = np.random.default_rng(args.seed + 7)
        status = rosenv.Latest(node.service("scene"), SceneStatus)
        try:
            status.wait(lambda m: bool(m.scene_id))
        except AssertionError:
            raise SystemExit(f"bench_bridge: the Panda bridge has no scene:\n{node.output()}") from None
        objects = rospy.Publisher("/collision_object", CollisionObject, queue_size=100)
        assert rosenv.eventually(lambda: objects.get_num_connections() > 0, 20)
        for o in _objects(rng):
            objects.publish(o)
        m = status.wait(lambda m: len(m.object_ids) == 10, 60)
        info = client.get_scene(m.scene_id)
        names = list(info.joint_names)
        frames = int(args.clearance_seconds * args.rate)
        track = _trajectory(client, info, rng, 5, max(1, frames // 5))
        # The client alone: the same track queries (the bridge's options) one after the other.
        t0 = time.perf_counter()
        pairs = 0
        for q in track[: min(len(track), 2000)]:
            pairs += len(client.track(q, scene=info.scene_id, horizon=0.25, max_pairs=8, rel_err=0.05).pairs)
        direct = min(len(track), 2000) / (time.perf_counter() - t0)
        client.end_track(info.scene_id)
        clear = rosenv.Latest(node.service("clearance"), Clearance)
        pub = rospy.Publisher("/joint_states", JointState, queue_size=100)
        assert rosenv.eventually(lambda: pub.get_num_connections() > 0 and clear.sub.get_num_connections() > 0, 20)
        # Warm up (the bridge's session opens at its first state), then publish at the rate.
        js = rosenv.joint_state(names, track[0])
        js.header.stamp = rospy.Time(1, 0)
        pub.publish(js)
        clear.wait(lambda m: m.header.stamp == rospy.Time(1, 0), 60)
        first, dropped0 = clear.count, clear.msg.dropped
        period = 1.0 / args.rate
        start = time.perf_counter()
        for i, q in enumerate(track):
            js = rosenv.joint_state(names, q)
            js.header.stamp = rospy.Time(2, i * 1000)
            delay = start + i * period - time.perf_counter()
            if delay > 0:
                time.sleep(delay)  # not a busy wait: the machine's cores are the bridge's and proximityd's
            pub.publish(js)
        sent = time.perf_counter() - start
        last = rospy.Time(2, (len(track) - 1) * 1000)
        clear.wait(lambda m: m.header.stamp == last, 60)
        elapsed = time.perf_counter() - start
        got = clear.all[first:]
        stamps = [m.header.stamp for m in got]
        assert stamps == sorted(stamps)
        with_pairs = sum(1 for m in got if m.pairs)
        print(json.dumps({
            "suite": "ros_bridge", "case": "rospy_clearance_panda", "robot": info.robot_name, "dof": info.dof,
            "objects": len(info.object_ids), "states_sent": len(track), "input_hz": round(len(track) / sent, 1),
            "clearance_messages": len(got), "clearance_hz": round(len(got) / elapsed, 1),
            "dropped": int(got[-1].dropped - dropped0), "messages_with_pairs": with_pairs,
            "pairs_per_message": round(sum(len(m.pairs) for m in got) / max(1, len(got)), 2),
            "target_hz": 500, "client_track_hz": round(direct, 1),
            "client_pairs_per_query": round(pairs / min(len(track), 2000), 2)}))
        clear.close()
        status.close()
        objects.unregister()
        pub.unregister()
    finally:
        node.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--states", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--clearance-seconds", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=1000.0, help="/joint_states rate of the clearance case (Hz)")
    ap.add_argument("--cases", default="validity,states,clearance")
    args = ap.parse_args()
    cases = set(args.cases.split(","))
    import numpy as np
    master = rosenv.RosMaster().start()
    daemon = rosenv.Daemon().start()
    node = rosenv.BridgeProcess(master, target=daemon.target)
    try:
        rosenv.init_client_node(master)
        node.wait_ready()
        srv = rosenv.proxies(node)
        client = daemon.client()
        info = client.get_scene("default")
        rng = np.random.default_rng(args.seed)
        states = info.sample(args.calls, rng)
        msgs = [rosenv.robot_state(rosenv.KR5_JOINTS, q) for q in states]
        srv["validity"](msgs[0], "")  # connect
        for name, call in (() if "validity" not in cases else (
                           ("grpc_check_state", lambda i: client.check_state(states[i])),
                           ("grpc_check_state_and_distance", lambda i: (client.check_state(states[i]).free and
                                                                        client.distance(states[i], rel_err=0.05))),
                           ("rospy_check_state_validity", lambda i: srv["validity"](msgs[i], "")))):
            t0 = time.perf_counter()
            for i in range(args.calls):
                call(i)
            dt = time.perf_counter() - t0
            print(json.dumps({"suite": "ros_bridge", "case": name, "calls": args.calls,
                              "calls_per_s": round(args.calls / dt, 1), "us_per_call": round(1e6 * dt / args.calls, 1)}))
        batch = info.sample(args.states if "states" in cases else 0, rng)
        batch_msgs = [rosenv.robot_state(rosenv.KR5_JOINTS, q) for q in batch]
        for name, call in (() if "states" not in cases else (
                           ("grpc_check_states", lambda: client.check_states(batch, include_contacts=True)),
                           ("rospy_check_states", lambda: srv["states"](batch_msgs, "")))):
            call()  # warm
            t0 = time.perf_counter()
            call()
            dt = time.perf_counter() - t0
            print(json.dumps({"suite": "ros_bridge", "case": name, "states": args.states,
                              "states_per_s": round(args.states / dt, 1), "seconds": round(dt, 4)}))
        # The states are within the limits, so the bridge's valid is the client's free.
        if "states" in cases and not (np.array(srv["states"](batch_msgs, "").valid) == client.check_states(batch)).all():
            raise SystemExit("bench_bridge: the bridge and the client disagree")
        if "clearance" in cases:
            node.stop()  # the KR5 node would read the Panda's /joint_states too
            clearance_case(master, daemon, client, args)
    finally:
        node.stop()
        daemon.kill()
        master.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
