"""The viewer in a real browser: headless Debian chromium, driven by python3-selenium, loads /viewer from a
real proximityd, draws a non-empty canvas, and its scene graph (window.proximityViewer.scene) holds the
robot's links at the requested state, checked against the urdf_fk oracle; a colliding state and a path
show their contact; an exported .glb reloads in three.js's own GLTFLoader with the same link transforms.

Needs the Debian packages chromium, chromium-driver and python3-selenium (scripts/setup.sh installs them);
when chromium cannot start, every test skips saying why ("browser tests skipped: ...")."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator

import numpy as np
import pytest

import support
from proximity_client import Client, SceneInfo
from urdf_fk import UrdfChain, pose_matrix

KR5 = Path(support.KR5_URDF)
THREE_DIR = Path("/usr/share/javascript/three")
GLTF_LOADER = THREE_DIR / "examples" / "js" / "loaders" / "GLTFLoader.js"
SKIP = "browser tests skipped: "

WAIT_IDLE = """
const done = arguments[arguments.length - 1];
(function wait() {
  if (window.proximityViewer) {
    window.proximityViewer.whenIdle().then(done, (e) => done({error: String(e)}));
  } else if (document.readyState === 'complete' && !window.proximityViewer) {
    done({error: 'the page did not define window.proximityViewer'});
  } else {
    setTimeout(wait, 50);
  }
})();
"""

# Pixels of the WebGL canvas that are not the white background, and how many colours they have.
CANVAS_PIXELS = """
const v = window.proximityViewer;
v.render();
const c = v.renderer.domElement;
const off = document.createElement('canvas');
off.width = c.width; off.height = c.height;
const ctx = off.getContext('2d');
ctx.drawImage(c, 0, 0);
const d = ctx.getImageData(0, 0, c.width, c.height).data;
let drawn = 0;
const colours = new Set();
for (let i = 0; i < d.length; i += 4) {
  if (d[i] < 245 || d[i + 1] < 245 || d[i + 2] < 245) {
    drawn++;
    colours.add((d[i] >> 3) << 10 | (d[i + 1] >> 3) << 5 | d[i + 2] >> 3);
  }
}
return {width: c.width, height: c.height, drawn: drawn, colours: colours.size};
"""


def start_chromium(profile: str) -> Any:
    try:
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.options import Options
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip(SKIP + "python3-selenium is not installed (apt-get install python3-selenium)")
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip(SKIP + "chromium or chromium-driver is not installed (apt-get install chromium chromium-driver)")
    options = Options()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=900,650",
                "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist",
                "--disable-extensions", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    try:
        browser = webdriver.Chrome(service=Service(driver), options=options)
    except WebDriverException as e:
        pytest.skip(SKIP + f"chromium did not start: {(e.msg or str(e)).splitlines()[0]}")
    browser.set_script_timeout(120)
    browser.set_page_load_timeout(60)
    return browser


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with tempfile.TemporaryDirectory(prefix="proximity-chromium-") as profile:
        b = start_chromium(profile)
        try:
            yield b
        finally:
            b.quit()


def open_viewer(browser: Any, daemon: support.Daemon, **params: str) -> Dict[str, Any]:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    browser.get(f"http://127.0.0.1:{daemon.metrics_port}/viewer?{query}")
    status = browser.execute_async_script(WAIT_IDLE)
    if status.get("error") and "WebGL" in status["error"]:
        pytest.skip(SKIP + status["error"])
    assert not status.get("error"), status
    return status


def row(q: np.ndarray) -> str:
    return ",".join(repr(float(v)) for v in q)


def expected_poses(client: Client, info: SceneInfo, q: np.ndarray) -> Dict[str, np.ndarray]:
    base = pose_matrix(client.link_poses(q).base_pose)
    return UrdfChain(KR5).link_poses(dict(zip(info.joint_names, q)), base)


def assert_scene_graph_at(browser: Any, client: Client, info: SceneInfo, q: np.ndarray) -> None:
    graph = browser.execute_script("return window.proximityViewer.linkPoses();")
    assert sorted(graph) == sorted(info.link_names)
    want = expected_poses(client, info, q)
    for name, pose in graph.items():
        got = pose_matrix(np.array(pose["position"] + pose["quaternion"]))
        assert np.allclose(got, want[name], atol=1e-6), (name, got, want[name])


@pytest.fixture(scope="module")
def states(client: Client, info: SceneInfo) -> Dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    qs = info.sample(3000, rng)
    r = client.check_states(qs, include_contacts=True)
    world = next(i for i, p in sorted(r.contacts.items()) if not p.self_collision)
    return {"free": qs[np.flatnonzero(r.free)[0]], "colliding": qs[world]}


def test_viewer_draws_the_scene_at_the_requested_state(browser, daemon, client, info, states) -> None:
    q = states["free"]
    open_viewer(browser, daemon, scene="default", q=row(q))
    pixels = browser.execute_script(CANVAS_PIXELS)
    assert pixels["width"] > 100 and pixels["height"] > 100
    assert pixels["drawn"] > 0.02 * pixels["width"] * pixels["height"], pixels
    assert pixels["colours"] > 10, pixels  # shaded meshes, not a flat fill
    assert_scene_graph_at(browser, client, info, q)
    listed = browser.execute_script(
        "return Array.from(document.getElementById('scene').options).map((o) => o.value);")
    assert info.scene_id in listed
    objects = browser.execute_script("return Object.keys(window.proximityViewer.objects);")
    assert sorted(objects) == sorted(info.object_ids)
    assert browser.execute_script("return window.proximityViewer.contact;") is None


def test_viewer_shows_the_contact_of_a_colliding_state(browser, daemon, client, info, states) -> None:
    q = states["colliding"]
    open_viewer(browser, daemon, scene=info.scene_id, q=row(q))
    assert_scene_graph_at(browser, client, info, q)
    contact = browser.execute_script("return window.proximityViewer.contact;")
    pair = client.check_state(q).contact
    assert contact["pair"]["robot"] == pair.robot and contact["pair"]["other"] == pair.other
    colours = browser.execute_script("""
      const v = window.proximityViewer, out = {};
      for (const [name, g] of [...Object.entries(v.links), ...Object.entries(v.objects)]) {
        out[name] = [];
        g.traverse((o) => { if (o.isMesh) out[name].push(o.material.color.getHex()); });
      }
      return out;""")
    red = 0xE0302C
    assert colours[pair.robot] and set(colours[pair.robot]) == {red}
    assert colours[pair.other] and set(colours[pair.other]) == {red}
    # Every colliding pair red, nothing else.
    touching = {n for c in client.contacts(q).contacts for n in (c.pair.robot, c.pair.other)}
    assert all((set(c) == {red}) == (n in touching) for n, c in colours.items() if c), colours
    markers = browser.execute_script("""
      const g = window.proximityViewer.scene.getObjectByName('contacts');
      return g ? g.children.map((m) => [m.position.x, m.position.y, m.position.z]) : [];""")
    want = np.vstack([c.points for c in client.contacts(q).contacts])  # every colliding pair's contact points
    assert markers and np.allclose(np.array(markers), want, atol=1e-9)


def test_viewer_shows_a_path_and_its_contact(browser, daemon, client, info, states) -> None:
    start, goal = states["free"], states["colliding"]
    open_viewer(browser, daemon, scene=info.scene_id, path=row(start) + ";" + row(goal))
    path = browser.execute_script("""
      const p = window.proximityViewer.path;
      return {samples: p.samples, contactIndex: p.contactIndex, free: p.result.free, contact: p.contact};""")
    r = client.check_path(np.vstack([start, goal]))
    assert path["free"] == r.free is False
    k = path["contactIndex"]
    assert 0 < k < len(path["samples"])
    np.testing.assert_allclose(path["samples"][k], start + r.motion.t_collide * (goal - start), atol=1e-12)
    assert path["contact"]["pair"]["robot"] == client.check_state(np.array(path["samples"][k])).contact.robot
    # The slider shows the contact first; any sample poses the links where FK says.
    assert_scene_graph_at(browser, client, info, np.array(path["samples"][k]))
    mid = len(path["samples"]) // 3
    browser.execute_script(f"window.proximityViewer.showSample({mid});")
    assert_scene_graph_at(browser, client, info, np.array(path["samples"][mid]))
    assert browser.execute_script("return window.proximityViewer.contact;") is None or mid == k
    # The State field and the status line follow the slider: the sample's values, and whether it is free.
    shown = browser.execute_script("return [document.getElementById('state').value, "
                                   "document.getElementById('status').textContent];")
    np.testing.assert_allclose([float(v) for v in shown[0].split(",")], path["samples"][mid], atol=1e-6)
    free = client.check_state(np.array(path["samples"][mid])).free
    assert f"sample {mid} of {len(path['samples']) - 1}: {'free' if free else 'collides'}" in shown[1], shown[1]


def test_a_large_robot_opened_by_name_draws_and_is_listed_by_name(browser, daemon, client) -> None:
    """The UR5 with its visual meshes as geometry (about 96,000 triangles), opened by its scene name: the
    list selects it and shows the name; the time to the first drawn frame is printed (never asserted)."""
    shared = support.REPO.parent / "shared" / "data" / "robots" / "ur5"
    if not shared.exists():
        pytest.skip("../shared/data (the UR5) is absent")
    info = client.create_scene_from_files(str(shared / "ur_description" / "urdf" / "ur5_robot.urdf"),
                                          package_dirs={"ur_description": str(shared / "ur_description")},
                                          collision_from_visual=True, name="ur5-visual")
    try:
        shows_a_large_robot(browser, daemon, client, info)
    finally:
        client.delete_scene(info.scene_id)  # the other tests' commands find the built-in scene alone


def shows_a_large_robot(browser, daemon, client, info) -> None:
    triangles = client.scene_geometry(scene=info.scene_id).triangles
    assert triangles > 90000
    open_viewer(browser, daemon, scene="ur5-visual")
    pixels = browser.execute_script(CANVAS_PIXELS)
    assert pixels["drawn"] > 0.01 * pixels["width"] * pixels["height"], pixels
    selected = browser.execute_script("const s = document.getElementById('scene'); "
                                      "return [s.value, s.options[s.selectedIndex].textContent];")
    assert selected[0] == info.scene_id and "ur5-visual" in selected[1], selected
    assert browser.execute_script("return document.getElementById('loading').hidden;")
    t = browser.execute_script("return window.proximityViewer.timings;")
    assert t["geometry"] <= t["first_draw"]
    print(f"[ viewer ] {triangles} triangles: geometry received {t['geometry'] / 1e3:.2f} s, first drawn "
          f"{t['first_draw'] / 1e3:.2f} s after the page started loading")


def test_exported_glb_reloads_in_threejs_with_the_link_transforms(browser, daemon, client, info, states,
                                                                 tmp_path) -> None:
    if not GLTF_LOADER.exists():
        pytest.skip(f"three.js's GLTFLoader is not installed at {GLTF_LOADER} (libjs-three)")
    q = states["free"]
    out = tmp_path / "state.glb"
    proc = support.run_cli(daemon, "export", f"--state={row(q)}", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    open_viewer(browser, daemon, scene="default", q=row(q))
    browser.execute_script(GLTF_LOADER.read_text())
    loaded = browser.execute_async_script("""
      const done = arguments[arguments.length - 1];
      const bin = atob(arguments[0]);
      const bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; ++i) bytes[i] = bin.charCodeAt(i);
      new THREE.GLTFLoader().parse(bytes.buffer, '', (gltf) => {
        const out = {};
        gltf.scene.traverse((o) => {
          const x = o.userData || {};
          if (x.kind === 'link' && !x.copy) {
            out[x.name] = {position: o.position.toArray(), quaternion: o.quaternion.toArray(),
                           meshes: o.children.filter((c) => c.isMesh).length};
          }
        });
        done(out);
      }, (e) => done({error: String(e && e.message || e)}));""", base64.b64encode(out.read_bytes()).decode())
    assert "error" not in loaded, loaded
    assert sorted(loaded) == sorted(info.link_names)
    want = expected_poses(client, info, q)
    geometry = client.scene_geometry()
    parts = {g.name: len(g.parts) for g in geometry.links}
    for name, node in loaded.items():
        got = pose_matrix(np.array(node["position"] + node["quaternion"]))
        assert np.allclose(got, want[name], atol=1e-6), name
        assert node["meshes"] == parts[name], name
