"""Scene lifecycle: content-hash ids, the default alias, world updates as new versions, deletion, and the
client's re-sending of its own scenes to a server that answers NOT_FOUND.

Geometric facts used (constructed here, not read from the server): primitives are solids, so a robot
inside a solid sphere of radius 3 m centred on its base collides in every configuration (the KR5 reaches
well under 1 m); the same sphere moved 50 m away changes nothing.
"""
from __future__ import annotations


import grpc
import numpy as np
import pytest

import support
from proximity_client import Client, InvalidArgumentError, NotFoundError, SceneInfo, geometry


@pytest.fixture(scope="module")
def probe(info: SceneInfo) -> np.ndarray:
    return info.sample(400, np.random.default_rng(77))


def _workcell(x: float) -> list:
    """A small world of our own: a wall at x and a sphere overhead."""
    return [geometry.collision_object("wall", [geometry.box((0.05, 2.0, 2.0))], at=(x, 0.0, 0.5)),
            geometry.collision_object("ball", [geometry.sphere(0.1, at=(0.0, 0.0, 0.2))], at=(0.0, 0.0, 1.5))]


def test_default_scene_is_listed_under_its_hash(client: Client, info: SceneInfo) -> None:
    listed = {s.scene_id: s for s in client.list_scenes()}
    assert info.scene_id in listed and info.scene_id != "default"
    assert listed[info.scene_id].joint_names == info.joint_names
    assert client.get_scene(info.scene_id) == info
    assert info.version == 0 and info.dof == 6 and len(info.object_ids) > 0


def test_same_content_same_id(client: Client) -> None:
    a = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6))
    b = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6))
    c = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.61))
    assert a.scene_id == b.scene_id != c.scene_id
    assert a.created is True and b.created is False and c.created is True
    assert set(a.object_ids) == {"wall", "ball"}
    ids = {s.scene_id for s in client.list_scenes()}
    assert {a.scene_id, c.scene_id} <= ids
    # The same content from a second connection (as from another client or replica) gets the same id.
    with Client(client.target) as other:
        assert other.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6)).scene_id == a.scene_id
    client.delete_scene(c.scene_id)
    assert c.scene_id not in {s.scene_id for s in client.list_scenes()}
    with pytest.raises(NotFoundError):
        client.get_scene(c.scene_id)


def test_urdf_text_with_unresolvable_meshes_is_rejected(client: Client) -> None:
    """The dart URDF names its meshes relative to its own file; sent as text, there is no file to resolve
    them against, so the request must fail with a message naming the mesh, and load nothing."""
    before = client.list_scenes()
    text = open(support.KR5_URDF).read()
    with pytest.raises((InvalidArgumentError, NotFoundError)) as e:
        client.create_scene(urdf=text, objects=_workcell(0.6))
    assert ".stl" in e.value.details.lower() or "mesh" in e.value.details.lower(), e.value.details
    assert support.same_scenes(client.list_scenes(), before)


def test_update_world_makes_new_versions(client: Client, info: SceneInfo, probe: np.ndarray) -> None:
    base = client.check_states(probe)
    scenes_before = client.list_scenes()
    enclosing = geometry.collision_object("enclosure", [geometry.sphere(3.0)], at=(0.0, 0.0, 0.3))

    v1 = client.update_world(add=[enclosing], scene=info.scene_id)
    assert v1.scene_id != info.scene_id and v1.version == info.version + 1
    assert v1.parent_scene_id == info.scene_id
    assert set(v1.object_ids) == set(info.object_ids) | {"enclosure"}
    r = client.check_states(probe, include_contacts=True, scene=v1.scene_id)
    assert not r.free.any(), "a robot inside a solid sphere must collide everywhere"
    # The old version is untouched.
    np.testing.assert_array_equal(client.check_states(probe, scene=info.scene_id), base)
    np.testing.assert_array_equal(client.check_states(probe), base)  # the "default" alias stays on v0

    v2 = client.update_world(move={"enclosure": (50.0, 0.0, 0.0)}, scene=v1.scene_id)
    assert v2.version == v1.version + 1 and v2.scene_id not in (v1.scene_id, info.scene_id)
    np.testing.assert_array_equal(client.check_states(probe, scene=v2.scene_id), base)

    v3 = client.update_world(remove=["enclosure"], scene=v2.scene_id)
    assert set(v3.object_ids) == set(info.object_ids) and v3.version == v2.version + 1
    np.testing.assert_array_equal(client.check_states(probe, scene=v3.scene_id), base)

    for s in (v1, v2, v3):
        client.delete_scene(s.scene_id)
    assert support.same_scenes(client.list_scenes(), scenes_before)


def test_update_world_names_the_new_object_in_contacts(client: Client, info: SceneInfo) -> None:
    # The home state is free in the default scene (documented); inside a solid 4 m block around the
    # robot it collides, and the only thing it can touch is the block.
    home = np.zeros(info.dof)
    assert client.check_state(home).free, "the default scene's home state is documented free"
    block = geometry.collision_object("block", [geometry.box((4.0, 4.0, 4.0))], at=(0.0, 0.0, 0.0))
    v = client.update_world(add=[block], scene=info.scene_id)
    r = client.check_state(home, scene=v.scene_id)
    assert not r.free and r.contact is not None and r.contact.other == "block" and not r.contact.self_collision
    client.delete_scene(v.scene_id)


def test_names_stay_on_their_version_unless_the_update_moves_them(client: Client, info: SceneInfo,
                                                                  probe: np.ndarray) -> None:
    v1 = client.update_world(add=_workcell(0.45), scene=info.scene_id)
    assert client.name_scene("cell-a", scene=v1.scene_id).names == ["cell-a"]
    # A plain update: the name stays on the version it was given to.
    v2 = client.update_world(move={"wall": (0.5, 0.0, 0.5)}, scene="cell-a")
    assert v2.names == [] and client.get_scene("cell-a").scene_id == v1.scene_id
    # move_names: the name follows the new version, which has the same id as without it (content alone).
    v3 = client.update_world(move={"wall": (0.6, 0.0, 0.5)}, scene="cell-a", move_names=True)
    assert v3.names == ["cell-a"] and client.get_scene("cell-a").scene_id == v3.scene_id
    assert client.get_scene(v1.scene_id).names == []
    again = client.update_world(move={"wall": (0.6, 0.0, 0.5)}, scene=v1.scene_id)
    assert again.scene_id == v3.scene_id and again.names == ["cell-a"]
    # Queries by name now answer as the newest world.
    np.testing.assert_array_equal(client.check_states(probe, scene="cell-a"),
                                  client.check_states(probe, scene=v3.scene_id))
    for v in (v3, v2, v1):
        client.delete_scene(v.scene_id)


def test_deleted_scene_is_restored_by_its_creator(daemon: support.Daemon, probe: np.ndarray) -> None:
    with daemon.client() as owner, daemon.client() as other:
        s = owner.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.45))
        expect = owner.check_states(probe, scene=s.scene_id)
        child = owner.update_world(move={"wall": (0.5, 0.0, 0.5)}, scene=s.scene_id)
        expect_child = owner.check_states(probe, scene=child.scene_id)
        # Another client removes both (as a restarted replica would have lost them).
        other.delete_scene(child.scene_id)
        other.delete_scene(s.scene_id)
        with pytest.raises(NotFoundError):
            other.check_states(probe, scene=s.scene_id)
        # The owner's call succeeds: it re-sends the scene chain and retries once.
        np.testing.assert_array_equal(owner.check_states(probe, scene=child.scene_id), expect_child)
        np.testing.assert_array_equal(owner.check_states(probe, scene=s.scene_id), expect)
        assert {s.scene_id, child.scene_id} <= {x.scene_id for x in other.list_scenes()}
        # Without auto_restore, NOT_FOUND surfaces.
        other.delete_scene(child.scene_id)
        owner.auto_restore = False
        with pytest.raises(NotFoundError) as e:
            owner.check_state(probe[0], scene=child.scene_id)
        assert e.value.code == grpc.StatusCode.NOT_FOUND
        assert owner.restore_scene(child.scene_id).scene_id == child.scene_id
        # A scene the client did not create cannot be restored by it.
        with pytest.raises(NotFoundError):
            other.restore_scene(child.scene_id)


def test_second_replica_gets_the_scene_on_first_use(daemon: support.Daemon, probe: np.ndarray) -> None:
    """Scale-out: two replicas behind one round-robin target; a scene created through one is sent to
    the other on its first NOT_FOUND, and both give the same answers."""
    with support.Daemon(metrics=False) as replica:
        target = f"ipv4:{daemon.target},{replica.target}"
        with Client(target, timeout=60, round_robin=True) as c:
            s = c.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.55))
            answers = [c.check_states(probe, scene=s.scene_id) for _ in range(6)]
            for a in answers[1:]:
                np.testing.assert_array_equal(a, answers[0])
        with replica.client() as r, daemon.client() as d:
            assert s.scene_id in {x.scene_id for x in r.list_scenes()}
            assert s.scene_id in {x.scene_id for x in d.list_scenes()}
            np.testing.assert_array_equal(r.check_states(probe, scene=s.scene_id), answers[0])


def test_allowed_pairs_hide_an_object(client: Client, info: SceneInfo, probe: np.ndarray) -> None:
    """A solid block around the whole robot, allowed against every link, changes no answer: allowed pairs
    are never checked. Without the allowance every state collides with it."""
    plain = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6))
    block = geometry.collision_object("block", [geometry.box((3.0, 3.0, 3.0))])
    hidden = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6) + [block],
                                 allowed_pairs=[(link, "block") for link in info.link_names])
    shown = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6) + [block])
    np.testing.assert_array_equal(client.check_states(probe, scene=hidden.scene_id),
                                  client.check_states(probe, scene=plain.scene_id))
    assert not client.check_states(probe, scene=shown.scene_id).any()
    assert plain.warnings == [] and hidden.warnings == []
    for s in (plain, hidden, shown):
        client.delete_scene(s.scene_id)


def test_allowed_pairs_naming_unknown_things_warn(client: Client, info: SceneInfo, probe: np.ndarray) -> None:
    """An allowed pair naming neither a link nor an object is accepted (as MoveIt accepts it) and ignored:
    the answers are those of the scene without it, and the scene's warnings name the unknown name."""
    plain = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6))
    ghost = client.create_scene(urdf_path=support.KR5_URDF, objects=_workcell(0.6),
                                allowed_pairs=[(info.link_names[1], "ghost_object")])
    assert len(ghost.warnings) == 1 and "'ghost_object'" in ghost.warnings[0], ghost.warnings
    assert client.get_scene(ghost.scene_id).warnings == ghost.warnings
    np.testing.assert_array_equal(client.check_states(probe, scene=ghost.scene_id),
                                  client.check_states(probe, scene=plain.scene_id))
    for s in (plain, ghost):
        client.delete_scene(s.scene_id)


def test_attached_object_moves_with_its_link(client: Client, info: SceneInfo, probe: np.ndarray) -> None:
    """A solid 3 m sphere carried by the palm (allowed to touch every link) always contains the centre of a
    box 1.6 m from the base, which no link can reach (the KR5 reaches about 0.65 m from its shoulder and
    the palm stays within about 1.2 m of the origin). So every state collides, and every state free
    without the sphere collides through it: the contact names the attached object and the box."""
    table = geometry.collision_object("table", [geometry.box((0.5, 0.5, 0.05))], at=(1.6, 0.0, 0.0))
    plain = client.create_scene(urdf_path=support.KR5_URDF, objects=[table])
    ball = geometry.attached_object("ball", "palm", [geometry.sphere(3.0)], touch_links=info.link_names)
    s = client.create_scene(urdf_path=support.KR5_URDF, objects=[table], attached=[ball])
    assert s.attached_object_ids == ["ball"]
    free_without = client.check_states(probe, scene=plain.scene_id)
    assert free_without.any()
    r = client.check_states(probe, include_contacts=True, scene=s.scene_id)
    assert not r.free.any()
    for i in np.flatnonzero(free_without):
        p = r.contacts[int(i)]
        assert (p.robot, p.other, p.self_collision, p.link) == ("ball", "table", False, "palm")
    client.delete_scene(s.scene_id)
    client.delete_scene(plain.scene_id)
