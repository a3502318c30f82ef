"""Writing a verdict to the Kubernetes node: against a fake API server on loopback, over real TLS."""

from __future__ import annotations

import datetime as dt
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from assessor.errors import InputError
from assessor.export import nodes
from assessor.export.npd import Verdict

WHEN = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.UTC)
LATER = WHEN + dt.timedelta(minutes=5)


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (the API server's) and its key."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = directory / "ca.crt", directory / "server.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_file, key_file


@dataclass
class FakeApiServer:
    """Just enough of the API server: GET a node, PATCH it and its status; every request recorded."""

    node: dict[str, Any]
    requests: list[dict[str, Any]] = field(default_factory=list)
    refuse: int | None = None  # answer every request with this HTTP status
    redirect: bool = False

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, code: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                api.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "content_type": self.headers.get("Content-Type"),
                        "body": body,
                    }
                )
                if api.redirect:
                    return self._answer(302, {}, {"Location": "https://127.0.0.1:1/steal"})
                if api.refuse:
                    message = 'nodes "gpu-07" is forbidden: User "system:serviceaccount:gpulab:gpulab" cannot patch'
                    return self._answer(api.refuse, {"kind": "Status", "message": message})
                if not self.path.startswith(f"/api/v1/nodes/{api.node['metadata']['name']}"):
                    return self._answer(404, {"kind": "Status", "message": "not found"})
                if self.command == "GET":
                    return self._answer(200, api.node)
                return self._answer(200, api.node)

            do_GET = _handle
            do_PATCH = _handle

        return Handler


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[FakeApiServer, nodes.InClusterApi]]:
    """A fake API server over TLS on a free loopback port, and the in-cluster client pointed at it."""
    cert, key = self_signed(tmp_path)
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("token-one\n")
    (account / "ca.crt").write_bytes(cert.read_bytes())
    node = {
        "metadata": {"name": "gpu-07", "labels": {}},
        "status": {
            "conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "GpulabHealthy", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
            ]
        },
    }
    fake = FakeApiServer(node)
    server = ThreadingHTTPServer(("127.0.0.1", 0), fake.handler())
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    env = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(server.server_port)}
    api = nodes.InClusterApi.from_environment(env, account)
    api.timeout = 5
    try:
        yield fake, api
    finally:
        server.shutdown()
        server.server_close()


def test_a_failing_node_is_labelled_annotated_and_given_its_condition(cluster: Any) -> None:
    fake, api = cluster
    nodes.mark(api, "gpu-07", Verdict("problem", "gpu.xid: Xid 79 on GPU 3"), when=WHEN)
    assert [(r["method"], r["path"]) for r in fake.requests] == [
        ("GET", "/api/v1/nodes/gpu-07"),
        ("PATCH", "/api/v1/nodes/gpu-07"),
        ("PATCH", "/api/v1/nodes/gpu-07/status"),
    ]
    assert {r["authorization"] for r in fake.requests} == {"Bearer token-one"}
    meta, status = fake.requests[1], fake.requests[2]
    assert meta["content_type"] == "application/merge-patch+json"
    assert meta["body"] == {
        "metadata": {
            "labels": {"gpulab.io/healthy": "false"},
            "annotations": {
                "gpulab.io/healthy-message": "gpu.xid: Xid 79 on GPU 3",
                "gpulab.io/healthy-time": "2025-03-04T05:06:07Z",
            },
        }
    }
    assert status["content_type"] == "application/strategic-merge-patch+json"
    assert status["body"] == {
        "status": {
            "conditions": [
                {
                    "type": "GpulabHealthy",
                    "status": "False",
                    "reason": "CheckFailed",
                    "message": "gpu.xid: Xid 79 on GPU 3",
                    "lastHeartbeatTime": "2025-03-04T05:06:07Z",
                    "lastTransitionTime": "2025-03-04T05:06:07Z",  # the status changed: the transition is now
                }
            ]
        }
    }


def test_a_condition_that_holds_keeps_its_transition_time(cluster: Any) -> None:
    fake, api = cluster
    nodes.mark(api, "gpu-07", Verdict("ok", "ok: gpu.xid"), when=LATER)
    [condition] = fake.requests[2]["body"]["status"]["conditions"]
    assert condition["status"] == "True" and condition["reason"] == "ChecksPassed"
    assert condition["lastTransitionTime"] == "2025-01-01T00:00:00Z"
    assert condition["lastHeartbeatTime"] == "2025-03-04T05:11:07Z"
    assert fake.requests[1]["body"]["metadata"]["labels"] == {"gpulab.io/healthy": "true"}


def test_the_token_is_read_again_for_every_request(cluster: Any) -> None:
    fake, api = cluster
    api.get_node("gpu-07")
    api.token_file.write_text("token-two\n")  # kubelet rotated it
    api.get_node("gpu-07")
    assert [r["authorization"] for r in fake.requests] == ["Bearer token-one", "Bearer token-two"]


def test_a_refusal_names_the_request_and_the_api_servers_reason(cluster: Any) -> None:
    fake, api = cluster
    fake.refuse = 403
    refused = r"PATCH /api/v1/nodes/gpu-07: HTTP 403: nodes \"gpu-07\" is forbidden"
    with pytest.raises(nodes.NodeApiError, match=refused):
        api.patch_node("gpu-07", {"metadata": {"labels": {"gpulab.io/healthy": "true"}}})


def test_a_redirect_is_not_followed_with_the_token(cluster: Any) -> None:
    fake, api = cluster
    fake.redirect = True
    with pytest.raises(nodes.NodeApiError, match="HTTP 302"):
        api.get_node("gpu-07")
    assert [r["path"] for r in fake.requests] == ["/api/v1/nodes/gpu-07"]


def test_a_server_the_cluster_ca_did_not_sign_is_refused(cluster: Any, tmp_path: Path) -> None:
    fake, api = cluster
    other = tmp_path / "other"
    other.mkdir()
    api.ca_file, _ = self_signed(other)
    with pytest.raises(nodes.NodeApiError, match="cannot reach the API server"):
        api.get_node("gpu-07")
    assert fake.requests == []  # the token never left


def test_the_client_is_configured_from_the_pods_environment(tmp_path: Path) -> None:
    account = tmp_path / "sa"
    account.mkdir()
    with pytest.raises(InputError, match="not inside a Kubernetes pod"):
        nodes.InClusterApi.from_environment({}, account)
    with pytest.raises(InputError, match="no service account token"):
        nodes.InClusterApi.from_environment({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, account)
    (account / "token").write_text("t")
    env = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "6443"}
    api = nodes.InClusterApi.from_environment(env, account)
    assert api.server == "https://[fd00::1]:6443" and api.ca_file is None


@pytest.mark.parametrize("name", ["../etc", "GPU-07", "gpu 07", "", "a" * 254, "gpu-07/status"])
def test_a_node_name_that_is_not_one_is_refused(name: str) -> None:
    with pytest.raises(InputError, match="not a Kubernetes node name"):
        nodes.check_node_name(name)


class RecordingApi:
    """The NodeApi protocol's fake: records what would be sent."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, Any]] = []

    def get_node(self, name: str) -> dict[str, Any]:
        self.calls.append(("get", name, None))
        return {}

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self.calls.append(("patch", name, patch))

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        self.calls.append(("status", name, patch))


def test_the_label_key_names_the_label_annotations_and_condition() -> None:
    api = RecordingApi()
    long_message = "gpu.xid: " + "x" * 5000
    nodes.mark(api, "gpu-07", Verdict("unknown", long_message), key="deep-check", when=WHEN)
    _, _, meta = api.calls[1]
    _, _, status = api.calls[2]
    assert meta["metadata"]["labels"] == {"gpulab.io/deep-check": "unknown"}
    assert len(meta["metadata"]["annotations"]["gpulab.io/deep-check-message"].encode()) <= nodes.MAX_MESSAGE_BYTES
    assert status["status"]["conditions"][0]["type"] == "GpulabDeepCheck"
    assert status["status"]["conditions"][0]["status"] == "Unknown"
    with pytest.raises(InputError, match="--label-key"):
        nodes.mark(api, "gpu-07", Verdict("ok", "ok"), key="bad key/")


def test_npd_labels_the_node_through_the_in_cluster_api(
    cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from assessor.cli import main
    from tests.support.snapshots import BROKEN_H100, corpus_snapshot

    fake, api = cluster
    monkeypatch.setattr(nodes.InClusterApi, "from_environment", classmethod(lambda cls: api))
    snap = corpus_snapshot(tmp_path / "node", BROKEN_H100)
    args = ["npd", "gpu.xid", "-t", f"snapshot:{snap}", "--node-name", "gpu-07", "--label-node"]
    run = CliRunner().invoke(main, args, catch_exceptions=False)
    assert run.exit_code == 1 and run.stdout.startswith("gpu.xid: ")
    assert fake.requests[1]["body"]["metadata"]["labels"] == {"gpulab.io/healthy": "false"}
    assert fake.requests[1]["body"]["metadata"]["annotations"]["gpulab.io/healthy-message"].startswith("gpu.xid: ")
