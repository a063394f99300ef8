"""ComputeContacts and ComputeSignedDistance against a real proximityd: every colliding pair with depth,
normal and points (agreeing with CLEAR), closed-form depths on a scene of primitives, signed distance of
named pairs, the `contacts` and `signed-distance` CLI commands, and bad input named."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import support
from proximity_client import Client, InvalidArgumentError, SceneInfo, geometry

SLIDER = """<robot name="slider"><link name="base"/>
  <link name="tool"><collision><geometry><sphere radius="0.3"/></geometry></collision></link>
  <joint name="x" type="prismatic"><parent link="base"/><child link="tool"/><axis xyz="1 0 0"/>
    <limit lower="-5" upper="5" effort="1" velocity="1"/></joint></robot>"""


@pytest.fixture(scope="module")
def slider(client: Client) -> str:
    """A sphere of radius 0.3 sliding along x, a ball of radius 0.2 at x = 0.4 and a box face at x = -0.5."""
    objects = [geometry.collision_object("ball", [geometry.sphere(0.2, geometry.pose((0.4, 0.0, 0.0)))]),
               geometry.collision_object("wall", [geometry.box((0.4, 2.0, 2.0), geometry.pose((-0.7, 0.0, 0.0)))])]
    return client.create_scene(urdf=SLIDER, objects=objects).scene_id


def test_contacts_agree_with_clear_on_the_default_scene(client: Client, info: SceneInfo, rng) -> None:
    qs = info.sample(60, rng)
    colliding = 0
    for q in qs:
        state = client.check_state(q, scene="default")
        r = client.contacts(q, scene="default")
        assert r.free == state.free
        if state.free:
            continue
        colliding += 1
        names = {(c.pair.robot, c.pair.other) for c in r.contacts}
        assert (state.contact.robot, state.contact.other) in names
        depths = [c.depth for c in r.contacts]
        assert depths == sorted(depths, reverse=True)
        for c in r.contacts:
            assert c.depth_lower <= c.depth <= c.depth_upper
            assert c.depth > -1e-9 and abs(np.linalg.norm(c.normal) - 1.0) < 1e-9
            assert c.points.shape[1] == 3 and len(c.points) >= 1
    assert colliding > 0


def test_closed_form_depths_and_signed_distance(client: Client, slider: str) -> None:
    for x in (0.0, 0.05, -0.08):
        r = client.contacts([x], scene=slider)
        assert [c.pair.other for c in r.contacts] == ["ball"]
        c = r.contacts[0]
        assert c.depth == pytest.approx(0.5 - (0.4 - x), abs=1e-9)
        assert np.allclose(c.normal, [1, 0, 0], atol=1e-9) and c.method == "convex"
        d = client.signed_distance("tool", "ball", [x], scene=slider)
        assert d.distance == pytest.approx(-(0.5 - (0.4 - x)), abs=1e-9)
    # The wall's face is at x = -0.5: the sphere centred at -0.3 sinks 0.1 into it.
    r = client.contacts([-0.3], scene=slider)
    assert [c.pair.other for c in r.contacts] == ["wall"]
    assert r.contacts[0].depth == pytest.approx(0.1, abs=1e-9)
    assert np.allclose(r.contacts[0].normal, [-1, 0, 0], atol=1e-9)
    # Apart: positive, either name first.
    d = client.signed_distance("ball", "tool", [-0.2], scene=slider)
    assert d.distance == pytest.approx(0.1, abs=1e-9) and d.pair.robot == "tool"
    assert client.contacts([-0.15], scene=slider).free


def test_bad_input_is_named(client: Client, slider: str) -> None:
    with pytest.raises(InvalidArgumentError, match="second 'nope'"):
        client.signed_distance("tool", "nope", [0.0], scene=slider)
    with pytest.raises(InvalidArgumentError, match="both world objects"):
        client.signed_distance("ball", "wall", [0.0], scene=slider)
    with pytest.raises(InvalidArgumentError, match="max_pairs"):
        client.contacts([0.0], max_pairs=100_000, scene=slider)
    with pytest.raises(InvalidArgumentError):
        client.contacts([0.0, 1.0], scene=slider)


def test_cli_contacts_and_signed_distance(daemon: support.Daemon, client: Client, slider: str) -> None:
    proc = support.run_cli(daemon, "contacts", "--state=0.05", "--scene", slider, "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["robot"] == "slider" and doc["scene"] == slider and not doc["free"]
    assert doc["contacts"][0]["other"] == "ball"
    assert doc["contacts"][0]["depth"] == pytest.approx(0.15, abs=1e-9)
    text = support.run_cli(daemon, "contacts", "--state=0.05", "--scene", slider)
    assert text.returncode == 1 and "robot slider" in text.stdout and "tool x ball (world): depth 150.000 mm" \
        in text.stdout, text.stdout
    free = support.run_cli(daemon, "contacts", "--state=-0.15", "--scene", slider)
    assert free.returncode == 0 and "free" in free.stdout
    sd = support.run_cli(daemon, "signed-distance", "tool", "ball", "--state=-0.2", "--scene", slider, "--json")
    assert sd.returncode == 0, sd.stderr
    assert json.loads(sd.stdout)["distance"] == pytest.approx(0.1, abs=1e-9)
    bad = support.run_cli(daemon, "signed-distance", "tool", "nope", "--state=0", "--scene", slider)
    assert bad.returncode == 2 and "second 'nope'" in bad.stderr
