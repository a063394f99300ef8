"""Who may call a real proximityd: TLS, mutual TLS and bearer tokens (certificates made here with
openssl), reflection off unless asked, health reachable for probes in every mode, and the CLI's
matching options."""
from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
from pathlib import Path
from typing import Dict

import grpc
import numpy as np
import pytest

import support
from proximity_client import Client, ProximityError

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 and localhost, a client certificate, and a stranger's
    client certificate from another CA."""
    d = tmp_path_factory.mktemp("pki")
    for ca in ("ca", "other_ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.pem",
                 "-days", "2", "-subj", f"/CN=proximity test {ca}", cwd=d)
    (d / "san.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for name, ca, ext in (("server", "ca", ["-extfile", "san.cnf"]), ("client", "ca", []),
                          ("stranger", "other_ca", [])):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr",
                 "-subj", f"/CN={name}", cwd=d)
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-CAcreateserial",
                 "-out", f"{name}.pem", "-days", "2", *ext, cwd=d)
    return {p.stem + p.suffix.replace(".", "_"): p for p in d.iterdir()}


def _works(c: Client) -> bool:
    return bool(c.check_state(np.zeros(6)).free is not None)


def _fails(c: Client) -> grpc.StatusCode:
    with pytest.raises(ProximityError) as e:
        c.check_state(np.zeros(6))
    return e.value.code


def test_tls_and_mutual_tls(pki: Dict[str, Path]) -> None:
    with support.Daemon("--tls-cert", str(pki["server_pem"]), "--tls-key", str(pki["server_key"])) as d:
        with Client(d.target, timeout=10, tls_ca=str(pki["ca_pem"])) as c:
            c.wait_until_serving()
            assert _works(c)
        with Client(d.target, timeout=5) as plain:  # plaintext against a TLS port
            assert _fails(plain) == grpc.StatusCode.UNAVAILABLE
        with Client(d.target, timeout=5, tls_ca=str(pki["other_ca_pem"])) as wrong:  # untrusted server
            assert _fails(wrong) == grpc.StatusCode.UNAVAILABLE
    with support.Daemon("--tls-cert", str(pki["server_pem"]), "--tls-key", str(pki["server_key"]),
                        "--tls-client-ca", str(pki["ca_pem"])) as d:
        with Client(d.target, timeout=10, tls_ca=str(pki["ca_pem"]), tls_cert=str(pki["client_pem"]),
                    tls_key=str(pki["client_key"])) as c:
            c.wait_until_serving()
            assert _works(c)
        with Client(d.target, timeout=5, tls_ca=str(pki["ca_pem"])) as anonymous:
            assert _fails(anonymous) == grpc.StatusCode.UNAVAILABLE
        with Client(d.target, timeout=5, tls_ca=str(pki["ca_pem"]), tls_cert=str(pki["stranger_pem"]),
                    tls_key=str(pki["stranger_key"])) as stranger:
            assert _fails(stranger) == grpc.StatusCode.UNAVAILABLE
        # The viewer's HTTP port cannot check client certificates: its API refuses every call.
        with pytest.raises(urllib.error.HTTPError) as refused:
            support.viewer_api(d, "ListScenes", {})
        assert refused.value.code == 403 and b"--tls-client-ca" in refused.value.read()


def test_bearer_token(tmp_path: Path) -> None:
    token = "t0ken-" + "9f" * 16
    token_file = tmp_path / "token"
    token_file.write_text(token + "\n")
    with support.Daemon("--auth-token-file", str(token_file)) as d:
        with Client(d.target, timeout=10, token=token) as c:
            c.wait_until_serving()
            assert _works(c)
            assert c.list_scenes()
        with Client(d.target, timeout=5) as anonymous:
            assert anonymous.health() == "SERVING"  # probes need no token
            assert _fails(anonymous) == grpc.StatusCode.UNAUTHENTICATED
        for wrong in (token[:-1], token + "x", "Bearer " + token, "x" * len(token)):
            with Client(d.target, timeout=5, token=wrong) as w:
                assert _fails(w) == grpc.StatusCode.UNAUTHENTICATED
        # Streams carry it too.
        with Client(d.target, timeout=10, token=token) as c:
            assert len(c.validate_paths([np.zeros((2, 6))], progress=False)) == 1
        # The CLI's option.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(support.PY_SRC), str(support.STUBS)]))
        base = ["/usr/bin/python3", "-m", "proximity_client", "info", "--target", d.target]
        ok = subprocess.run(base + ["--token-file", str(token_file)], capture_output=True, text=True, env=env,
                            timeout=120)
        assert ok.returncode == 0, ok.stderr
        refused = subprocess.run(base, capture_output=True, text=True, env=env, timeout=120)
        assert refused.returncode != 0 and "UNAUTHENTICATED" in (refused.stderr + refused.stdout)
    # A token too short to be a secret is refused at start.
    short = tmp_path / "short"
    short.write_text("abc\n")
    p = subprocess.run([str(support.DAEMON), "--listen", "127.0.0.1:0", "--auth-token-file", str(short)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "16 characters" in p.stderr


_LIST_SERVICES = b"\x3a\x00"  # grpc.reflection.v1alpha.ServerReflectionRequest{list_services: ""}


def _reflect(target: str) -> grpc.StatusCode:
    with grpc.insecure_channel(target) as ch:
        call = ch.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                request_serializer=lambda b: b, response_deserializer=lambda b: b)
        try:
            replies = list(call(iter([_LIST_SERVICES]), timeout=10))
        except grpc.RpcError as e:
            return e.code()
        assert replies and b"proximity.v1.ProximityService" in replies[0]
        return grpc.StatusCode.OK


def test_reflection_is_off_unless_asked() -> None:
    with support.Daemon() as d:
        assert _reflect(d.target) == grpc.StatusCode.UNIMPLEMENTED
    with support.Daemon("--reflection") as d:
        assert _reflect(d.target) == grpc.StatusCode.OK
