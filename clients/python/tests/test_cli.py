"""The ``proximity`` command as a user runs it (with ``info``: server/robot_info.cc's groups, end effectors
and allowed pairs) (a subprocess with Debian's /usr/bin/python3), against a real daemon. Which paths
collide is decided independently by the client library's check_motion, and one colliding path is built
from a geometric fact: it ends inside a solid box added to the world."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import List

import numpy as np
import pytest

import support
from proximity_client import Client, SceneInfo


@pytest.fixture(scope="module")
def free_and_colliding(client: Client, info: SceneInfo) -> "tuple[np.ndarray, np.ndarray]":
    """A certified-free path and a colliding path, found by sampling."""
    rng = np.random.default_rng(12)
    free_path = colliding = None
    while free_path is None or colliding is None:
        w = info.sample(1, rng)
        w = np.vstack([w, np.clip(w + rng.uniform(-0.2, 0.2, w.shape), info.lower, info.upper)])
        w = np.vstack([w, np.clip(w[-1] + rng.uniform(-0.2, 0.2, info.dof), info.lower, info.upper)])
        segs = [client.check_motion(w[i], w[i + 1]) for i in range(2)]
        if all(s.free for s in segs) and free_path is None:
            free_path = w
        elif client.check_state(w[0]).free and not segs[0].free and colliding is None:
            colliding = w
    return free_path, colliding


def test_info(daemon: support.Daemon, info: SceneInfo) -> None:
    p = support.run_cli(daemon, "info")
    assert p.returncode == 0, p.stderr
    assert "SERVING" in p.stdout and info.robot_name in p.stdout
    for name in info.joint_names + info.object_ids:
        assert name in p.stdout
    j = support.run_cli(daemon, "info", "--scene", "default", "--json")
    assert j.returncode == 0, j.stderr
    doc = json.loads(j.stdout)
    assert doc["health"] == "SERVING" and doc["scenes"][0]["joint_names"] == info.joint_names


def test_validate_exit_codes(daemon: support.Daemon, info: SceneInfo, tmp_path: Path,
                             free_and_colliding: "tuple[np.ndarray, np.ndarray]") -> None:
    free_path, colliding = free_and_colliding
    good_json = tmp_path / "good.json"
    good_json.write_text(json.dumps({"joint_names": info.joint_names, "waypoints": free_path.tolist()}))
    good_csv = tmp_path / "good.csv"
    rev = list(reversed(range(info.dof)))  # columns in another order, named in the header
    good_csv.write_text(",".join(info.joint_names[i] for i in rev) + "\n" +
                        "\n".join(",".join(repr(float(x)) for x in row[rev]) for row in free_path) + "\n")
    good_npy = tmp_path / "good.npy"
    np.save(good_npy, free_path)
    bad_npy = tmp_path / "bad.npy"
    np.save(bad_npy, colliding)
    many = tmp_path / "many.json"
    many.write_text(json.dumps({"joint_names": info.joint_names,
                                "paths": [{"waypoints": free_path.tolist()}, {"waypoints": colliding.tolist()}]}))

    for f in (good_json, good_csv, good_npy):
        p = support.run_cli(daemon, "validate", str(f))
        assert p.returncode == 0, (f, p.stdout, p.stderr)
        assert "valid" in p.stdout and "INVALID" not in p.stdout

    p = support.run_cli(daemon, "validate", str(good_json), str(bad_npy))
    assert p.returncode == 1, p.stderr
    assert "INVALID" in p.stdout and "segment 0" in p.stdout

    p = support.run_cli(daemon, "validate", str(many), "--json")
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert [x["valid"] for x in doc["paths"]] == [True, False]
    bad = doc["paths"][1]
    assert bad["segment"] == 0 and 0.0 <= bad["t_free"] <= bad["t_collide"] <= 1.0
    assert bad["contact"]["robot"] and bad["contact"]["other"]
    assert doc["valid"] == 1 and doc["invalid"] == 1

    p = support.run_cli(daemon, "validate", str(good_npy), "--mode", "discrete", "--resolution", "0.05", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["mode"] == "discrete"


def test_validate_reads_joint_trajectory_shaped_json(daemon: support.Daemon, info: SceneInfo, tmp_path: Path,
                                                    free_and_colliding: "tuple[np.ndarray, np.ndarray]") -> None:
    """ROS-shaped files: a trajectory_msgs/JointTrajectory (joint_names + points[].positions, other point
    fields ignored), a moveit_msgs/RobotTrajectory holding one, and a list of them under 'paths'."""
    free_path, colliding = free_and_colliding
    rev = list(reversed(range(info.dof)))  # columns in another order, named by joint_names

    def trajectory(w: np.ndarray) -> dict:
        return {"joint_names": [info.joint_names[i] for i in rev],
                "points": [{"positions": row[rev].tolist(), "velocities": [0.0] * info.dof,
                            "time_from_start": {"secs": k, "nsecs": 0}} for k, row in enumerate(w)]}

    plain = tmp_path / "trajectory.json"
    plain.write_text(json.dumps(trajectory(free_path)))
    p = support.run_cli(daemon, "validate", str(plain))
    assert p.returncode == 0, (p.stdout, p.stderr)
    wrapped = tmp_path / "robot_trajectory.json"
    wrapped.write_text(json.dumps({"joint_trajectory": trajectory(colliding)}))
    p = support.run_cli(daemon, "validate", str(wrapped))
    assert p.returncode == 1 and "INVALID" in p.stdout, (p.stdout, p.stderr)
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"paths": [trajectory(free_path), {"joint_trajectory": trajectory(colliding)}]}))
    p = support.run_cli(daemon, "validate", str(both), "--json")
    assert p.returncode == 1, p.stderr
    assert [x["valid"] for x in json.loads(p.stdout)["paths"]] == [True, False]
    pointless = tmp_path / "pointless.json"
    pointless.write_text(json.dumps({"joint_names": info.joint_names, "points": [{"velocities": [0.0]}]}))
    p = support.run_cli(daemon, "validate", str(pointless))
    assert p.returncode == 2 and "point 0 has no 'positions'" in p.stderr and "pointless.json" in p.stderr, p.stderr


def test_query_commands_name_the_robot_and_refuse_to_guess_the_scene(tmp_path: Path) -> None:
    """With only the built-in scene loaded a query command may leave --scene out, and says which robot it
    answered for; once another scene is loaded it refuses (exit 2) and lists them instead of answering for
    the built-in robot. --scene and $PROXIMITY_SCENE name one."""
    wam = "/usr/share/doc/dart/data/urdf/wam/wam.urdf"
    with support.Daemon(path_roots=[Path(wam).parent]) as d, d.client(timeout=60) as c:
        c.wait_until_serving()
        default = c.get_scene("default")
        states = tmp_path / "states.npy"
        np.save(states, np.zeros((3, default.dof)))
        p = support.run_cli(d, "check-states", str(states))
        assert p.returncode in (0, 1), p.stderr
        assert default.robot_name in p.stdout and default.scene_id in p.stdout, p.stdout
        mine = c.create_scene(urdf_path=wam, package_dirs={"herb_description": str(Path(wam).parent)})
        p = support.run_cli(d, "check-states", str(states))
        assert p.returncode == 2, (p.stdout, p.stderr)
        assert "--scene" in p.stderr and mine.scene_id in p.stderr and default.scene_id in p.stderr, p.stderr
        wam_states = tmp_path / "wam.npy"
        np.save(wam_states, np.zeros((2, mine.dof)))
        for extra, env in ((["--scene", mine.scene_id], None), ([], {"PROXIMITY_SCENE": mine.scene_id})):
            p = support.run_cli(d, "check-states", str(wam_states), "--json", *extra, env_extra=env)
            assert p.returncode in (0, 1), p.stderr
            doc = json.loads(p.stdout)
            assert doc["scene"] == mine.scene_id and doc["robot"] == mine.robot_name and doc["states"] == 2


def test_validate_errors_exit_2(daemon: support.Daemon, info: SceneInfo, tmp_path: Path) -> None:
    cases: List[Path] = []
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    cases.append(broken)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("1,2,3\n1,2\n")
    cases.append(ragged)
    cases.append(tmp_path / "missing.npy")
    wrong_ext = tmp_path / "path.txt"
    wrong_ext.write_text("0 0 0")
    cases.append(wrong_ext)
    for f in cases:
        p = support.run_cli(daemon, "validate", str(f))
        assert p.returncode == 2, (f, p.stdout, p.stderr)
        assert "error" in p.stderr and f.name in p.stderr

    # Well-formed files the robot or the server rejects: the file or the gRPC status and message on stderr.
    wrong_dof = tmp_path / "wrong_dof.npy"
    np.save(wrong_dof, np.zeros((3, info.dof + 1)))
    p = support.run_cli(daemon, "validate", str(wrong_dof))  # checked against the robot before sending
    assert p.returncode == 2 and f"{wrong_dof}: rows have {info.dof + 1} values, robot {info.robot_name}" in \
        p.stderr, p.stderr
    nan = tmp_path / "nan.json"
    nan.write_text('{"waypoints": [[0,0,0,0,0,0],[0,NaN,0,0,0,0]]}')
    p = support.run_cli(daemon, "validate", str(nan))
    assert p.returncode == 2 and "INVALID_ARGUMENT" in p.stderr, p.stderr
    p = support.run_cli(daemon, "validate", str(tmp_path / "x.npy"), "--scene", "no-such-scene")
    assert p.returncode == 2
    np.save(tmp_path / "x.npy", np.zeros((2, info.dof)))
    p = support.run_cli(daemon, "validate", str(tmp_path / "x.npy"), "--scene", "no-such-scene")
    assert p.returncode == 2 and "NOT_FOUND" in p.stderr, p.stderr
    p = subprocess.run(["/usr/bin/python3", "-m", "proximity_client", "validate", str(tmp_path / "x.npy"),
                        "--target", f"127.0.0.1:{support.free_port()}", "--timeout", "2"],
                       capture_output=True, text=True, timeout=60,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join([str(support.PY_SRC), str(support.STUBS)])})
    assert p.returncode == 2 and "UNAVAILABLE" in p.stderr, p.stderr


def test_check_states_command(daemon: support.Daemon, client: Client, info: SceneInfo, tmp_path: Path) -> None:
    states = info.sample(300, np.random.default_rng(13))
    f = tmp_path / "states.npy"
    np.save(f, states)
    expect = client.check_states(states)
    p = support.run_cli(daemon, "check-states", str(f), "--json")
    assert p.returncode == (0 if expect.all() else 1), p.stderr
    doc = json.loads(p.stdout)
    assert doc["free_mask"] == expect.tolist() and doc["free"] == int(expect.sum())
    assert set(doc["contacts"]) == {str(i) for i in np.flatnonzero(~expect)}
    p = support.run_cli(daemon, "check-states", str(f))
    assert f"{int(expect.sum())} free" in p.stdout


ROBOTS = support.REPO / "tests" / "data" / "robots"


def expected_allowed_pairs(urdf: Path) -> set:
    """The pairs a URDF alone leaves unchecked, from its XML: parent and child of each joint ("adjacent"),
    and links joined through fixed joints only ("rigid")."""
    import xml.etree.ElementTree as ET
    root = ET.parse(urdf).getroot()
    links = [l.get("name") for l in root.findall("link")]
    order = {n: i for i, n in enumerate(links)}
    group = {n: n for n in links}

    def find(n: str) -> str:
        while group[n] != n:
            n = group[n]
        return n

    adjacent = set()
    for j in root.findall("joint"):
        a, b = j.find("parent").get("link"), j.find("child").get("link")
        adjacent.add(frozenset((a, b)))
        if j.get("type") == "fixed":
            group[find(b)] = find(a)
    out = set()
    for a in links:
        for b in links:
            if order[a] < order[b] and (frozenset((a, b)) in adjacent or find(a) == find(b)):
                out.add((frozenset((a, b)), "adjacent" if frozenset((a, b)) in adjacent else "rigid", ""))
    return out


def test_info_lists_groups_end_effectors_and_allowed_pairs_with_their_reason(daemon: support.Daemon,
                                                                          client: Client, tmp_path: Path) -> None:
    srdf = (ROBOTS / "planar_2link.srdf").read_text().replace(
        "</robot>", '<end_effector name="hand" parent_link="lower" group="wrist" parent_group="arm"/></robot>')
    s = client.create_scene(urdf_path=str(ROBOTS / "planar_2link.urdf"), srdf=srdf, allowed_pairs=[("tip", "base")])
    p = support.run_cli(daemon, "info", "--scene", s.scene_id, "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)["scenes"][0]
    groups = {g["name"]: g for g in doc["groups"]}
    assert list(groups) == ["arm", "wrist", "everything"]
    assert groups["arm"]["joints"] == ["shoulder", "elbow"] and groups["arm"]["chains"] == [["base", "tip"]]
    assert groups["wrist"]["joints"] == ["elbow"] and groups["wrist"]["member_joints"] == ["elbow"]
    assert groups["everything"]["subgroups"] == ["arm"] and groups["everything"]["links"] == ["lower"]
    assert groups["everything"]["joints"] == ["shoulder", "elbow"]
    assert doc["end_effectors"] == [{"name": "hand", "group": "wrist", "parent_link": "lower", "parent_group": "arm"}]
    got = {(frozenset((q["first"], q["second"])), q["reason"], q["srdf_reason"]) for q in doc["allowed_pairs"]}
    want = expected_allowed_pairs(ROBOTS / "planar_2link.urdf") | {
        (frozenset(("base", "lower")), "srdf", "Never"), (frozenset(("tip", "base")), "user", "")}
    assert got == want and len(doc["allowed_pairs"]) == len(want)
    text = support.run_cli(daemon, "info", "--scene", s.scene_id)
    assert text.returncode == 0, text.stderr
    for line in ("group      arm: shoulder, elbow (chain base -> tip)", "group      everything: shoulder, elbow (group arm)",
                 "effector   hand: group wrist on link lower (parent group arm)", "base x lower: srdf (Never)",
                 "tip x base: user", "base x upper: adjacent", "5 pair(s) not checked"):
        assert line in text.stdout, text.stdout
    # Rigid pairs (through fixed joints only) without an SRDF: the oracle from the URDF's XML.
    chain = tmp_path / "chain.urdf"
    chain.write_text("""<robot name="chain"><link name="a"/><link name="b"/><link name="c"/><link name="d"/>
      <joint name="ab" type="fixed"><parent link="a"/><child link="b"/></joint>
      <joint name="bc" type="fixed"><parent link="b"/><child link="c"/></joint>
      <joint name="cd" type="revolute"><parent link="c"/><child link="d"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>""")
    mixed = client.create_scene(urdf=chain.read_text())
    doc = json.loads(support.run_cli(daemon, "info", "--scene", mixed.scene_id, "--json").stdout)["scenes"][0]
    got = {(frozenset((q["first"], q["second"])), q["reason"], q["srdf_reason"]) for q in doc["allowed_pairs"]}
    want = expected_allowed_pairs(chain)
    assert any(r == "rigid" for _, r, _ in want) and got == want
    assert doc["groups"] == [] and doc["end_effectors"] == []


def test_validate_and_check_states_for_a_group(daemon: support.Daemon, client: Client, tmp_path: Path) -> None:
    """`--group`: the file gives the group's joints and --state the others. A box on the upper link's line at
    shoulder = 0 makes the same elbow-only path collide at shoulder 0 and keep free at shoulder 1.5."""
    from proximity_client import geometry
    s = client.create_scene(urdf_path=str(ROBOTS / "planar_2link.urdf"), srdf_path=str(ROBOTS / "planar_2link.srdf"),
                            objects=[geometry.collision_object("barrier", [geometry.box([0.1, 0.1, 0.1])],
                                                               at=[0.5, 0.0, 0.1])])
    elbow = np.array([[-1.0], [0.0], [1.0]])
    path = tmp_path / "elbow.csv"
    path.write_text("elbow\n" + "\n".join(repr(float(v)) for v in elbow[:, 0]) + "\n")
    assert client.check_path(np.hstack([np.full((3, 1), 1.5), elbow]), scene=s.scene_id).free
    assert not client.check_path(np.hstack([np.zeros((3, 1)), elbow]), scene=s.scene_id).free
    ok = support.run_cli(daemon, "validate", "--scene", s.scene_id, str(path), "--group", "wrist", "--state=1.5,0",
                         "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["group"] == "wrist" and json.loads(ok.stdout)["valid"] == 1
    bad = support.run_cli(daemon, "validate", "--scene", s.scene_id, str(path), "--group", "wrist", "--state=0,0")
    assert bad.returncode == 1 and "INVALID" in bad.stdout and "barrier" in bad.stdout, bad.stdout
    # The default state (shoulder 0) for the joints outside the group: the barrier again.
    assert support.run_cli(daemon, "validate", "--scene", s.scene_id, str(path), "--group", "wrist").returncode == 1
    # States: unnamed rows in the group's joint order.
    states = tmp_path / "states.npy"
    np.save(states, elbow)
    c = support.run_cli(daemon, "check-states", "--scene", s.scene_id, str(states), "--group", "wrist",
                        "--state=shoulder=1.5,elbow=0", "--json")
    assert c.returncode == 0 and json.loads(c.stdout)["free"] == 3, (c.stdout, c.stderr)
    c = support.run_cli(daemon, "check-states", "--scene", s.scene_id, str(states), "--group", "wrist",
                        "--state=0,0", "--json")
    assert c.returncode == 1 and json.loads(c.stdout)["free"] == 0, c.stdout
    # A file that moves a joint outside the group, an unknown group: refused naming them.
    moving = tmp_path / "moving.csv"
    moving.write_text("shoulder,elbow\n1.5,0\n1.4,0.5\n")
    m = support.run_cli(daemon, "validate", "--scene", s.scene_id, str(moving), "--group", "wrist")
    assert m.returncode == 2 and "joint shoulder is not in group 'wrist'" in m.stderr, m.stderr
    u = support.run_cli(daemon, "validate", "--scene", s.scene_id, str(path), "--group", "legs")
    assert u.returncode == 2 and "'legs'" in u.stderr and "arm, wrist, everything" in u.stderr, u.stderr


WAM = Path("/usr/share/doc/dart/data/urdf/wam")


@pytest.mark.skipif(not (WAM / "wam.urdf").is_file(), reason="Debian dart-doc's WAM is not installed")
def test_srdf_suggest_then_create_the_scene(daemon: support.Daemon, client: Client, tmp_path: Path) -> None:
    """`proximity-scene srdf suggest` writes an SRDF that `proximity scene create` loads; the scene's info lists
    the suggested pairs with their reasons, and random states go from none free to mostly free."""
    out = tmp_path / "wam.srdf"
    p = subprocess.run([str(support.SCENE_TOOL), "srdf", "suggest", "--urdf", str(WAM / "wam.urdf"), "--package",
                        f"herb_description={WAM}", "--out", str(out), "--samples", "300", "--seed", "5"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    assert summary["states"] == 301 and out.is_file()
    verdicts = {(q["link1"], q["link2"]): q["reason"] for q in summary["pairs"]}
    assert verdicts[("/wam1", "/wam3")] == "Always" and verdicts[("/wam4", "/wam6")] == "Always"
    bare = client.create_scene(urdf_path=str(WAM / "wam.urdf"), package_dirs={"herb_description": str(WAM)})
    c = support.run_cli(daemon, "scene", "create", "--urdf", str(WAM / "wam.urdf"), "--srdf", str(out), "--package",
                        f"herb_description={WAM}", "--json")
    assert c.returncode == 0, c.stderr
    scene = json.loads(c.stdout)
    assert scene["warnings"] == []
    info = json.loads(support.run_cli(daemon, "info", "--scene", scene["scene_id"], "--json").stdout)["scenes"][0]
    listed = {(q["first"], q["second"]): q for q in info["allowed_pairs"]}
    for (a, b), reason in verdicts.items():
        if reason in ("Always", "Never"):
            assert listed[(a, b)]["reason"] == "srdf" and listed[(a, b)]["srdf_reason"] == reason, (a, b)
        elif reason == "":
            assert (a, b) not in listed and (b, a) not in listed
    states = bare.sample(500, np.random.default_rng(8))
    assert not client.check_states(states, scene=bare.scene_id).any()
    assert client.check_states(states, scene=scene["scene_id"]).mean() > 0.5
    # Errors name what is wrong and exit 2.
    for args, needle in ((["--urdf", str(tmp_path / "none.urdf")], "none.urdf"),
                         (["--urdf", str(WAM / "wam.urdf"), "--package", "herb_description"], "NAME=DIR"),
                         (["--urdf", str(WAM / "wam.urdf")], "herb_description")):
        e = subprocess.run([str(support.SCENE_TOOL), "srdf", "suggest", *args, "--out", str(tmp_path / "x.srdf")],
                           capture_output=True, text=True, timeout=300)
        assert e.returncode != 0 and needle in e.stderr, (args, e.stderr)
