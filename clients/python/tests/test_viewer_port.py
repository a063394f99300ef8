"""The metrics port (/metrics and the viewer) against slow and hostile clients, on a real proximityd.

* Slow clients: connections that send a request one header line every half second hold no thread, so
  /metrics and /viewer keep answering while they are open, and each is closed once the whole-request
  timeout is up (the hidden --http-request-timeout-seconds shortens it here).
* Crowds: connections beyond the per-address cap are closed as they are accepted, and other addresses
  are still served.
* Other web pages: the viewer's API takes only JSON posts (no form or text/plain post a page can send
  without a CORS preflight), for a Host that names this server (no DNS rebinding) and, when a browser
  says where the page came from, from this server's own origin; --viewer-allowed-host adds names.

The crowding clients bind other loopback addresses (127.0.0.2, 127.0.0.3) before connecting, so that
the per-address cap leaves the checks made from 127.0.0.1 alone. Every loop is bounded in count and time.
"""
from __future__ import annotations

import http.client
import json
import select
import socket
import subprocess
import threading
import time
from typing import Dict, Iterator, List, Tuple

import pytest

import support

#: The whole-request timeout the slow-client daemon runs with, seconds.
REQUEST_TIMEOUT = 6.0
#: The per-address connection cap (HttpServerLimits' default).
PER_ADDRESS_CAP = 32


@pytest.fixture(scope="module")
def slow_daemon() -> Iterator[support.Daemon]:
    d = support.Daemon("--http-request-timeout-seconds", str(REQUEST_TIMEOUT)).start()
    try:
        yield d
    finally:
        d.kill()


def _get(port: int, path: str, timeout: float = 2.0) -> Tuple[int, bytes]:
    """GET `path` from 127.0.0.1 on a fresh connection: (status, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def _post(port: int, method: str, body: Dict, headers: Dict[str, str], timeout: float = 10.0) -> Tuple[int, Dict]:
    """POSTs to the viewer API with exactly these headers (Host included when given): (status, JSON reply)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", f"/viewer/api/{method}", body=json.dumps(body).encode(), headers=headers)
        r = conn.getresponse()
        data = r.read()
        return r.status, json.loads(data) if data else {}
    finally:
        conn.close()


def _closed_by_peer(s: socket.socket) -> bool:
    """Whether a readable socket was closed by the server (end of stream or reset), not sent data."""
    try:
        return s.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def _connect_from(source: str, port: int) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((source, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


# ---- slow clients ---------------------------------------------------------------------------------

def test_slow_clients_neither_starve_the_port_nor_stay(slow_daemon: support.Daemon) -> None:
    port = slow_daemon.metrics_port
    slow: List[socket.socket] = []
    opened: List[float] = []
    stop = threading.Event()
    try:
        for _ in range(16):
            s = _connect_from("127.0.0.2", port)
            opened.append(time.monotonic())
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            slow.append(s)

        def drip() -> None:
            """One more header line on each connection every 0.5 s, until told to stop (or 30 s)."""
            dead = set()
            for n in range(60):
                if stop.wait(0.5):
                    return
                for i, s in enumerate(slow):
                    if i in dead:
                        continue
                    try:
                        s.sendall(f"X-Slow-{n}: {'x' * 16}\r\n".encode())
                    except OSError:
                        dead.add(i)

        dripper = threading.Thread(target=drip, daemon=True)
        dripper.start()

        # While they are open: /metrics and /viewer each answer within 2 s, again and again.
        rounds = 0
        until = time.monotonic() + 4.0
        while time.monotonic() < until and rounds < 20:
            for path in ("/metrics", "/viewer"):
                started = time.monotonic()
                status, body = _get(port, path, timeout=2.0)
                assert status == 200, (path, status, body[:200])
                assert time.monotonic() - started < 2.0, path
            rounds += 1
            time.sleep(0.25)
        assert rounds >= 4
        assert not any(_closed_by_peer(s) for s in select.select(slow, [], [], 0)[0]), \
            "a slow connection was closed before its request timeout"

        # Each is closed by the server once its request timeout is up (plus a margin), none much before.
        closed_at: Dict[int, float] = {}
        deadline = time.monotonic() + REQUEST_TIMEOUT + 5.0
        while len(closed_at) < len(slow) and time.monotonic() < deadline:
            waiting = [s for i, s in enumerate(slow) if i not in closed_at]
            for s in select.select(waiting, [], [], 0.2)[0]:
                if _closed_by_peer(s):
                    closed_at[slow.index(s)] = time.monotonic()
        assert len(closed_at) == len(slow), f"{len(slow) - len(closed_at)} slow connections still open"
        for i, t in closed_at.items():
            held = t - opened[i]
            assert REQUEST_TIMEOUT - 0.5 <= held <= REQUEST_TIMEOUT + 3.0, (i, held)
        # And the port serves as before.
        assert _get(port, "/metrics")[0] == 200
    finally:
        stop.set()
        for s in slow:
            s.close()


def test_an_idle_keep_alive_connection_is_closed_after_the_timeout(slow_daemon: support.Daemon) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", slow_daemon.metrics_port, timeout=REQUEST_TIMEOUT + 5)
    try:
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        assert r.status == 200 and r.getheader("Connection", "").lower() != "close"
        r.read()
        idle_from = time.monotonic()
        s = conn.sock
        assert select.select([s], [], [], REQUEST_TIMEOUT + 3.0)[0], "the idle connection was not closed"
        assert _closed_by_peer(s)
        assert REQUEST_TIMEOUT - 0.5 <= time.monotonic() - idle_from <= REQUEST_TIMEOUT + 3.0
    finally:
        conn.close()


# ---- crowds ---------------------------------------------------------------------------------------

def test_connections_over_the_per_address_cap_are_closed_at_once(daemon: support.Daemon) -> None:
    port = daemon.metrics_port
    crowd: List[socket.socket] = []
    try:
        for _ in range(40):
            crowd.append(_connect_from("127.0.0.3", port))
        # The server closes the ones over the cap as it accepts them: they read end of stream at once,
        # the others nothing (the request timeout is seconds away).
        time.sleep(0.5)
        readable = select.select(crowd, [], [], 0.5)[0]
        closed = [s for s in readable if _closed_by_peer(s)]
        assert len(closed) == len(crowd) - PER_ADDRESS_CAP, (len(closed), len(readable))
        # Other addresses are served meanwhile.
        status, body = _get(port, "/metrics")
        assert status == 200 and b"grpc_server_started_total" in body
        assert _get(port, "/viewer")[0] == 200
    finally:
        for s in crowd:
            s.close()
    # Once they are gone, the address may connect again.
    def served_again() -> bool:
        with _connect_from("127.0.0.3", port) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            try:
                return s.recv(64).startswith(b"HTTP/1.1 200")
            except OSError:
                return False
    assert support.eventually(served_again, timeout=5.0, interval=0.1)


# ---- HTTP as clients speak it -----------------------------------------------------------------------

def test_http_1_0_keep_alive_and_errors(daemon: support.Daemon) -> None:
    port = daemon.metrics_port
    # HTTP/1.0 without keep-alive: one answer, then the server closes.
    with _connect_from("127.0.0.1", port) as s:
        s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        data = b""
        for _ in range(1000):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.0 200"), head
        assert b"text/plain; version=0.0.4" in head and b"grpc_server_started_total" in body
    # HTTP/1.1 keep-alive: several requests on one connection.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        for path, status in (("/metrics", 200), ("/viewer", 200), ("/nope", 404), ("/viewer/api/x/y", 404)):
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            assert r.status == status, path
        conn.request("POST", "/metrics", body=b"{}")
        r = conn.getresponse()
        r.read()
        assert r.status == 405
        conn.request("GET", "/viewer/api/ListScenes")
        r = conn.getresponse()
        r.read()
        assert r.status == 405 and "POST" in r.getheader("Allow", "")
    finally:
        conn.close()
    # A body above --max-message-bytes is refused before it is sent.
    with _connect_from("127.0.0.1", port) as s:
        s.sendall(b"POST /viewer/api/ListScenes HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                  b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (port, 1 << 40))
        assert s.recv(64).startswith(b"HTTP/1.1 413")


# ---- the viewer API against other web pages ---------------------------------------------------------

def _host(d: support.Daemon, name: str = "127.0.0.1") -> str:
    return f"{name}:{d.metrics_port}"


@pytest.mark.parametrize("content_type", ["text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                          "application/jsonx", ""])
def test_the_api_takes_only_json(daemon: support.Daemon, content_type: str) -> None:
    headers = {"Host": _host(daemon)}
    if content_type:
        headers["Content-Type"] = content_type
    status, reply = _post(daemon.metrics_port, "ListScenes", {}, headers)
    assert status == 415, reply
    assert reply["code"] == "InvalidArgument" and "application/json" in reply["message"], reply


@pytest.mark.parametrize("headers", [
    {"Host": "evil.example:{port}"},
    {"Host": "evil.example"},
    {"Host": "127.0.0.1:{port}", "Origin": "http://evil.example"},
    {"Host": "127.0.0.1:{port}", "Origin": "http://evil.example:{port}"},
    {"Host": "127.0.0.1:{port}", "Origin": "null"},
    {"Host": "127.0.0.1:{port}", "Origin": "ftp://127.0.0.1:{port}"},
    {"Host": "127.0.0.1:1"},
], ids=["host", "host-without-port", "origin", "origin-with-port", "origin-null", "origin-scheme", "wrong-port"])
def test_the_api_answers_only_this_server_and_its_page(daemon: support.Daemon, headers: Dict[str, str]) -> None:
    sent = {k: v.format(port=daemon.metrics_port) for k, v in headers.items()}
    status, reply = _post(daemon.metrics_port, "ListScenes", {}, {**sent, "Content-Type": "application/json"})
    assert status == 403, (sent, reply)
    assert reply["code"] == "PermissionDenied", reply


@pytest.mark.parametrize("headers", [
    {"Host": "127.0.0.1:{port}"},
    {"Host": "localhost:{port}", "Content-Type": "application/json; charset=utf-8"},
    {"Host": "[::1]:{port}", "Content-Type": "Application/JSON"},
    {"Host": "127.0.0.1:{port}", "Origin": "http://127.0.0.1:{port}"},
    {"Host": "LOCALHOST:{port}", "Origin": "https://localhost:{port}"},
], ids=["host", "localhost", "ipv6", "own-origin", "https-origin"])
def test_the_api_answers_its_own_page(daemon: support.Daemon, headers: Dict[str, str]) -> None:
    sent = {"Content-Type": "application/json", **{k: v.format(port=daemon.metrics_port) for k, v in headers.items()}}
    status, reply = _post(daemon.metrics_port, "ListScenes", {}, sent)
    assert status == 200, (sent, reply)
    assert isinstance(reply.get("scenes"), list) and reply["scenes"], reply


def test_the_pages_and_metrics_need_no_such_checks(daemon: support.Daemon) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", daemon.metrics_port, timeout=10)
    try:
        for path in ("/metrics", "/viewer"):
            conn.request("GET", path, headers={"Host": "evil.example", "Origin": "http://evil.example"})
            r = conn.getresponse()
            r.read()
            assert r.status == 200, path
    finally:
        conn.close()


def test_allowed_hosts_extend_the_names() -> None:
    with support.Daemon("--viewer-allowed-host", "viewer.example", "--viewer-allowed-host", "proxy.example:8443",
                        "--viewer-allowed-host", "[fd00::5]") as d:
        json_type = {"Content-Type": "application/json"}
        for headers in ({"Host": _host(d, "viewer.example")},
                        {"Host": "viewer.example", "Origin": "https://viewer.example"},
                        {"Host": _host(d, "Viewer.Example"), "Origin": "http://" + _host(d, "viewer.example")},
                        {"Host": "proxy.example:8443", "Origin": "https://proxy.example:8443"},
                        {"Host": _host(d, "[fd00::5]")},
                        {"Host": _host(d), "Origin": "http://viewer.example"}):
            status, reply = _post(d.metrics_port, "ListScenes", {}, {**headers, **json_type})
            assert status == 200, (headers, reply)
        for headers in ({"Host": _host(d, "evil.example")},
                        {"Host": "proxy.example"},  # the port given is the only one
                        {"Host": "proxy.example:9000"},
                        {"Host": _host(d, "viewer.example"), "Origin": "http://evil.example"}):
            status, reply = _post(d.metrics_port, "ListScenes", {}, {**headers, **json_type})
            assert status == 403, (headers, reply)


@pytest.mark.parametrize("entry", ["a b", "host:0", "host:99999", "host:x", "http://host", "[::1", "user@host"])
def test_malformed_allowed_hosts_are_refused_at_start(entry: str) -> None:
    p = subprocess.run([str(support.DAEMON), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
                        "--viewer-allowed-host", entry], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0 and "--viewer-allowed-host" in p.stderr, (p.returncode, p.stderr[-2000:])


def test_the_existing_client_helper_still_works(daemon: support.Daemon) -> None:
    """support.viewer_api (urllib: Host 127.0.0.1:PORT, application/json), as the other tests call it."""
    reply = support.viewer_api(daemon, "ListScenes", {})
    assert isinstance(reply.get("scenes"), list) and reply["scenes"], reply
