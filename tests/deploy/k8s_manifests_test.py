"""deploy/k8s: every manifest parses, and the objects agree with each other and with proximityd.

The checks are functions that return the problems they find, so that the same code is run on the
committed manifests (no problems) and on copies broken on purpose (the problem is named). With a built
proximityd (PROXIMITYD, or PROXIMITY_BUILD_DIR/server/proximityd) the ConfigMap's file is also given to
the real daemon, which must start with it, serve health and drain on SIGTERM.
"""
from __future__ import annotations

import copy
import math
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
BUILD = Path(os.environ.get("PROXIMITY_BUILD_DIR", REPO / "build"))
DAEMON = Path(os.environ.get("PROXIMITYD", BUILD / "server" / "proximityd"))

KINDS = {"ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"}

Manifests = Dict[str, Dict[str, Any]]


def load_manifests(folder: Path = K8S) -> Manifests:
    """kind -> object, one object per file, the file named after its kind."""
    out: Manifests = {}
    for path in sorted(folder.glob("*.yaml")):
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        assert len(docs) == 1, f"{path.name}: one object per file, found {len(docs)}"
        obj = docs[0]
        for field in ("apiVersion", "kind", "metadata"):
            assert field in obj, f"{path.name}: no {field}"
        assert path.stem == obj["kind"].lower(), f"{path.name} holds a {obj['kind']}"
        assert obj["kind"] not in out, f"two {obj['kind']} objects"
        out[obj["kind"]] = obj
    return out


def daemon_config_keys() -> Tuple[set, set]:
    """The keys proximityd's --config accepts and its long flags, read from server/main.cc: each flag of its
    FlagTable (t.Add / t.Flag) is both, and --config is a flag alone."""
    text = (REPO / "server" / "main.cc").read_text()
    keys = set(re.findall(r'\bt\.(?:Add|Flag)\("([a-z0-9-]+)"', text))
    flags = keys | set(re.findall(r'add_(?:option|flag)\("--([a-z0-9-]+)"', text))
    return keys, flags


def health_service_name() -> str:
    m = re.search(r'kServiceName = "([^"]+)"', (REPO / "server" / "server.h").read_text())
    assert m, "server/server.h: no kServiceName"
    return m.group(1)


def dockerfile_user() -> str:
    users = re.findall(r"^USER\s+(\S+)", (REPO / "Dockerfile").read_text(), re.M)
    assert users, "Dockerfile: no USER"
    return users[-1]


def cpu_cores(q: Any) -> float:
    s = str(q)
    return float(s[:-1]) / 1000.0 if s.endswith("m") else float(s)


def mebibytes(q: Any) -> float:
    s = str(q)
    units = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 ** 2, "K": 1e3 / 2 ** 20, "M": 1e6 / 2 ** 20,
             "G": 1e9 / 2 ** 20}
    for u, f in units.items():
        if s.endswith(u):
            return float(s[: -len(u)]) * f
    return float(s) / 2 ** 20


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def daemon_config(m: Manifests) -> Tuple[Dict[str, Any], List[str]]:
    """The proximityd config the Deployment starts with (the ConfigMap file its --config names)."""
    problems: List[str] = []
    pod = m["Deployment"]["spec"]["template"]["spec"]
    c = pod["containers"][0]
    argv = list(c.get("command", [])) + list(c.get("args", []))
    if "--config" not in argv:
        return {}, ["the container does not start proximityd with --config"]
    config_path = Path(argv[argv.index("--config") + 1])
    extra = [a for a in argv[1:] if a not in ("--config", str(config_path))]
    if extra:
        problems.append(f"flags outside the ConfigMap: {extra}")
    mounts = {v["mountPath"]: v["name"] for v in c.get("volumeMounts", [])}
    volume = mounts.get(str(config_path.parent))
    sources = {v["name"]: v for v in pod.get("volumes", [])}
    cm_name = sources.get(volume, {}).get("configMap", {}).get("name")
    if cm_name != m["ConfigMap"]["metadata"]["name"]:
        problems.append(f"{config_path.parent} is not the ConfigMap {m['ConfigMap']['metadata']['name']} "
                        f"(mounted: {volume} -> {cm_name})")
    text = m["ConfigMap"].get("data", {}).get(config_path.name)
    if text is None:
        return {}, problems + [f"the ConfigMap has no key {config_path.name}"]
    return (yaml.safe_load(text) or {}), problems


def check(m: Manifests) -> List[str]:
    """Every inconsistency found, as sentences naming the fields."""
    problems: List[str] = []
    if set(m) != KINDS:
        return [f"objects {sorted(m)}, expected {sorted(KINDS)}"]
    dep, svc, pdb, hpa = m["Deployment"], m["Service"], m["PodDisruptionBudget"], m["HorizontalPodAutoscaler"]
    pod = dep["spec"]["template"]["spec"]
    pod_labels = dep["spec"]["template"]["metadata"].get("labels", {})
    containers = pod["containers"]
    if len(containers) != 1:
        problems.append(f"{len(containers)} containers, expected proximityd alone")
    c = containers[0]

    # Labels and selectors.
    def selects(selector: Dict[str, str], what: str) -> None:
        if not selector or any(pod_labels.get(k) != v for k, v in selector.items()):
            problems.append(f"{what} {selector} does not select the pod labels {pod_labels}")
    selects(dep["spec"]["selector"].get("matchLabels", {}), "Deployment selector")
    selects(svc["spec"].get("selector", {}), "Service selector")
    selects(pdb["spec"]["selector"].get("matchLabels", {}), "PodDisruptionBudget selector")
    for t in pod.get("topologySpreadConstraints", []):
        selects(t["labelSelector"]["matchLabels"], "topologySpreadConstraints selector")
    ref = hpa["spec"]["scaleTargetRef"]
    if (ref.get("kind"), ref.get("name"), ref.get("apiVersion")) != ("Deployment", dep["metadata"]["name"],
                                                                     dep["apiVersion"]):
        problems.append(f"the autoscaler targets {ref}, not Deployment {dep['metadata']['name']}")

    # The daemon's configuration: known keys only.
    cfg, cfg_problems = daemon_config(m)
    problems += cfg_problems
    keys, flags = daemon_config_keys()
    for k in cfg:
        if k not in keys or k not in flags:
            problems.append(f"ConfigMap key {k!r} is not a proximityd flag / config key")
    for k in ("listen", "metrics-listen", "drain-seconds", "max-connection-age-seconds",
              "max-connection-age-grace-seconds", "threads", "max-memory-mb"):
        if k not in cfg:
            problems.append(f"the ConfigMap does not set {k}")
    if problems:
        return problems

    # Ports: the daemon's, the container's, the probes', the Service's, the scrape annotation's.
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    grpc_port, metrics_port = port_of(cfg["listen"]), port_of(cfg["metrics-listen"])
    if cfg["listen"].rsplit(":", 1)[0] in ("127.0.0.1", "localhost", "[::1]"):
        problems.append(f"listen {cfg['listen']} is loopback: nothing outside the pod reaches it")
    if ports.get("grpc") != grpc_port:
        problems.append(f"containerPort grpc {ports.get('grpc')} != listen port {grpc_port}")
    if ports.get("metrics") != metrics_port:
        problems.append(f"containerPort metrics {ports.get('metrics')} != metrics-listen port {metrics_port}")
    annotations = dep["spec"]["template"]["metadata"].get("annotations", {})
    if annotations.get("prometheus.io/port") not in (None, str(metrics_port)):
        problems.append(f"prometheus.io/port {annotations['prometheus.io/port']} != metrics port {metrics_port}")
    for name in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = c.get(name)
        if probe is None or "grpc" not in probe:
            problems.append(f"{name}: no gRPC health probe")
        elif probe["grpc"].get("port") != grpc_port:
            problems.append(f"{name} port {probe['grpc'].get('port')} != gRPC port {grpc_port}")
    readiness = c.get("readinessProbe", {}).get("grpc", {})
    if readiness and readiness.get("service", "") not in ("", health_service_name()):
        problems.append(f"readinessProbe asks health of {readiness['service']!r}, the server reports "
                        f"'' and {health_service_name()!r}")
    svc_ports = {p["name"]: p for p in svc["spec"].get("ports", [])}
    g = svc_ports.get("grpc")
    if g is None:
        problems.append("the Service has no grpc port")
    else:
        target = ports.get(g["targetPort"]) if isinstance(g.get("targetPort"), str) else g.get("targetPort", g["port"])
        # Headless: clients dial pod IPs, so the Service port must be the container's.
        if g["port"] != grpc_port or target != grpc_port:
            problems.append(f"Service grpc port {g['port']} -> {g.get('targetPort')} != gRPC port {grpc_port}")
    if svc["spec"].get("clusterIP") != "None":
        problems.append("the Service is not headless (clusterIP: None): clients could not balance per call")

    # Shutdown: preStop pause + drain within the grace period; aged connections never cut a call.
    pre_stop = c.get("lifecycle", {}).get("preStop", {})
    pause = 0.0
    cmd = pre_stop.get("exec", {}).get("command", [])
    if len(cmd) == 2 and cmd[0] == "sleep":
        pause = float(cmd[1])
    elif "sleep" in pre_stop:
        pause = float(pre_stop["sleep"]["seconds"])
    else:
        problems.append(f"preStop is not a pause ({pre_stop})")
    grace = pod.get("terminationGracePeriodSeconds", 30)
    drain = float(cfg["drain-seconds"])
    if grace < pause + drain + 1:
        problems.append(f"terminationGracePeriodSeconds {grace} < preStop {pause:g} s + drain-seconds {drain:g} + 1 s")
    if not float(cfg["max-connection-age-seconds"]) > 0:
        problems.append("max-connection-age-seconds is off: clients would never re-resolve the Service")
    call = float(cfg.get("max-call-seconds", 300))
    if float(cfg["max-connection-age-grace-seconds"]) < call:
        problems.append(f"max-connection-age-grace-seconds {cfg['max-connection-age-grace-seconds']} < "
                        f"max-call-seconds {call:g}: an aged connection could cut a call")

    # Security: non-root (the image's user), read-only root file system, nothing to escalate.
    sc_pod, sc = pod.get("securityContext", {}), c.get("securityContext", {})
    if not (sc.get("runAsNonRoot", sc_pod.get("runAsNonRoot")) is True):
        problems.append("runAsNonRoot is not true")
    user = sc.get("runAsUser", sc_pod.get("runAsUser"))
    if user in (None, 0) or str(user) != dockerfile_user():
        problems.append(f"runAsUser {user} is not the image's USER {dockerfile_user()}")
    if sc.get("readOnlyRootFilesystem") is not True:
        problems.append("readOnlyRootFilesystem is not true")
    if sc.get("allowPrivilegeEscalation") is not False:
        problems.append("allowPrivilegeEscalation is not false")
    if "ALL" not in sc.get("capabilities", {}).get("drop", []):
        problems.append("capabilities are not all dropped")

    # Resources: requests and limits; the daemon's threads and memory cap fit them.
    res = c.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    for r in ("cpu", "memory"):
        if r not in req or r not in lim:
            problems.append(f"resources: {r} request and limit are both needed")
    if not problems:
        if cpu_cores(req["cpu"]) > cpu_cores(lim["cpu"]) or mebibytes(req["memory"]) > mebibytes(lim["memory"]):
            problems.append(f"requests {req} exceed limits {lim}")
        if int(cfg["threads"]) != math.ceil(cpu_cores(lim["cpu"])):
            problems.append(f"threads {cfg['threads']} != the CPU limit {lim['cpu']}")
        if not 0 < float(cfg["max-memory-mb"]) <= 0.9 * mebibytes(lim["memory"]):
            problems.append(f"max-memory-mb {cfg['max-memory-mb']} leaves less than 10% of the memory limit "
                            f"{lim['memory']} to the process")

    # Replica counts: the autoscaler's range holds the Deployment's start; the budget lets a drain proceed.
    lo, hi = hpa["spec"].get("minReplicas", 1), hpa["spec"]["maxReplicas"]
    if not lo <= dep["spec"].get("replicas", 1) <= hi:
        problems.append(f"Deployment replicas {dep['spec'].get('replicas', 1)} outside the autoscaler's [{lo}, {hi}]")
    if lo < 2:
        problems.append(f"minReplicas {lo}: one replica cannot ride through its own loss")
    budget = pdb["spec"]
    if "maxUnavailable" in budget:
        if int(budget["maxUnavailable"]) < 1:
            problems.append("maxUnavailable < 1 blocks every node drain")
    elif int(budget.get("minAvailable", 0)) >= lo:
        problems.append(f"minAvailable {budget.get('minAvailable')} >= minReplicas {lo} blocks node drains")
    metrics = hpa["spec"].get("metrics", [])
    if not any(x.get("type") == "Resource" and x["resource"]["name"] == "cpu" for x in metrics):
        problems.append("the autoscaler does not scale on CPU")
    return problems


# ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def manifests() -> Manifests:
    return load_manifests()


def test_every_manifest_parses_one_object_per_file(manifests: Manifests) -> None:
    assert set(manifests) == KINDS
    for obj in manifests.values():
        assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == "proximityd"


def test_the_committed_manifests_are_consistent(manifests: Manifests) -> None:
    assert check(manifests) == []


def test_the_config_keys_are_read_from_the_daemon() -> None:
    keys, flags = daemon_config_keys()
    # The parser of main.cc finds the keys this deployment relies on, and flags and keys agree.
    assert {"listen", "drain-seconds", "max-connection-age-seconds", "max-connection-age-grace-seconds"} <= keys
    assert keys - {"config"} <= flags


def _broken(manifests: Manifests, edit) -> List[str]:  # noqa: ANN001
    m = copy.deepcopy(manifests)
    edit(m)
    return check(m)


def _config_edit(key: str, value: Any):  # noqa: ANN202
    def edit(m: Manifests) -> None:
        cfg = yaml.safe_load(m["ConfigMap"]["data"]["proximityd.yaml"])
        if value is None:
            cfg.pop(key)
        else:
            cfg[key] = value
        m["ConfigMap"]["data"]["proximityd.yaml"] = yaml.safe_dump(cfg)
    return edit


def _container(m: Manifests) -> Dict[str, Any]:
    return m["Deployment"]["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("edit, expected", [
    (lambda m: _container(m)["livenessProbe"]["grpc"].update(port=50052), "livenessProbe port 50052"),
    (_config_edit("listen", "0.0.0.0:50099"), "containerPort grpc 50051 != listen port 50099"),
    (_config_edit("listen", "127.0.0.1:50051"), "is loopback"),
    (_config_edit("drain-seconds", 40), "terminationGracePeriodSeconds 35 < preStop 5 s + drain-seconds 40"),
    (_config_edit("max-connection-age-seconds", 0), "max-connection-age-seconds is off"),
    (_config_edit("max-connection-age-grace-seconds", 10), "an aged connection could cut a call"),
    (_config_edit("no-such-flag", 1), "'no-such-flag' is not a proximityd flag"),
    (_config_edit("threads", 8), "threads 8 != the CPU limit"),
    (_config_edit("max-memory-mb", 4096), "max-memory-mb 4096 leaves less than 10%"),
    (lambda m: m["Service"]["spec"]["selector"].update({"app.kubernetes.io/name": "other"}), "Service selector"),
    (lambda m: m["Service"]["spec"].pop("clusterIP"), "not headless"),
    (lambda m: m["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].update(x="y"),
     "PodDisruptionBudget selector"),
    (lambda m: m["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"].update(name="other"), "the autoscaler targets"),
    (lambda m: m["HorizontalPodAutoscaler"]["spec"].update(minReplicas=4), "Deployment replicas 3 outside"),
    (lambda m: _container(m)["securityContext"].update(readOnlyRootFilesystem=False), "readOnlyRootFilesystem"),
    (lambda m: m["Deployment"]["spec"]["template"]["spec"]["securityContext"].update(runAsUser=0), "runAsUser 0"),
    (lambda m: _container(m)["resources"].pop("limits"), "cpu request and limit are both needed"),
    (lambda m: _container(m)["readinessProbe"]["grpc"].update(service="other.Service"), "readinessProbe asks"),
    (lambda m: _container(m).update(args=["--config", "/etc/proximityd/proximityd.yaml", "--threads", "1"]),
     "flags outside the ConfigMap"),
])
def test_a_broken_copy_is_caught(manifests: Manifests, edit, expected: str) -> None:  # noqa: ANN001
    problems = _broken(manifests, edit)
    assert any(expected in p for p in problems), problems


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_daemon_starts_with_the_configmap_and_drains(manifests: Manifests, tmp_path: Path) -> None:
    """The real proximityd reads the ConfigMap's file (every key known, every value valid). Only the
    addresses are overridden (flags win over the file) to free loopback ports."""
    if not DAEMON.exists():
        pytest.skip(f"k8s manifests: the daemon check is skipped: no proximityd at {DAEMON} (build it, or set PROXIMITYD)")
    cfg_file = tmp_path / "proximityd.yaml"
    cfg_file.write_text(manifests["ConfigMap"]["data"]["proximityd.yaml"])
    cfg = yaml.safe_load(cfg_file.read_text())
    port = _free_port()
    proc = subprocess.Popen([str(DAEMON), "--config", str(cfg_file), "--listen", f"127.0.0.1:{port}",
                             "--metrics-listen", f"127.0.0.1:{_free_port()}", "--log-format", "text"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            if "proximityd listening on" in line:
                break
        assert any("proximityd listening on" in x for x in lines), "".join(lines)
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=float(cfg["drain-seconds"]) + 30)
        assert proc.returncode == 0, "".join(lines) + rest
        assert "draining" in rest and f"{float(cfg['drain-seconds']):g}" in rest, rest
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
