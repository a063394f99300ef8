"""``proximity``: the command-line client of proximityd.

    proximity info [--scene ID]
    proximity validate FILE... [--scene ID] [--mode certified|discrete] [--resolution R] [--json]
    proximity check-states FILE [--scene ID] [--json]
    proximity plan --start=Q (--goal=Q | --goal-pose X,Y,Z[,QX,QY,QZ,QW] --link NAME) [--planner P] [--time-limit S]
                   [--seed N] [--group G] [--json] [--out PATH.json|.csv|.npy]
    proximity ik --link NAME --pose X,Y,Z[,QX,QY,QZ,QW] [--seed-state=Q] [--group G] [--allow-collisions] [--json]
    proximity poses --state=Q [--scene ID] [--json]
    proximity export (--state=Q | --path FILE) --out FILE.glb [--scene ID] [--ghosts N] [--json]
    proximity scene create --urdf FILE [--srdf FILE] [--package NAME=DIR]... [--name NAME] [--json]
    proximity scene name NAME [--scene ID] [--remove] | proximity scene list
    proximity scene cloud ID FILE --radius R [--voxel-size V] [--frame LINK] [--state=Q] [--self-filter PAD] [--replace]
    proximity contacts --state=Q [--scene ID] [--max-pairs N] [--json]
    proximity signed-distance NAME NAME --state=Q [--scene ID] [--json]

Exit status: 0 when every path (state) is valid (free) or the plan is solved, 1 when any is not (or no
path was found; export: when the state or path collides, the file is written all the same), 2 on a bad
file or argument or a failed request (the gRPC status and message go to stderr).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import __version__, geometry
from .client import DEFAULT_TARGET, Client
from .errors import ProximityError, ProximityWarning
from .gltf import Contact, build_glb
from .kinematics import read_joint_limits, time_from_start
from .pathfiles import PathFileError, PathSpec, read_paths, read_states, write_path
from .pointfiles import read_points
from .results import PLANNERS, Pair, PathResult, PlanResult, SceneInfo

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_ERROR = 2


def _num(x: float) -> Optional[float]:
    return x if math.isfinite(x) else None


def _pair_json(p: Optional[Pair]) -> Optional[Dict[str, Any]]:
    if p is None:
        return None
    return {"robot": p.robot, "other": p.other, "self": p.self_collision, "link": p.link, "other_link": p.other_link}


def _scene_json(s: SceneInfo) -> Dict[str, Any]:
    return {
        "scene_id": s.scene_id, "version": s.version, "parent_scene_id": s.parent_scene_id, "robot": s.robot_name,
        "joints": [{"name": l.joint_name, "lower": _num(l.lower), "upper": _num(l.upper), "continuous": l.continuous,
                    "prismatic": l.prismatic, "velocity": l.velocity} for l in s.limits],
        "joint_names": s.joint_names, "links": s.link_names, "objects": s.object_ids,
        "attached_objects": s.attached_object_ids, "named_states": s.named_states, "triangles": s.triangles,
        "names": s.names, "warnings": s.warnings,
        "groups": [{"name": g.name, "joints": g.joints, "chains": [list(c) for c in g.chains],
                    "member_joints": g.member_joints, "links": g.links, "subgroups": g.subgroups} for g in s.groups],
        "end_effectors": [{"name": e.name, "group": e.group, "parent_link": e.parent_link,
                           "parent_group": e.parent_group} for e in s.end_effectors],
        "allowed_pairs": [{"first": p.first, "second": p.second, "reason": p.reason, "srdf_reason": p.srdf_reason}
                          for p in s.allowed_pairs],
    }


def _pair_reason(p: Any) -> str:
    """An allowed pair's reason as one word or two: adjacent, rigid, user, srdf (Never)."""
    return f"srdf ({p.srdf_reason})" if p.reason == "srdf" and p.srdf_reason else p.reason


def _print_scene(s: SceneInfo, out: Any) -> None:
    print(f"scene {s.scene_id} (version {s.version}{', from ' + s.parent_scene_id if s.parent_scene_id else ''})",
          file=out)
    if s.names:
        print(f"  names      {', '.join(s.names)}", file=out)
    print(f"  robot      {s.robot_name}: {s.dof} joints, {len(s.link_names)} links, {s.triangles} triangles", file=out)
    for l in s.limits:
        kind = "continuous" if l.continuous else ("prismatic" if l.prismatic else "revolute")
        unit = "m" if l.prismatic else "rad"
        rng = "unbounded" if l.continuous else f"[{l.lower:+.4f}, {l.upper:+.4f}] {unit}"
        print(f"    {l.joint_name:<24} {kind:<10} {rng}", file=out)
    print(f"  objects    {', '.join(s.object_ids) or '(none)'}", file=out)
    if s.attached_object_ids:
        print(f"  attached   {', '.join(s.attached_object_ids)}", file=out)
    if s.named_states:
        print(f"  states     {', '.join(s.named_states)}", file=out)
    for g in s.groups:
        parts = [f"chain {b} -> {t}" for b, t in g.chains] + [f"group {x}" for x in g.subgroups]
        print(f"  group      {g.name}: {', '.join(g.joints) or '(no joints)'}"
              f"{' (' + '; '.join(parts) + ')' if parts else ''}", file=out)
    for e in s.end_effectors:
        print(f"  effector   {e.name}: group {e.group} on link {e.parent_link}"
              f"{' (parent group ' + e.parent_group + ')' if e.parent_group else ''}", file=out)


def _print_allowed_pairs(s: SceneInfo, out: Any) -> None:
    """Every pair not checked for collision, with its reason."""
    print(f"  allowed    {len(s.allowed_pairs)} pair(s) not checked:", file=out)
    for p in s.allowed_pairs:
        print(f"    {p.first} x {p.second}: {_pair_reason(p)}", file=out)


def _cmd_info(client: Client, args: argparse.Namespace) -> int:
    health = client.health()
    scenes = [client.get_scene(args.scene)] if args.scene else client.list_scenes()
    if args.json:
        print(json.dumps({"target": client.target, "health": health, "scenes": [_scene_json(s) for s in scenes]},
                         indent=2))
        return EXIT_OK
    print(f"server {client.target}: {health}")
    if not args.scene:
        print(f"{len(scenes)} scene(s) loaded")
    for s in scenes:
        _print_scene(s, sys.stdout)
        _print_allowed_pairs(s, sys.stdout)
    return EXIT_OK


def _describe_failure(r: PathResult, mode: str) -> str:
    m = r.motion
    what = f"segment {r.segment} (waypoint {r.segment} -> {r.segment + 1})"
    pair = f": {m.contact}" if m.contact else ""
    if m.undecided:
        return f"{what} undecided (a graze closer than rounding), free for t in [0, {m.t_free:.6f}]{pair}"
    known = "certified free" if mode == "certified" else "sampled free"
    return f"{what} collides at t = {m.t_collide:.6f}, {known} for t in [0, {m.t_free:.6f}]{pair}"


class AmbiguousSceneError(Exception):
    """No scene was named and more than one is loaded."""


def _resolve_scene(client: Client, args: argparse.Namespace) -> SceneInfo:
    """The scene a query command works on: --scene (or $PROXIMITY_SCENE), else the built-in one when it
    is the only scene loaded. With other scenes loaded and none named, which one is meant is not clear:
    refuse and list them rather than answer for the wrong robot."""
    if args.scene is None:
        scenes = client.list_scenes()
        if len(scenes) > 1:
            listed = "\n".join(f"  {s.scene_id}  robot {s.robot_name}, {s.dof} joints"
                                f"{'  (name ' + ', '.join(s.names) + ')' if s.names else ''}" for s in scenes)
            raise AmbiguousSceneError(f"no --scene given (or PROXIMITY_SCENE) and {len(scenes)} scenes are loaded; "
                                      f"name one:\n{listed}")
        args.scene = "default"
    info = client.get_scene(args.scene)
    client.scene = info.scene_id
    return info


def _scene_line(info: SceneInfo) -> str:
    named = f", name {', '.join(info.names)}" if info.names else ""
    return f"scene {info.scene_id} (robot {info.robot_name}, {info.dof} joints{named})"


def _cmd_validate(client: Client, args: argparse.Namespace) -> int:
    specs: List[PathSpec] = []
    for f in args.files:
        specs.extend(read_paths(f))
    info = _resolve_scene(client, args)
    if args.group is not None:
        base = _default_state(info) if args.state is None else _state_vector(client, info, args.state)
        specs = [_in_group(spec, info, args.group, base) for spec in specs]
    for spec in specs:
        _check_against_scene(spec, info)
    args._sources = [s.source for s in specs]
    results = client.validate_paths([s.as_request() for s in specs], mode=args.mode, resolution=args.resolution,
                                    progress=not args.json and not args.no_progress, scene=args.scene)
    n_valid = sum(1 for r in results if r.free)
    if args.json:
        doc = {
            "scene": info.scene_id, "robot": info.robot_name, "mode": args.mode, "group": args.group,
            "resolution": args.resolution, "valid": n_valid, "invalid": len(results) - n_valid,
            "paths": [{
                "source": s.source, "waypoints": int(s.waypoints.shape[0]), "valid": r.free,
                "segment": r.segment if not r.free else None,
                "t_free": r.motion.t_free if not r.free else None,
                "t_collide": r.motion.t_collide if not r.free else None,
                "undecided": r.motion.undecided, "contact": _pair_json(r.motion.contact) if not r.free else None,
                "states": r.stats.states, "distance_queries": r.stats.distance_queries,
            } for s, r in zip(specs, results)],
        }
        print(json.dumps(doc, indent=2))
    else:
        print(_scene_line(info))
        for s, r in zip(specs, results):
            n = s.waypoints.shape[0]
            if r.free:
                print(f"{s.source}: valid ({n} waypoints)")
            else:
                print(f"{s.source}: INVALID: {_describe_failure(r, args.mode)}")
        print(f"{n_valid} of {len(results)} path(s) valid ({args.mode}"
              f"{f', resolution {args.resolution:g}' if args.mode == 'discrete' and args.resolution else ''})")
    return EXIT_OK if n_valid == len(results) else EXIT_INVALID


def _cmd_check_states(client: Client, args: argparse.Namespace) -> int:
    spec = read_states(args.file)
    info = _resolve_scene(client, args)
    if args.group is not None:
        base = _default_state(info) if args.state is None else _state_vector(client, info, args.state)
        spec = _in_group(spec, info, args.group, base)
    _check_against_scene(spec, info)
    r = client.check_states(spec.waypoints, spec.joint_names, include_contacts=True, scene=args.scene)
    n = len(r.free)
    if args.json:
        print(json.dumps({
            "scene": info.scene_id, "robot": info.robot_name,
            "states": n, "free": r.free_count, "colliding": n - r.free_count,
            "free_mask": [bool(x) for x in r.free], "within_limits": [bool(x) for x in r.within_limits],
            "contacts": {str(i): _pair_json(p) for i, p in sorted(r.contacts.items())},
        }, indent=2))
    else:
        print(_scene_line(info))
        print(f"{spec.source}: {n} state(s), {r.free_count} free, {n - r.free_count} colliding")
        shown = 0
        for i in range(n):
            if not r.free[i]:
                if shown == args.show:
                    print(f"  ... ({n - r.free_count - shown} more)")
                    break
                print(f"  state {i}: {r.contacts.get(i, 'collides')}")
                shown += 1
    return EXIT_OK if r.free_count == n else EXIT_INVALID


def _configuration(text: str) -> Union[List[float], Dict[str, float], str]:
    """A configuration on the command line: values in the scene's joint order (``0.1,-0.5,...``), values by
    joint name (``a1=0.1,a2=-0.5,...``), or the name of an SRDF group state."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("empty configuration")
    try:
        if any("=" in t for t in items):
            pairs = [t.split("=", 1) for t in items]
            if any(len(p) != 2 or not p[0].strip() for p in pairs):
                raise ValueError("give every value as name=value")
            return {name.strip(): float(value) for name, value in pairs}
        return [float(t) for t in items]
    except ValueError as e:
        if len(items) == 1 and "=" not in items[0]:
            return items[0]  # a named state
        raise argparse.ArgumentTypeError(f"{text!r} is not a configuration ({e})") from None


def _pose_arg(text: str) -> List[float]:
    """A pose on the command line: x,y,z (any orientation; see --position-only) or x,y,z,qx,qy,qz,qw."""
    try:
        v = [float(t) for t in text.split(",") if t.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not a pose ({e})") from None
    if len(v) not in (3, 7):
        raise argparse.ArgumentTypeError(f"a pose is X,Y,Z or X,Y,Z,QX,QY,QZ,QW; got {len(v)} values")
    if len(v) == 7:
        # A quaternion typed with a few decimals is normalised; one far from unit is a mistake.
        norm = math.sqrt(sum(x * x for x in v[3:]))
        if not abs(norm - 1.0) < 1e-2:
            raise argparse.ArgumentTypeError(f"QX,QY,QZ,QW must be a unit quaternion (norm {norm:.4g})")
        v[3:] = [x / norm for x in v[3:]]
    return v


def _vector_arg(text: str) -> List[float]:
    """Three numbers x,y,z."""
    try:
        v = [float(t) for t in text.split(",") if t.strip()]
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not a vector ({e})") from None
    if len(v) != 3:
        raise argparse.ArgumentTypeError(f"give three values X,Y,Z; got {len(v)}")
    return v


def _goal_from_args(args: argparse.Namespace, pose: List[float]) -> "geometry.pb.PoseGoal":
    """The pose goal the pose flags describe; a 3-value pose constrains the position only."""
    return geometry.pose_goal(args.link, pose, point_offset=args.point_offset,
                              region_size=args.position_tolerance, orientation_tolerance=args.orientation_tolerance,
                              position_only=args.position_only or len(pose) == 3)


def _add_pose_flags(p: argparse.ArgumentParser, required: bool) -> None:
    p.add_argument("--link", required=required, metavar="NAME", help="the link that must reach the pose")
    p.add_argument("--point-offset", type=_vector_arg, default=None, metavar="X,Y,Z",
                   help="the point of the link (link frame, m) that must reach the position (default its origin)")
    p.add_argument("--position-tolerance", type=float, default=None, metavar="M",
                   help="radius of the sphere about the position the point must lie in (default 1e-4 m)")
    p.add_argument("--orientation-tolerance", type=float, default=None, metavar="RAD",
                   help="bound on each axis of the orientation error (default 1e-3 rad)")
    p.add_argument("--position-only", action="store_true", help="any orientation will do")


def _cmd_ik(client: Client, args: argparse.Namespace) -> int:
    info = _resolve_scene(client, args)
    if args.seed_state is not None:
        _warn_unknown_joints(info, args.seed_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # printed below, one line each
        r = client.ik(_goal_from_args(args, args.pose), args.seed_state, group=args.group,
                      avoid_collisions=not args.allow_collisions, search_time=args.search_time,
                      random_seed=args.random_seed, scene=args.scene)
    for w in r.warnings:
        _warn(w)
    if args.json:
        print(json.dumps({"scene": info.scene_id, "robot": info.robot_name, "found": r.found,
                          "joint_names": r.joint_names, "solution": r.solution.tolist(),
                          "position_error": r.position_error, "orientation_error": r.orientation_error,
                          "attempts": r.attempts, "rejected": r.rejected, "message": r.message,
                          "warnings": list(r.warnings)}, indent=2))
    else:
        print(_scene_line(info))
        if r.found:
            free = "collision-free " if not args.allow_collisions else ""
            print(f"{free}solution after {r.attempts} descents: position error {r.position_error:.2e} m, "
                  f"orientation error {r.orientation_error:.2e} rad")
            print(",".join(f"{n}={v:.6f}" for n, v in zip(r.joint_names, r.solution)))
        else:
            print(f"no solution: {r.message}")
    return EXIT_OK if r.found else EXIT_INVALID


def _plan_json(r: PlanResult) -> Dict[str, Any]:
    s = r.stats
    return {
        "outcome": r.outcome, "solved": r.solved, "planner": r.planner, "message": r.message,
        "joint_names": r.joint_names, "waypoints": r.path.tolist(), "time_from_start": r.time_from_start.tolist(),
        "stats": {"plan_time": s.plan_time, "simplify_time": s.simplify_time, "iterations": s.iterations,
                  "state_checks": s.state_checks, "motion_checks": s.motion_checks,
                  "motion_states": s.motion_states, "vertices": s.vertices, "edges": s.edges,
                  "raw_length": s.raw_length, "length": s.length, "raw_waypoints": s.raw_waypoints},
    }


def _warn(message: str) -> None:
    """One warning line on stderr: what was accepted as MoveIt accepts it."""
    print(f"warning: {message}", file=sys.stderr)


def _cmd_plan(client: Client, args: argparse.Namespace) -> int:
    info = _resolve_scene(client, args)
    if (args.goal_pose is None) != (args.link is None):
        raise ValueError("--goal-pose and --link go together")
    goal_pose = _goal_from_args(args, args.goal_pose) if args.goal_pose is not None else None
    joint_limits = read_joint_limits(args.joint_limits) if args.joint_limits else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # printed below, one line each
        r = client.plan(args.start, args.goal, planner=args.planner, time_limit=args.time_limit, seed=args.seed,
                        simplify=not args.no_simplify, mode=args.mode, resolution=args.resolution, range=args.range,
                        max_iterations=args.max_iterations, group=args.group, goal_pose=goal_pose,
                        joint_limits=joint_limits, default_acceleration=args.default_acceleration,
                        velocity_scaling=args.velocity_scaling, acceleration_scaling=args.acceleration_scaling,
                        resample_dt=args.resample_dt, path_tolerance=args.path_tolerance, scene=args.scene)
    for w in r.warnings:
        _warn(w)
    if args.out is not None and r.solved:
        # A format `proximity validate` reads (.json, .csv or .npy), values that read back exactly.
        write_path(args.out, r.joint_names, r.path, r.time_from_start)
    if args.trajectory_out is not None and r.solved and r.trajectory is not None:
        tr = r.trajectory
        with open(args.trajectory_out, "w") as f:
            json.dump({"joint_names": tr.joint_names, "time_from_start": tr.time.tolist(),
                       "positions": tr.positions.tolist(), "velocities": tr.velocities.tolist(),
                       "accelerations": tr.accelerations.tolist(), "waypoint_samples": tr.waypoint_samples,
                       "blended_corners": tr.blended_corners, "max_deviation": tr.max_deviation}, f)
    if args.json:
        doc = _plan_json(r)
        doc["scene"], doc["robot"] = info.scene_id, info.robot_name
        doc["out"] = args.out if args.out is not None and r.solved else None
        doc["group"] = args.group
        doc["goal_pose"] = ({"link": args.link, "pose": args.goal_pose} if args.goal_pose is not None else None)
        doc["warnings"] = list(r.warnings)
        doc["trajectory_duration"] = r.trajectory.duration if r.trajectory is not None else None
        doc["blended_corners"] = r.trajectory.blended_corners if r.trajectory is not None else None
        print(json.dumps(doc, indent=2))
    else:
        print(_scene_line(info))
        s = r.stats
        if r.solved:
            print(f"{r.planner}: solved in {s.plan_time * 1e3:.2f} ms (+{s.simplify_time * 1e3:.2f} ms simplifying), "
                  f"{s.iterations} iterations, {s.state_checks} state checks, {s.motion_checks} {args.mode} and "
                  f"{s.quick_motion_checks} sampled motion checks")
            print(f"path: {r.path.shape[0]} waypoints (raw {s.raw_waypoints}), joint-space length {s.length:.4f} "
                  f"(raw {s.raw_length:.4f})")
            if r.trajectory is not None:
                blends = (f", {r.trajectory.blended_corners} of {max(r.path.shape[0] - 2, 0)} corners blended "
                          f"(at most {r.trajectory.max_deviation:.4g} from the corner)"
                          if args.path_tolerance else "")
                print(f"duration: {r.trajectory.duration:.3f} s time-optimal with acceleration limits "
                      f"({len(r.trajectory.time)} samples{blends})")
            elif len(r.time_from_start):
                print(f"duration: {r.time_from_start[-1]:.3f} s at the joints' velocity limits")
            if args.out is not None:
                print(f"wrote {args.out}")
        else:
            print(f"{r.planner}: {r.outcome.upper()}: {r.message} ({s.iterations} iterations, "
                  f"{s.plan_time * 1e3:.2f} ms)")
            if args.out is not None:
                print(f"no path: {args.out} not written")
    return EXIT_OK if r.solved else EXIT_INVALID


def _warn_unknown_joints(info: SceneInfo, q: Any) -> None:
    """One warning for values by name of joints the scene lacks: ignored, as MoveIt reads a joint state (and
    as the server does)."""
    unknown = [n for n in q if n not in info.joint_names] if isinstance(q, dict) else []
    if unknown:
        _warn(f"ignored {len(unknown)} value(s) for joint(s) robot {info.robot_name} does not have: "
              f"{', '.join(map(repr, unknown))}")


def _state_vector(client: Client, info: SceneInfo, q: Union[List[float], Dict[str, float], str]) -> np.ndarray:
    """A command-line configuration as values in the scene's joint order."""
    if isinstance(q, str):
        if q not in info.named_states:
            raise PathFileError(f"no named state {q!r} in scene {info.scene_id} (robot {info.robot_name}); it has "
                                f"{', '.join(info.named_states) or 'none'}")
        return np.asarray(info.named_states[q], dtype=np.float64)
    if isinstance(q, dict):
        missing = [n for n in info.joint_names if n not in q]
        if missing:
            raise PathFileError(f"the configuration must name every joint of robot {info.robot_name} once; "
                                f"missing {', '.join(missing)}")
        _warn_unknown_joints(info, q)
        return np.array([q[n] for n in info.joint_names], dtype=np.float64)
    return np.asarray(q, dtype=np.float64)


def _in_scene_order(spec: PathSpec, info: SceneInfo) -> np.ndarray:
    """A path's waypoints with their columns in the scene's joint order."""
    if not spec.joint_names:
        return spec.waypoints
    missing = [n for n in info.joint_names if n not in spec.joint_names]
    if missing:
        raise PathFileError(f"{spec.source}: the path does not name joint(s) {', '.join(missing)} of robot "
                            f"{info.robot_name}")
    return spec.waypoints[:, [spec.joint_names.index(n) for n in info.joint_names]]


def _cmd_poses(client: Client, args: argparse.Namespace) -> int:
    info = _resolve_scene(client, args)
    _warn_unknown_joints(info, args.state)
    poses = client.link_poses(args.state, scene=args.scene)
    if args.json:
        print(json.dumps({"scene": info.scene_id, "robot": info.robot_name,
                          "within_limits": bool(poses.within_limits[0]), "base_pose": poses.base_pose.tolist(),
                          "links": {n: poses.poses[0, k].tolist() for k, n in enumerate(poses.link_names)}},
                         indent=2))
        return EXIT_OK
    print(_scene_line(info))
    if not poses.within_limits[0]:
        print("(the state is outside the joint limits)")
    print(f"{'link':<28} {'x':>10} {'y':>10} {'z':>10}   {'qx':>8} {'qy':>8} {'qz':>8} {'qw':>8}   "
          "(world frame, m)")
    for k, name in enumerate(poses.link_names):
        p = poses.poses[0, k]
        print(f"{name:<28} {p[0]:>10.5f} {p[1]:>10.5f} {p[2]:>10.5f}   "
              f"{p[3]:>8.5f} {p[4]:>8.5f} {p[5]:>8.5f} {p[6]:>8.5f}")
    return EXIT_OK


def _contact_at(client: Client, q: np.ndarray, scene: str) -> Optional[Tuple[Contact, Pair]]:
    """What touches at ``q``: every colliding pair's parts and contact points (ComputeContacts), and the
    deepest pair; None when q is free."""
    found = client.contacts(q, scene=scene)
    if found.free:
        return None
    names = set()
    points = [np.zeros((0, 3))]
    for c in found.contacts:
        names |= {c.pair.robot, c.pair.other}
        points.append(c.points)
    return Contact(tuple(sorted(names)), np.unique(np.vstack(points), axis=0)), found.contacts[0].pair


def _contact_json(c: Any) -> Dict[str, Any]:
    return {**(_pair_json(c.pair) or {}), "depth": c.depth, "depth_lower": c.depth_lower,
            "depth_upper": _num(c.depth_upper), "normal": c.normal.tolist(), "point_robot": c.point_robot.tolist(),
            "point_other": c.point_other.tolist(), "points": c.points.tolist(),
            "point_depths": c.point_depths.tolist(), "padding": c.padding, "method": c.method}


def _cmd_contacts(client: Client, args: argparse.Namespace) -> int:
    info = _resolve_scene(client, args)
    q = _state_vector(client, info, args.state)
    r = client.contacts(q, max_pairs=args.max_pairs, max_points=args.max_points, scene=args.scene)
    if args.json:
        print(json.dumps({"scene": info.scene_id, "robot": info.robot_name, "state": q.tolist(), "free": r.free,
                          "within_limits": r.within_limits, "truncated": r.truncated,
                          "contacts": [_contact_json(c) for c in r.contacts]}, indent=2))
        return EXIT_OK if r.free else EXIT_INVALID
    print(_scene_line(info))
    if r.free:
        print("free: no pair collides")
        return EXIT_OK
    print(f"{len(r.contacts)} colliding pair(s){' (more not measured: raise --max-pairs)' if r.truncated else ''}, "
          "deepest first (depth in mm; normal from the robot side)")
    for c in r.contacts:
        bound = "" if c.method != "mesh_bracket" else (
            f", at most {c.depth_upper * 1e3:.3f} mm" if math.isfinite(c.depth_upper) else ", no upper bound")
        n = c.normal
        print(f"  {c.pair}: depth {c.depth * 1e3:.3f} mm{bound} ({c.method}), normal ({n[0]:+.3f}, {n[1]:+.3f}, "
              f"{n[2]:+.3f}), {len(c.points)} point(s)")
    return EXIT_INVALID


def _cmd_signed_distance(client: Client, args: argparse.Namespace) -> int:
    info = _resolve_scene(client, args)
    q = _state_vector(client, info, args.state)
    d = client.signed_distance(args.first, args.second, q, rel_err=args.rel_err, scene=args.scene)
    if args.json:
        print(json.dumps({"scene": info.scene_id, "robot": info.robot_name, "state": q.tolist(),
                          "pair": _pair_json(d.pair), "distance": d.distance, "lower": d.lower, "upper": d.upper,
                          "normal": d.normal.tolist(), "point_robot": d.point_robot.tolist(),
                          "point_other": d.point_other.tolist(), "allowed": d.allowed, "method": d.method},
                         indent=2))
        return EXIT_OK
    print(_scene_line(info))
    inside = "penetrating" if d.distance < 0 else "apart"
    print(f"{d.pair.robot} x {d.pair.other}: signed distance {d.distance * 1e3:.3f} mm ({inside}; in "
          f"[{d.lower * 1e3:.3f}, {d.upper * 1e3:.3f}] mm){' (an allowed pair: not checked)' if d.allowed else ''}")
    return EXIT_OK


def _sample_path(path: np.ndarray, info: SceneInfo, step: float, max_samples: int) -> Tuple[np.ndarray, np.ndarray]:
    """Samples at most ``step`` apart (joint space) on the straight segments between waypoints, continuous
    joints turning the short way as every motion query moves them; also each sample's position along the
    path (segment index + t)."""
    continuous = np.array([l.continuous for l in info.limits], dtype=bool)
    deltas = np.diff(path, axis=0)
    deltas[:, continuous] = (deltas[:, continuous] + np.pi) % (2 * np.pi) - np.pi
    counts = np.maximum(1, np.ceil(np.linalg.norm(deltas, axis=1) / step)).astype(int)
    if counts.sum() > max_samples:
        counts = np.maximum(1, (counts * max_samples // counts.sum()).astype(int))
    samples, where = [path[0]], [0.0]
    for i, (d, n) in enumerate(zip(deltas, counts)):
        for k in range(1, n + 1):
            samples.append(path[i] + d * (k / n))
            where.append(i + k / n)
    return np.array(samples), np.array(where)


def _cmd_export(client: Client, args: argparse.Namespace) -> int:
    info = _resolve_scene(client, args)
    geometry = client.scene_geometry(args.max_triangles or 0, scene=args.scene)
    summary: Dict[str, Any] = {"scene": info.scene_id, "robot": info.robot_name, "out": args.out,
                               "triangles": geometry.triangles, "hull_parts": geometry.hull_parts}
    contact: Optional[Tuple[Contact, Pair]] = None
    if args.state is not None:
        q = _state_vector(client, info, args.state)
        poses = client.link_poses(q, scene=args.scene)
        contact = _contact_at(client, q, args.scene)
        data = build_glb(geometry, poses.link_names, poses.poses, contact=contact[0] if contact else None)
        summary.update({"mode": "state", "state": q.tolist(), "free": contact is None})
    else:
        specs = read_paths(args.path)
        if args.index >= len(specs):
            raise PathFileError(f"{args.path} holds {len(specs)} path(s); --index {args.index} is not one of them")
        path = _in_scene_order(specs[args.index], info)
        if path.shape[1] != info.dof:
            raise PathFileError(f"{args.path}: rows have {path.shape[1]} values, robot {info.robot_name} has "
                                f"{info.dof} joints")
        checked = client.check_path(path, scene=args.scene)
        samples, where = _sample_path(path, info, args.step, args.max_samples)
        times = time_from_start(samples, info.velocity, [l.continuous for l in info.limits])
        timing = "velocity limits"
        if times is None:  # no velocity limits: one second per segment
            times, timing = where.copy(), "1 s per segment (no velocity limits)"
        times = np.maximum.accumulate(times)
        for i in range(1, len(times)):  # keyframe times must increase strictly
            times[i] = max(times[i], times[i - 1] + 1e-6)
        poses = client.link_poses(samples, scene=args.scene)
        contact_poses = None
        if not checked.free and checked.segment >= 0:
            seg, t = checked.segment, checked.motion.t_collide
            d = path[seg + 1] - path[seg]
            cont = np.array([l.continuous for l in info.limits], dtype=bool)
            d[cont] = (d[cont] + np.pi) % (2 * np.pi) - np.pi
            q_contact = path[seg] + t * d
            contact = _contact_at(client, q_contact, args.scene)
            contact_poses = client.link_poses(q_contact, scene=args.scene).poses[0]
            summary.update({"segment": seg, "t_collide": t, "contact_state": q_contact.tolist()})
        ghosts = None
        if args.ghosts:
            ghosts = sorted(set(np.linspace(0, len(samples) - 1, args.ghosts).round().astype(int).tolist()))
        data = build_glb(geometry, poses.link_names, poses.poses, times=None if ghosts else times, ghosts=ghosts,
                         contact=contact[0] if contact else None, contact_poses=contact_poses)
        summary.update({"mode": "ghosts" if ghosts else "animation", "waypoints": int(path.shape[0]),
                        "samples": int(len(samples)), "duration": float(times[-1]), "timing": timing,
                        "free": bool(checked.free)})
    Path(args.out).write_bytes(data)
    summary["bytes"] = len(data)
    if contact is not None:
        summary["contact"] = {**(_pair_json(contact[1]) or {}), "parts": list(contact[0].names),
                              "points": contact[0].points.tolist()}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(_scene_line(info))
        what = "state" if summary["mode"] == "state" else (
            f"path of {summary['waypoints']} waypoints ({summary['samples']} samples, {summary['duration']:.3f} s, "
            f"{summary['timing']}, {summary['mode']})")
        print(f"{what}: {'free' if summary['free'] else 'COLLIDES'}"
              + (f": {contact[1]} ({len(contact[0].points)} contact point(s))" if contact else ""))
        print(f"wrote {args.out} ({len(data)} bytes, {geometry.triangles} triangles"
              f"{f', {geometry.hull_parts} meshes as convex hulls' if geometry.hull_parts else ''})")
    return EXIT_OK if summary["free"] else EXIT_INVALID


def _package_map(items: Sequence[str]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for item in items:
        name, sep, folder = item.partition("=")
        if not sep or not name.strip() or not folder.strip():
            raise PathFileError(f"--package {item!r}: write NAME=DIR (the package name the URDF's package:// URIs "
                                "use, and its folder)")
        if not Path(folder).is_dir():
            raise PathFileError(f"--package {name}: {folder} is not a folder")
        out[name.strip()] = folder.strip()
    return out


def _cmd_scene_create(client: Client, args: argparse.Namespace) -> int:
    for label, f in (("--urdf", args.urdf), ("--srdf", args.srdf)):
        if f is not None and not Path(f).is_file():
            raise PathFileError(f"{label} {f}: no such file")
    try:
        info = client.create_scene_from_files(args.urdf, args.srdf, package_dirs=_package_map(args.package),
                                              name=args.name, reassign_name=args.reassign,
                                              collision_from_visual=args.collision_from_visual,
                                              padding=args.padding)
    except FileNotFoundError as e:
        # The library's hint names its argument; on the command line it is --package.
        raise PathFileError(re.sub(r"give package_dirs=\{'([^']+)': FOLDER\}", r"give --package \1=DIR",
                                   f"{args.urdf}: {e}")) from None
    if args.json:
        doc = _scene_json(info)
        doc["created"] = info.created
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    print(f"{_scene_line(info)}: {'created' if info.created else 'already loaded (same content, same id)'}")
    print(f"  {len(info.link_names)} links, {info.triangles} triangles, joints {', '.join(info.joint_names)}")
    for w in info.warnings:
        print(f"  warning: {w}")
    ref = info.names[0] if info.names else info.scene_id
    print(f"use it with --scene {ref}, or: export PROXIMITY_SCENE={ref}")
    return EXIT_OK


def _cmd_scene_name(client: Client, args: argparse.Namespace) -> int:
    scene = args.scene if args.scene is not None else "default"
    info = client.name_scene(args.name, scene=scene, remove=args.remove, reassign=args.reassign)
    if args.json:
        print(json.dumps(_scene_json(info), indent=2))
    else:
        print(f"{_scene_line(info)}: {'no longer named' if args.remove else 'named'} {args.name}")
    return EXIT_OK


def _cmd_scene_list(client: Client, args: argparse.Namespace) -> int:
    scenes = client.list_scenes()
    if args.json:
        print(json.dumps([_scene_json(s) for s in scenes], indent=2))
        return EXIT_OK
    for s in scenes:
        print(_scene_line(s))
    return EXIT_OK


def _cmd_scene_cloud(client: Client, args: argparse.Namespace) -> int:
    """A point file (.npy, .ply, .pcd) as world object ID of the scene: a new scene version."""
    if (args.frame or args.self_filter is not None) and args.state is None:
        raise PathFileError(f"{'--frame' if args.frame else '--self-filter'} needs --state: the robot's joint values "
                            "when the points were sensed")
    cloud = read_points(args.file)
    if cloud.nan_dropped:
        _warn(f"{args.file}: {cloud.nan_dropped} point(s) with NaN coordinates dropped")
    if not len(cloud.points):
        raise PathFileError(f"{args.file}: no points{' but NaN ones' if cloud.nan_dropped else ''}")
    info = _resolve_scene(client, args)
    if args.id in info.object_ids and not args.replace:
        raise PathFileError(f"scene {info.label} already has an object {args.id!r}; add --replace to replace it")
    state = None if args.state is None else _state_vector(client, info, args.state)
    obj = geometry.point_cloud(args.id, cloud.points, frame=args.frame or "", radius=args.radius,
                               state=None if state is None else state.tolist(), voxel_size=args.voxel_size,
                               self_filter_padding=args.self_filter)
    replaced = args.id in info.object_ids
    new = client.update_world(**({"replace": [obj]} if args.replace else {"add": [obj]}), scene=info.scene_id,
                              move_names=args.move_names)
    summary = {"id": args.id, "file": args.file, "format": cloud.format, "points": int(len(cloud.points)),
               "nan_dropped": cloud.nan_dropped, "replaced": replaced, "from_scene": info.scene_id}
    if args.json:
        doc = _scene_json(new)
        doc["cloud"] = summary
        print(json.dumps(doc, indent=2))
        return EXIT_OK
    print(f"{_scene_line(new)}, version {new.version}: cloud {args.id!r} {'replaced' if replaced else 'added'} "
          f"({len(cloud.points)} points from {args.file}, {cloud.format}; from scene {info.scene_id})")
    ref = new.names[0] if new.names else new.scene_id
    print(f"use it with --scene {ref}")
    return EXIT_OK


def _cmd_scene(client: Client, args: argparse.Namespace) -> int:
    return {"create": _cmd_scene_create, "name": _cmd_scene_name, "list": _cmd_scene_list,
            "cloud": _cmd_scene_cloud}[args.scene_command](
        client, args)


def _connection(args: argparse.Namespace) -> Dict[str, Any]:
    """The Client's TLS and token arguments from the command line."""
    out: Dict[str, Any] = {}
    if args.tls_ca:
        out["tls_ca"] = args.tls_ca
    if args.tls_cert or args.tls_key:
        out["tls_cert"], out["tls_key"] = args.tls_cert, args.tls_key
        out.setdefault("tls_ca", True)
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as f:
            out["token"] = f.readline().strip()
    return out


def _user_words(e: ProximityError, args: argparse.Namespace) -> str:
    """The server's message in the command line's words: request fields become the flags that set them
    (``state.positions:`` -> ``--state:``, ``time_limit must`` -> ``--time-limit must``), and the paths of a
    file are named by the file."""
    text = e.details
    if e.code.name == "ALREADY_EXISTS" and getattr(args, "command", "") == "scene":
        return f"{text} (add --reassign to move the name to this scene)"
    if e.code.name == "NOT_FOUND" and "(create it with CreateScene)" in text:
        return text.replace("(create it with CreateScene)",
                            "(`proximity scene list` shows the loaded scenes, `proximity scene create` loads one)")
    fields = {k: v for k, v in vars(args).items() if v is not None and not k.startswith("_")}
    fields.setdefault("scene_id", True)
    for field in sorted(fields, key=len, reverse=True):
        flag = "--scene" if field == "scene_id" else "--" + field.replace("_", "-")
        text = re.sub(rf"(?<![\w.\-]){re.escape(field)}(?:\.positions)?(?=:| must| =)", flag, text)
    sources = getattr(args, "_sources", None)
    if sources:
        text = re.sub(r"paths\[(\d+)\](?:\.\w+(?:\[\d+\])?)?",
                      lambda m: sources[int(m.group(1))] if int(m.group(1)) < len(sources) else m.group(0), text)
    return text


def _default_state(info: SceneInfo) -> np.ndarray:
    """The robot's default configuration, as the core makes it: 0 where within a joint's limits, else the
    middle of them."""
    return np.array([0.0 if (l.continuous or l.lower <= 0.0 <= l.upper) else 0.5 * (l.lower + l.upper)
                     for l in info.limits], dtype=np.float64)


def _in_group(spec: PathSpec, info: SceneInfo, group: str, base: np.ndarray) -> PathSpec:
    """A path or state file for SRDF group ``group`` as full configurations in the scene's joint order: its
    columns are the group's joints (named in any order, or unnamed in the scene's joint order), or every
    joint of the scene with those outside the group constant; joints the file leaves out take ``base``'s
    values. Refuses, naming them, columns that move a joint outside the group."""
    try:
        members = info.group(group).joints
    except KeyError as e:
        raise PathFileError(str(e.args[0])) from None
    if not members:
        raise PathFileError(f"group {group!r} moves none of the joints of robot {info.robot_name}")
    names = spec.joint_names
    if names is None:
        width = spec.waypoints.shape[1] if spec.waypoints.ndim == 2 else 0
        if width == len(members):
            names = list(members)
        elif width == info.dof:
            names = list(info.joint_names)
        else:
            raise PathFileError(f"{spec.source}: rows have {width} values; group {group!r} of robot "
                                f"{info.robot_name} has {len(members)} joints ({', '.join(members)}) and the "
                                f"robot {info.dof}")
    unknown = [n for n in names if n not in info.joint_names]
    if unknown:
        raise PathFileError(f"{spec.source}: unknown joint(s) {', '.join(unknown)}; robot {info.robot_name} has "
                            f"{', '.join(info.joint_names)}")
    missing = [n for n in members if n not in names]
    if missing:
        raise PathFileError(f"{spec.source}: group {group!r} joint(s) {', '.join(missing)} are not in the file")
    full = np.tile(np.asarray(base, dtype=np.float64), (spec.waypoints.shape[0], 1))
    for c, n in enumerate(names):
        column = spec.waypoints[:, c]
        if n not in members and not (column == column[0]).all():
            raise PathFileError(f"{spec.source}: joint {n} is not in group {group!r} ({', '.join(members)}) "
                                "but moves")
        full[:, info.joint_names.index(n)] = column
    return PathSpec(spec.source, full, None)


def _check_against_scene(spec: PathSpec, info: SceneInfo) -> None:
    """A path or state file's columns against the robot, before anything is sent: the file named."""
    if spec.joint_names:
        unknown = [n for n in spec.joint_names if n not in info.joint_names]
        if unknown:
            raise PathFileError(f"{spec.source}: unknown joint(s) {', '.join(unknown)}; robot {info.robot_name} "
                                f"(scene {info.label}) has {', '.join(info.joint_names)}")
        return
    width = spec.waypoints.shape[1] if spec.waypoints.ndim == 2 else 0
    if width != info.dof:
        raise PathFileError(f"{spec.source}: rows have {width} values, robot {info.robot_name} (scene "
                            f"{info.label}) has {info.dof} joints ({', '.join(info.joint_names)})")


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``proximity`` command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--target", default=os.environ.get("PROXIMITY_TARGET", DEFAULT_TARGET),
                        help="proximityd address host:port (default $PROXIMITY_TARGET or %(default)s)")
    common.add_argument("--timeout", type=float, default=60.0, help="deadline of each call, seconds (%(default)s)")
    common.add_argument("--wait", type=float, default=float(os.environ.get("PROXIMITY_WAIT", "5")), metavar="S",
                        help="wait up to S seconds for a starting server to serve (default $PROXIMITY_WAIT or 5)")
    common.add_argument("--scene", default=os.environ.get("PROXIMITY_SCENE"),
                        help="scene id or name (default $PROXIMITY_SCENE, else the built-in scene when it is the only one "
                             "loaded; with other scenes loaded a query command refuses and lists them)")
    common.add_argument("--json", action="store_true", help="print JSON instead of text")
    common.add_argument("--tls-ca", default=os.environ.get("PROXIMITY_TLS_CA"), metavar="PEM",
                        help="connect with TLS trusting this CA certificate (default $PROXIMITY_TLS_CA)")
    common.add_argument("--tls-cert", default=os.environ.get("PROXIMITY_TLS_CERT"), metavar="PEM",
                        help="mutual TLS: this client's certificate (default $PROXIMITY_TLS_CERT)")
    common.add_argument("--tls-key", default=os.environ.get("PROXIMITY_TLS_KEY"), metavar="PEM",
                        help="mutual TLS: this client's private key (default $PROXIMITY_TLS_KEY)")
    common.add_argument("--token-file", default=os.environ.get("PROXIMITY_TOKEN_FILE"), metavar="FILE",
                        help="send the bearer token in FILE on every call (default $PROXIMITY_TOKEN_FILE)")

    p = argparse.ArgumentParser(prog="proximity", description="Command-line client of the proximityd service.")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    sub.add_parser("info", parents=[common], help="server health and scene details (robot, joints, objects)",
                   description="The server's health and its scenes (or the --scene one): robot, joints with "
                               "their limits, world and attached objects, names.")

    v = sub.add_parser("validate", parents=[common], help="validate paths from .json, .csv or .npy files",
                       description="Validates every path in the files (straight joint-space segments between "
                                   "waypoints). Exit 0: all valid; 1: any invalid; 2: error.")
    v.add_argument("files", nargs="+", metavar="FILE",
                   help="path files: .json (ours or JointTrajectory-shaped), .csv (joint names, then a row per "
                        "waypoint) or .npy")
    v.add_argument("--mode", choices=["certified", "discrete"], default="certified",
                   help="certified LINK (default) or discrete sampling like OMPL")
    v.add_argument("--resolution", type=float, default=None,
                   help="discrete mode: joint-space step between sampled states (rad/m; server default 0.01)")
    v.add_argument("--no-progress", action="store_true", help="no progress bar")
    group_help = ("an SRDF group (`info` lists them): the file's columns are its joints (named, or unnamed in the "
                  "scene's joint order), or every joint with those outside the group constant; the other joints "
                  "take --state's values")
    state_help = ("with --group: the values of the joints outside the group (a configuration as --state takes "
                  "elsewhere; default: the robot's default configuration)")
    v.add_argument("--group", default=None, metavar="NAME", help=group_help)
    v.add_argument("--state", type=_configuration, default=None, metavar="Q", help=state_help)

    c = sub.add_parser("check-states", parents=[common], help="CLEAR for every configuration in a file",
                       description="Checks every configuration in the file for collision (world and self), in "
                                   "batches. Exit 0: all free; 1: any collides; 2: error.")
    c.add_argument("file", metavar="FILE", help="configurations: .json, .csv or .npy (what `validate` reads)")
    c.add_argument("--show", type=int, default=20, metavar="N", help="colliding states to list (%(default)s)")
    c.add_argument("--group", default=None, metavar="NAME", help=group_help)
    c.add_argument("--state", type=_configuration, default=None, metavar="Q", help=state_help)

    def q_help(flag: str) -> str:
        return ("values in the scene's joint order (0.1,-0.5,...), name=value pairs (a1=0.1,a2=-0.5,...) or an "
                f"SRDF state name; write {flag}=-0.1,... when the first value is negative")
    pl = sub.add_parser("plan", parents=[common], help="plan a collision-free path from a start to a goal",
                        description="Plans a joint-space path with a sampling-based planner on the server (each "
                                    "edge checked certified by default). Exit 0: solved; 1: no path (time limit, "
                                    "colliding start or goal); 2: error.")
    pl.add_argument("--start", type=_configuration, required=True, metavar="Q", help=q_help("--start"))
    goal = pl.add_mutually_exclusive_group(required=True)
    goal.add_argument("--goal", type=_configuration, metavar="Q", help=q_help("--goal"))
    goal.add_argument("--goal-pose", type=_pose_arg, metavar="X,Y,Z[,QX,QY,QZ,QW]",
                      help="instead of --goal: a pose of --link in the world (three values: the position alone); "
                           "the plan ends at any collision-free configuration reaching it")
    _add_pose_flags(pl, required=False)
    pl.add_argument("--planner", choices=list(PLANNERS), default="rrt_connect",
                    help="sampling-based planner (%(default)s)")
    pl.add_argument("--time-limit", type=float, default=5.0, help="seconds of planning (%(default)s)")
    pl.add_argument("--seed", type=int, default=1, help="random seed; the same seed gives the same path (%(default)s)")
    pl.add_argument("--range", type=float, default=None, help="longest tree extension, rad/m (server default)")
    pl.add_argument("--max-iterations", type=int, default=None, help="planner iterations at most (no limit)")
    pl.add_argument("--no-simplify", action="store_true", help="return the raw path (no shortcutting)")
    pl.add_argument("--group", default=None, metavar="NAME",
                    help="an SRDF group: only its joints move, the others stay at the start's values (which "
                         "the goal must share); `info` lists the groups")
    pl.add_argument("--mode", choices=["certified", "discrete"], default="certified",
                    help="how each edge is checked: certified LINK (default) or discrete sampling")
    pl.add_argument("--resolution", type=float, default=None,
                    help="discrete mode: joint-space step between sampled states (rad/m; server default 0.01)")
    pl.add_argument("--out", default=None, metavar="PATH",
                    help="when solved, write the path for `validate`: .json ({joint_names, waypoints, "
                         "time_from_start}), .csv (joint names, then a row per waypoint) or .npy")
    pl.add_argument("--joint-limits", default=None, metavar="FILE.yaml",
                    help="MoveIt's joint_limits.yaml: time the path time-optimally with its velocity and "
                         "acceleration limits (the path followed exactly, stopping at each waypoint, unless "
                         "--path-tolerance)")
    pl.add_argument("--default-acceleration", type=float, default=None, metavar="A",
                    help="time-optimal timing: acceleration limit (rad/s^2, m/s^2) of joints given none")
    pl.add_argument("--velocity-scaling", type=float, default=None, metavar="S",
                    help="time-optimal timing: MoveIt's max_velocity_scaling_factor, in (0, 1]")
    pl.add_argument("--acceleration-scaling", type=float, default=None, metavar="S",
                    help="time-optimal timing: MoveIt's max_acceleration_scaling_factor, in (0, 1]")
    pl.add_argument("--resample-dt", type=float, default=None, metavar="S",
                    help="time-optimal timing: seconds between samples (server default 0.01)")
    pl.add_argument("--path-tolerance", type=float, default=None, metavar="D",
                    help="time-optimal timing: pass corners without stopping on blends within D (rad/m, joint "
                         "space) of them, each blend checked as the path is (MoveIt's path_tolerance; default: "
                         "stop at every waypoint)")
    pl.add_argument("--trajectory-out", default=None, metavar="FILE.json",
                    help="with time-optimal timing: write {joint_names, time_from_start, positions, velocities, "
                         "accelerations, waypoint_samples, blended_corners, max_deviation}")

    ik = sub.add_parser("ik", parents=[common], help="joint values that put a link at a pose (inverse kinematics)",
                        description="Inverse kinematics on the server: random-restart descents until a solution "
                                    "within the joint limits (and free of collision unless --allow-collisions) "
                                    "puts --link at --pose. Exit 0: found; 1: none; 2: error.")
    ik.add_argument("--pose", type=_pose_arg, required=True, metavar="X,Y,Z[,QX,QY,QZ,QW]",
                    help="the target in the world (three values: the position alone)")
    _add_pose_flags(ik, required=True)
    ik.add_argument("--seed-state", type=_configuration, default=None, metavar="Q",
                    help="where the first descent starts, and the values of joints that do not move; "
                         + q_help("--seed-state"))
    ik.add_argument("--group", default=None, metavar="NAME", help="only the SRDF group's joints move")
    ik.add_argument("--allow-collisions", action="store_true", help="return a solution even if it collides")
    ik.add_argument("--search-time", type=float, default=1.0, help="seconds of random restarts (%(default)s)")
    ik.add_argument("--random-seed", type=int, default=0, help="the restarts' seed (%(default)s)")

    po = sub.add_parser("poses", parents=[common], help="every link's pose in the world at a state",
                        description="Forward kinematics on the server: each link's pose in the world frame (the "
                                    "scene's base pose applied), position in metres and quaternion x, y, z, w.")
    po.add_argument("--state", type=_configuration, required=True, metavar="Q", help=q_help("--state"))

    ex = sub.add_parser("export", parents=[common], help="write the scene at a state, or along a path, as glTF (.glb)",
                        description="Writes a glTF 2.0 binary of the scene: at a state, or along a path as an "
                                    "animation timed by the joints' velocity limits (or, with --ghosts, a strip of "
                                    "translucent robots). Colliding links and objects are red and contact points "
                                    "are marked; for a path, the robot at its first colliding state is added. "
                                    "Exit 0: free; 1: it collides (the file is written all the same); 2: error.")
    what = ex.add_mutually_exclusive_group(required=True)
    what.add_argument("--state", type=_configuration, metavar="Q", help=q_help("--state"))
    what.add_argument("--path", metavar="FILE", help="a path file (.json, .csv, .npy; what `validate` reads)")
    ex.add_argument("--out", required=True, metavar="FILE.glb", help="the glTF binary to write")
    ex.add_argument("--index", type=int, default=0, help="which path of a file holding several (%(default)s)")
    ex.add_argument("--ghosts", type=int, default=0, metavar="N",
                    help="a strip of N robots along the path instead of an animation")
    ex.add_argument("--step", type=float, default=0.05,
                    help="joint-space distance between animation samples, rad/m (%(default)s)")
    ex.add_argument("--max-samples", type=int, default=2000, help="most animation samples (%(default)s)")
    ex.add_argument("--max-triangles", type=int, default=0,
                    help="most triangles; bigger meshes are sent as their convex hulls (default: the server's cap)")
    sc = sub.add_parser("scene", help="create, name and list scenes",
                        description="Scenes on the server: create one from your robot's files, name it, list them.")
    scs = sc.add_subparsers(dest="scene_command", required=True, metavar="SUBCOMMAND")
    cr = scs.add_parser("create", parents=[common], help="upload a robot (URDF, SRDF, meshes) as a scene",
                        description="Reads the URDF, the SRDF and every collision mesh the URDF names on this "
                                    "machine and uploads them as one bundle (the server opens no file). The same "
                                    "files give the same scene id by any route.")
    cr.add_argument("--urdf", required=True, metavar="FILE", help="the robot's URDF")
    cr.add_argument("--srdf", default=None, metavar="FILE", help="its SRDF (allowed pairs, named states)")
    cr.add_argument("--package", action="append", default=[], metavar="NAME=DIR",
                    help="where package://NAME/... meshes are (repeatable; else $ROS_PACKAGE_PATH's package.xml files)")
    cr.add_argument("--name", default=None, help="a name for the scene, usable wherever its id is")
    cr.add_argument("--reassign", action="store_true", help="take --name from the scene that holds it")
    cr.add_argument("--collision-from-visual", action="store_true",
                    help="collide with each link's <visual> meshes instead of its <collision> ones")
    cr.add_argument("--padding", type=float, default=None, help="metres added around every link (0)")
    nm = scs.add_parser("name", parents=[common], help="give the scene (--scene) a name, or take one away",
                        description="Names the --scene scene (an id or a name) so that NAME works wherever its id "
                                    "does; --remove takes the name away.")
    nm.add_argument("name", metavar="NAME", help="the name: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit")
    nm.add_argument("--remove", action="store_true", help="take the name away")
    nm.add_argument("--reassign", action="store_true", help="take the name from the scene that holds it")
    scs.add_parser("list", parents=[common], help="the scenes loaded, with their robots and names",
                   description="The scenes the server holds: id, robot, joint count and names.")
    cl = scs.add_parser("cloud", parents=[common], help="put a point file (.npy, .ply, .pcd) into the scene's world",
                        description="Reads the points of FILE (.npy (n, 3); .ply ascii or binary; .pcd ascii, binary "
                                    "or binary_compressed) and adds them to the --scene scene's world as point cloud "
                                    "object ID, a new scene version (printed). Points with NaN coordinates are "
                                    "dropped (a warning says how many).")
    cl.add_argument("id", metavar="ID", help="the world object's id")
    cl.add_argument("file", metavar="FILE", help="the points, in metres: .npy, .ply or .pcd")
    cl.add_argument("--radius", type=float, required=True, metavar="R",
                    help="each point's radius, metres (the sensor's noise or voxel size)")
    cl.add_argument("--voxel-size", type=float, default=None, metavar="V",
                    help="the server's downsampling voxel, metres (default: the radius; 0 keeps every point)")
    cl.add_argument("--frame", default=None, metavar="LINK",
                    help="the robot link whose frame the points are in, at --state (default: the world frame)")
    cl.add_argument("--state", type=_configuration, default=None, metavar="Q",
                    help="the joint values when the points were sensed (for --frame and --self-filter), as "
                         "--state takes elsewhere")
    cl.add_argument("--self-filter", type=float, default=None, metavar="PAD",
                    help="drop points within PAD metres of the robot's links at --state (a camera sees the arm)")
    cl.add_argument("--replace", action="store_true", help="replace object ID when the scene has it (a new frame)")
    cl.add_argument("--move-names", action="store_true",
                    help="move the scene's names to the new version (a name then follows the newest world)")

    ct = sub.add_parser("contacts", parents=[common], help="every colliding pair at a state, with depth and points",
                        description="Every colliding pair (world and self) at a state with its penetration depth, "
                                    "contact normal and contact points, deepest first. Exit 0: free; 1: it collides; "
                                    "2: error.")
    ct.add_argument("--state", type=_configuration, required=True, metavar="Q", help=q_help("--state"))
    ct.add_argument("--max-pairs", type=int, default=0, help="geometry pairs measured at most (server default 256)")
    ct.add_argument("--max-points", type=int, default=0, help="contact points per pair (server default 8)")

    sd = sub.add_parser("signed-distance", parents=[common], help="signed distance of two named links or objects",
                        description="The signed distance between two links, attached objects or world objects at "
                                    "a state: the distance when apart, minus the penetration depth when they "
                                    "collide.")
    sd.add_argument("first", metavar="NAME", help="a link, attached object or world object")
    sd.add_argument("second", metavar="NAME", help="another one (at least one of the two on the robot)")
    sd.add_argument("--state", type=_configuration, required=True, metavar="Q", help=q_help("--state"))
    sd.add_argument("--rel-err", type=float, default=0.0, help="relative error allowed when apart (%(default)s)")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``proximity`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    # The commands name the joints a state's values are ignored for themselves (one "warning:" line each):
    # the library's warnings of the same, from the server's answers, would repeat them.
    warnings.filterwarnings("ignore", category=ProximityWarning,
                            message=r"(CheckState|CheckMotion|ComputeDistance|TimeOfFirstContact|GetLinkPoses|"
                                    r"ComputeContacts|ComputeSignedDistance): ")
    handlers = {"info": _cmd_info, "validate": _cmd_validate, "check-states": _cmd_check_states, "plan": _cmd_plan,
                "ik": _cmd_ik,
                "poses": _cmd_poses, "export": _cmd_export, "contacts": _cmd_contacts,
                "signed-distance": _cmd_signed_distance, "scene": _cmd_scene}
    try:
        with Client(args.target, timeout=args.timeout, **_connection(args)) as client:
            if args.wait > 0:
                client.wait_until_serving(timeout=min(args.wait, args.timeout))
            if args.scene is not None:
                client.scene = args.scene
            return handlers[args.command](client, args)
    except (PathFileError, OSError, AmbiguousSceneError, ValueError) as e:
        print(f"proximity: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except ProximityError as e:
        print(f"proximity: request failed: {e.method or 'call'}: {e.code.name}: {_user_words(e, args)}",
              file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("proximity: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
