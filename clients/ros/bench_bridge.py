#!/usr/bin/python3
"""Bridge overhead: state-validity round trips per second through rospy (persistent service proxy)
beside the same CheckState calls over the Python gRPC client, and ~check_states throughput for 10,000
states beside one direct CheckStates batch. Starts its own roscore, proximityd (built-in scene) and
node; prints one JSON object per case.

    PROXIMITY_BUILD_DIR=build /usr/bin/python3 clients/ros/bench_bridge.py [--calls 2000] [--states 10000]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))
import rosenv  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--states", type=int, default=10000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
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
        for name, call in (("grpc_check_state", lambda i: client.check_state(states[i])),
                           ("grpc_check_state_and_distance", lambda i: (client.check_state(states[i]).free and
                                                                        client.distance(states[i], rel_err=0.05))),
                           ("rospy_check_state_validity", lambda i: srv["validity"](msgs[i], ""))):
            t0 = time.perf_counter()
            for i in range(args.calls):
                call(i)
            dt = time.perf_counter() - t0
            print(json.dumps({"suite": "ros_bridge", "case": name, "calls": args.calls,
                              "calls_per_s": round(args.calls / dt, 1), "us_per_call": round(1e6 * dt / args.calls, 1)}))
        batch = info.sample(args.states, rng)
        batch_msgs = [rosenv.robot_state(rosenv.KR5_JOINTS, q) for q in batch]
        for name, call in (("grpc_check_states", lambda: client.check_states(batch, include_contacts=True)),
                           ("rospy_check_states", lambda: srv["states"](batch_msgs, ""))):
            call()  # warm
            t0 = time.perf_counter()
            call()
            dt = time.perf_counter() - t0
            print(json.dumps({"suite": "ros_bridge", "case": name, "states": args.states,
                              "states_per_s": round(args.states / dt, 1), "seconds": round(dt, 4)}))
        # The states are within the limits, so the bridge's valid is the client's free.
        if not (np.array(srv["states"](batch_msgs, "").valid) == client.check_states(batch)).all():
            raise SystemExit("bench_bridge: the bridge and the client disagree")
    finally:
        node.stop()
        daemon.kill()
        master.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
