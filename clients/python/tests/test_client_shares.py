"""Named clients and their shares of the scene store, against real proximityd processes.

An --auth-token-file of `NAME TOKEN` lines names each caller. A named client owns the scenes it creates
(or re-creates, or makes with UpdateWorld); --max-scenes-per-client and --max-memory-mb-per-client hold
it to a share, made room for only among its own least recently used scenes, and with them set the global
--max-scenes and --max-memory-mb never evict another client's scene for it either (RESOURCE_EXHAUSTED
instead). A scene two clients own stays loaded while one of them owns it; DeleteScene gives up the
caller's own ownership (PERMISSION_DENIED for a scene it does not own). The Prometheus text shows each
client's scenes and bytes, and each call's log line its client. Malformed token files stop the daemon
at start (exit 2) naming the line, never printing a token; a single-token file means what it always did.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict, List

import numpy as np
import pytest

import support
from proximity_client import Client, NotFoundError, ResourceExhaustedError, geometry
from proximity_client.errors import PermissionDeniedError, UnauthenticatedError

TOKENS = {"alice": "alice-" + "a1" * 12, "bob": "bob-" + "b2" * 12}

#: A sphere sliding along x: a robot of one primitive, so a scene costs little beyond its objects.
SLIDER = """<robot name="slider"><link name="base"/>
  <link name="tool"><collision><geometry><sphere radius="0.05"/></geometry></collision></link>
  <joint name="x" type="prismatic"><parent link="base"/><child link="tool"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def _token_file(tmp_path: Path, text: str, name: str = "tokens") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _named_tokens(tmp_path: Path) -> Path:
    return _token_file(tmp_path, "# proximityd clients\n\n" +
                       "".join(f"{name}   {token}\n" for name, token in TOKENS.items()))


def _client(d: support.Daemon, name: str) -> Client:
    # No re-sending: a scene evicted here must stay evicted for the checks below.
    return d.client(token=TOKENS[name], auto_restore=False)


def _box_scene(c: Client, x: float) -> str:
    """A cheap scene of its own content: the slider and one box at x."""
    box = geometry.collision_object("box", [geometry.box([0.1, 0.1, 0.1])], at=[x, 0.5, 0.0])
    return c.create_scene(urdf=SLIDER, objects=[box]).scene_id


def _soup_scene(c: Client, n_tri: int, x: float, seed: int) -> str:
    """A scene whose bytes are mostly one inline mesh of `n_tri` triangles (with its hierarchy)."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(-0.05, 0.05, (3 * n_tri, 3))
    part = geometry.mesh(v, np.arange(3 * n_tri).reshape(n_tri, 3))
    return c.create_scene(urdf=SLIDER, objects=[geometry.collision_object("soup", [part], at=[x, 0.5, 0.0])]).scene_id


def _loaded(c: Client) -> List[str]:
    return [s.scene_id for s in c.list_scenes()]


def _metrics(d: support.Daemon) -> Dict[str, Dict[str, float]]:
    """{sample name: {client label: value}} for the per-client gauges, and the eviction counter."""
    samples = support.metric_samples(support.fetch(d.metrics_url))
    out: Dict[str, Dict[str, float]] = {}
    for name in ("proximity_client_scenes", "proximity_client_scene_bytes"):
        out[name] = {s.labels["client"]: s.value for s in samples.get(name, [])}
    out["evictions"] = {"": sum(s.value for s in samples.get("proximity_scene_evictions_total", []))}
    return out


def test_a_client_over_its_scene_share_evicts_only_its_own(tmp_path: Path) -> None:
    with support.Daemon("--auth-token-file", str(_named_tokens(tmp_path)), "--max-scenes-per-client", "3") as d, \
            _client(d, "alice") as a, _client(d, "bob") as b:
        a.wait_until_serving()
        bobs = [_box_scene(b, 0.30), _box_scene(b, 0.31)]
        alices = []
        for i in range(6):
            alices.append(_box_scene(a, 0.50 + 0.01 * i))
        loaded = set(_loaded(a))
        assert set(bobs) <= loaded, "bob's scenes were evicted for alice's"
        assert set(alices[3:]) <= loaded, "alice's newest scenes should stay"
        assert not set(alices[:3]) & loaded, "alice's three oldest scenes should have given way"
        assert a.get_scene("default").scene_id in loaded
        m = _metrics(d)
        assert m["proximity_client_scenes"] == {"alice": 3, "bob": 2}
        assert m["proximity_client_scene_bytes"]["alice"] > 0 and m["proximity_client_scene_bytes"]["bob"] > 0
        assert m["evictions"][""] == 3
        # Queries on any loaded scene stay open to every client.
        assert b.check_state(np.zeros(1), scene=alices[-1]).free is not None
        # Each call's log line names its client.
        assert len(d.log_records(rpc="CreateScene", client="alice")) == 6
        assert len(d.log_records(rpc="CreateScene", client="bob")) == 2


def test_a_client_over_its_memory_share_evicts_only_its_own(tmp_path: Path) -> None:
    with support.Daemon("--auth-token-file", str(_named_tokens(tmp_path)), "--max-memory-mb-per-client", "2") as d, \
            _client(d, "alice") as a, _client(d, "bob") as b:
        a.wait_until_serving()
        # About 0.5 MiB a scene (1,000 triangles with their hierarchy): a share of 2 MiB holds three or four.
        bobs = [_soup_scene(b, 1000, 0.30 + 0.01 * i, seed=100 + i) for i in range(2)]
        bob_bytes = _metrics(d)["proximity_client_scene_bytes"]["bob"]
        assert 0 < bob_bytes <= 2 * 2**20
        alices = [_soup_scene(a, 1000, 0.50 + 0.01 * i, seed=i) for i in range(10)]
        m = _metrics(d)
        assert 0 < m["proximity_client_scene_bytes"]["alice"] <= 2 * 2**20
        assert m["proximity_client_scene_bytes"]["bob"] == bob_bytes
        assert m["evictions"][""] > 0
        loaded = set(_loaded(a))
        assert set(bobs) <= loaded, "bob's scenes were evicted for alice's"
        assert alices[-1] in loaded and alices[0] not in loaded
        assert 2 <= m["proximity_client_scenes"]["alice"] == len(set(alices) & loaded) <= 4
        # A scene larger than a whole share: refused naming the flag, nothing evicted for it.
        with pytest.raises(ResourceExhaustedError) as e:
            _soup_scene(a, 8000, 0.9, seed=99)
        assert "--max-memory-mb-per-client" in e.value.details and "alice" in e.value.details
        assert set(_loaded(a)) == loaded


def test_the_global_scene_limit_never_evicts_another_clients_scene(tmp_path: Path) -> None:
    with support.Daemon("--auth-token-file", str(_named_tokens(tmp_path)), "--max-scenes", "4",
                        "--max-scenes-per-client", "3") as d, _client(d, "alice") as a, _client(d, "bob") as b:
        a.wait_until_serving()
        bobs = [_box_scene(b, 0.30 + 0.01 * i) for i in range(3)]  # with the built-in scene: the server is full
        with pytest.raises(ResourceExhaustedError) as e:
            _box_scene(a, 0.50)
        assert "--max-scenes" in e.value.details and "--max-scenes-per-client" not in e.value.details
        assert set(bobs) <= set(_loaded(a)), "bob's scene was evicted for alice's"
        assert _metrics(d)["evictions"][""] == 0
        # Once there is room, alice's own scenes give way to her next ones, bob's still never.
        b.delete_scene(bobs[0])
        first = _box_scene(a, 0.50)
        second = _box_scene(a, 0.51)
        loaded = set(_loaded(a))
        assert second in loaded and first not in loaded
        assert set(bobs[1:]) <= loaded
        assert _metrics(d)["proximity_client_scenes"] == {"alice": 1, "bob": 2}


def test_a_scene_two_clients_created_survives_one_clients_evictions(tmp_path: Path) -> None:
    # The per-client limit from the YAML config this time.
    config = tmp_path / "proximityd.yaml"
    config.write_text(f"auth-token-file: {_named_tokens(tmp_path)}\nmax-scenes-per-client: 2\n")
    with support.Daemon("--config", str(config)) as d, _client(d, "alice") as a, _client(d, "bob") as b:
        a.wait_until_serving()
        shared = _box_scene(a, 0.40)
        again = b.create_scene(urdf=SLIDER, objects=[geometry.collision_object(
            "box", [geometry.box([0.1, 0.1, 0.1])], at=[0.40, 0.5, 0.0])])
        assert again.scene_id == shared and not again.created
        assert _metrics(d)["proximity_client_scenes"] == {"alice": 1, "bob": 1}
        mine = [_box_scene(a, 0.50), _box_scene(a, 0.51)]  # alice lets go of the shared scene, least recently used
        loaded = set(_loaded(a))
        assert shared in loaded, "a scene bob owns was unloaded for alice"
        assert set(mine) <= loaded
        m = _metrics(d)
        assert m["proximity_client_scenes"] == {"alice": 2, "bob": 1}
        assert m["evictions"][""] == 0  # nothing was unloaded
        third = _box_scene(a, 0.52)  # now one only alice owns goes
        loaded = set(_loaded(a))
        assert shared in loaded and third in loaded and mine[0] not in loaded
        assert _metrics(d)["evictions"][""] == 1
        # Alice no longer owns the shared scene: it is bob's to delete.
        with pytest.raises(PermissionDeniedError):
            a.delete_scene(shared)
        b.delete_scene(shared)
        assert shared not in set(_loaded(a))
        assert _metrics(d)["proximity_client_scenes"] == {"alice": 2, "bob": 0}


def test_delete_scene_gives_up_the_callers_own_ownership(tmp_path: Path) -> None:
    with support.Daemon("--auth-token-file", str(_named_tokens(tmp_path))) as d, \
            _client(d, "alice") as a, _client(d, "bob") as b:
        a.wait_until_serving()
        scene = _box_scene(a, 0.40)
        a.name_scene("cell", scene=scene)
        # Bob may query it and build on it, but not delete it.
        assert b.check_state(np.zeros(1), scene=scene).free is not None
        with pytest.raises(PermissionDeniedError) as e:
            b.delete_scene(scene)
        assert "bob" in e.value.details
        moved = b.update_world(move={"box": [0.45, 0.5, 0.0]}, scene=scene).scene_id  # bob's own version
        assert _metrics(d)["proximity_client_scenes"] == {"alice": 1, "bob": 1}
        with pytest.raises(PermissionDeniedError):
            a.delete_scene(moved)
        # The built-in scene belongs to nobody.
        with pytest.raises(PermissionDeniedError):
            a.delete_scene("default")
        # Both own it: alice's delete leaves it loaded (with its name) for bob.
        _box_scene(b, 0.40)
        a.delete_scene(scene)
        assert scene in set(_loaded(a)) and b.get_scene("cell").scene_id == scene
        with pytest.raises(PermissionDeniedError):
            a.delete_scene(scene)
        b.delete_scene("cell")  # by its name: the last owner unloads it
        assert scene not in set(_loaded(a))
        with pytest.raises(NotFoundError):
            b.delete_scene(scene)
        b.delete_scene(moved)
        assert set(_loaded(a)) == {a.get_scene("default").scene_id}
        assert _metrics(d)["proximity_client_scenes"] == {"alice": 0, "bob": 0}
        assert _metrics(d)["proximity_client_scene_bytes"] == {"alice": 0, "bob": 0}
        # Unknown tokens are still refused.
        with d.client(token="carol-" + "c3" * 12) as stranger, pytest.raises(UnauthenticatedError):
            stranger.list_scenes()


@pytest.mark.parametrize("text, line, why", [
    (f"alice {TOKENS['alice']}\nbob {TOKENS['bob']}\nalice {'x' * 20}\n", 3, "named already on line 1"),
    (f"alice {TOKENS['alice']}\n# a comment\n\nbob short-secret\n", 4, "16 characters"),
    (f"al/ice {TOKENS['alice']}\n", 1, "client name"),
    (f"{'n' * 65} {TOKENS['alice']}\n", 1, "client name"),
    (f"alice {TOKENS['alice']}\nbob {TOKENS['alice']}\n", 2, "same token"),
    (f"alice {TOKENS['alice']} {TOKENS['bob']}\n", 1, "NAME TOKEN"),
    (f"alice {TOKENS['alice']}\n{TOKENS['bob']}\n", 2, "NAME TOKEN"),
    (f"{TOKENS['alice']}\nbob {TOKENS['bob']}\n", 2, "single token"),
], ids=["duplicate-name", "short-token", "bad-name", "long-name", "duplicate-token", "three-words", "one-word",
        "token-then-names"])
def test_malformed_token_files_stop_the_daemon_naming_the_line(tmp_path: Path, text: str, line: int,
                                                               why: str) -> None:
    path = _token_file(tmp_path, text)
    p = subprocess.run([str(support.DAEMON), "--listen", "127.0.0.1:0", "--metrics-listen", "",
                        "--auth-token-file", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert f"line {line}:" in p.stderr and why in p.stderr, p.stderr
    for secret in (*TOKENS.values(), "short-secret", "x" * 20):
        assert secret not in p.stderr, "a token was printed"


def test_a_token_file_of_comments_only_stops_the_daemon(tmp_path: Path) -> None:
    path = _token_file(tmp_path, "# nothing yet\n\n")
    p = subprocess.run([str(support.DAEMON), "--listen", "127.0.0.1:0", "--metrics-listen", "",
                        "--auth-token-file", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "no token" in p.stderr, p.stderr


def test_a_single_token_file_keeps_one_client_for_everyone(tmp_path: Path) -> None:
    token = "t0ken-" + "9f" * 16
    path = _token_file(tmp_path, token + "\n")
    # The per-client limit needs named clients: every caller here is the same one, held to --max-scenes only.
    with support.Daemon("--auth-token-file", str(path), "--max-scenes", "3", "--max-scenes-per-client", "1") as d, \
            d.client(token=token, auto_restore=False) as c, d.client(token=token, auto_restore=False) as other:
        c.wait_until_serving()
        assert "named clients only" in d.stderr_text()
        default = c.get_scene("default").scene_id
        first = _box_scene(c, 0.50)
        second = _box_scene(other, 0.51)
        assert set(_loaded(c)) == {default, first, second}
        third = _box_scene(c, 0.52)  # the global limit evicts the least recently used, whoever made it
        assert set(_loaded(c)) == {default, second, third}
        other.delete_scene(third)  # anyone deletes any scene, as before
        assert set(_loaded(c)) == {default, second}
        text = support.fetch(d.metrics_url)
        assert "proximity_client_scenes" not in text
        assert not [r for r in d.log_records(rpc="CreateScene") if "client" in r]
        with d.client(token=token[:-1]) as wrong, pytest.raises(UnauthenticatedError):
            wrong.list_scenes()
