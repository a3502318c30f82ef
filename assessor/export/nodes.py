"""A node's verdict on the Kubernetes node itself: a label, two annotations and a node condition.

From a pod whose service account may ``get`` and ``patch`` nodes and ``patch`` ``nodes/status`` (the
ClusterRole of ``gpulab k8s manifests``), a verdict becomes:

- the label ``gpulab.io/KEY``: ``true`` (the checks passed), ``false`` (a check failed) or ``unknown``;
  ``KEY`` is ``healthy`` unless told otherwise, so schedulers can select or avoid nodes by it;
- the annotations ``gpulab.io/KEY-message`` (the verdict's line) and ``gpulab.io/KEY-time`` (when);
- the node condition ``Gpulab<Key>`` (``GpulabHealthy``): status True, False or Unknown, shown by
  ``kubectl describe node``; its transition time moves only when its status does.

The API is reached through :class:`NodeApi`; :class:`InClusterApi` is the real one: plain HTTPS with the
service account's token (read again on every request: kubelet rotates it) and the cluster's CA, no proxy,
no redirect (the token is never sent anywhere but the API server).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from assessor.errors import GpulabError, InputError
from assessor.export.npd import Verdict, cut

ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
LABEL_PREFIX = "gpulab.io/"
LABEL_VALUES = {"ok": "true", "problem": "false", "unknown": "unknown"}
CONDITION_STATUS = {"ok": "True", "problem": "False", "unknown": "Unknown"}
CONDITION_REASON = {"ok": "ChecksPassed", "problem": "CheckFailed", "unknown": "NoVerdict"}
MAX_MESSAGE_BYTES = 1024  # an annotation or condition message: one line, enough for the verdict
MAX_REPLY_BYTES = 4 << 20  # a Node object is a few KiB; more is not an API server talking
MAX_TOKEN_BYTES = 64 << 10

_NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")  # a DNS subdomain (RFC 1123)
_LABEL_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


class NodeApiError(GpulabError):
    """The API server could not be reached or refused a request."""


class NodeApi(Protocol):
    def get_node(self, name: str) -> dict[str, Any]: ...

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        """A JSON merge patch of the node's metadata (labels, annotations)."""
        ...

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        """A strategic merge patch of the node's status (conditions merge by type)."""
        ...


def check_node_name(name: str) -> str:
    if not _NODE_NAME.match(name):
        raise InputError(f"--node-name {name!r}: not a Kubernetes node name (lower-case DNS name)")
    return name


def check_key(key: str) -> str:
    if not _LABEL_NAME.match(key) or len(LABEL_PREFIX + key) + len("-message") > 253 or len(key) > 55:
        raise InputError(
            f"--label-key {key!r}: a label name of letters, digits, '-', '_' and '.', at most 55 characters"
        )
    return key


def condition_type(key: str) -> str:
    """``healthy`` -> ``GpulabHealthy``; ``deep-check`` -> ``GpulabDeepCheck``."""
    return "Gpulab" + "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_.]", key) if part)


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def metadata_patch(verdict: Verdict, key: str, when: dt.datetime) -> dict[str, Any]:
    """The merge patch of the node's label and annotations for ``verdict``."""
    return {
        "metadata": {
            "labels": {LABEL_PREFIX + key: LABEL_VALUES[verdict.state]},
            "annotations": {
                f"{LABEL_PREFIX}{key}-message": cut(verdict.message, MAX_MESSAGE_BYTES),
                f"{LABEL_PREFIX}{key}-time": _iso(when),
            },
        }
    }


def condition(verdict: Verdict, key: str, when: dt.datetime, node: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The node condition for ``verdict``; its transition time is kept from ``node`` while its status holds."""
    kind = condition_type(key)
    status = CONDITION_STATUS[verdict.state]
    now = _iso(when)
    transition = now
    for old in ((node or {}).get("status") or {}).get("conditions") or []:
        if isinstance(old, dict) and old.get("type") == kind and old.get("status") == status:
            transition = str(old.get("lastTransitionTime") or now)
    return {
        "type": kind,
        "status": status,
        "reason": CONDITION_REASON[verdict.state],
        "message": cut(verdict.message, MAX_MESSAGE_BYTES),
        "lastHeartbeatTime": now,
        "lastTransitionTime": transition,
    }


def mark(api: NodeApi, node: str, verdict: Verdict, *, key: str = "healthy", when: dt.datetime | None = None) -> None:
    """Label, annotate and set the condition of ``node`` for ``verdict`` (NodeApiError if the API refuses)."""
    when = when or dt.datetime.now(dt.UTC)
    check_node_name(node)
    check_key(key)
    current = api.get_node(node)
    api.patch_node(node, metadata_patch(verdict, key, when))
    api.patch_node_status(node, {"status": {"conditions": [condition(verdict, key, when, current)]}})


@dataclass
class InClusterApi:
    """The Kubernetes API from inside a pod: ``server`` (https://host:port), the service account's token
    file and the cluster CA file."""

    server: str
    token_file: Path
    ca_file: Path | None
    timeout: float = 10.0

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None, account: Path = ACCOUNT_DIR) -> InClusterApi:
        env = os.environ if env is None else env
        host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT") or "443"
        if not host:
            raise InputError("--label-node: not inside a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set)")
        token = account / "token"
        if not token.is_file():
            raise InputError(f"--label-node: no service account token at {token} (automountServiceAccountToken?)")
        ca = account / "ca.crt"
        address = f"[{host}]" if ":" in host else host
        return cls(f"https://{address}:{port}", token, ca if ca.is_file() else None)

    def get_node(self, name: str) -> dict[str, Any]:
        return self._request("GET", f"/api/v1/nodes/{quote(check_node_name(name), safe='')}")

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        path = f"/api/v1/nodes/{quote(check_node_name(name), safe='')}"
        self._request("PATCH", path, patch, "application/merge-patch+json")

    def patch_node_status(self, name: str, patch: dict[str, Any]) -> None:
        path = f"/api/v1/nodes/{quote(check_node_name(name), safe='')}/status"
        self._request("PATCH", path, patch, "application/strategic-merge-patch+json")

    def _token(self) -> str:
        try:
            with self.token_file.open("rb") as f:
                data = f.read(MAX_TOKEN_BYTES + 1)
        except OSError as exc:
            raise NodeApiError(f"{self.token_file}: cannot read the token: {exc.strerror or exc}") from None
        token = data.decode("ascii", "replace").strip()
        if not token or len(data) > MAX_TOKEN_BYTES or any(c.isspace() for c in token):
            raise NodeApiError(f"{self.token_file}: not a bearer token")
        return token

    def _opener(self) -> Any:
        import ssl
        import urllib.request

        class _NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: Any, **kwargs: Any) -> None:
                return None  # a 3xx is an error: the token goes to the API server and nowhere else

        handlers: list[Any] = [urllib.request.ProxyHandler({}), _NoRedirect()]
        if self.server.startswith("https://"):
            context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
            handlers.append(urllib.request.HTTPSHandler(context=context))
        return urllib.request.build_opener(*handlers)

    def _request(
        self, method: str, path: str, body: dict[str, Any] | None = None, content_type: str | None = None
    ) -> dict[str, Any]:
        import urllib.error
        import urllib.request

        headers = {"Authorization": f"Bearer {self._token()}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = content_type or "application/json"
        request = urllib.request.Request(self.server + path, data=data, method=method, headers=headers)
        what = f"{method} {path}"
        try:
            with self._opener().open(request, timeout=self.timeout) as reply:
                raw = reply.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise NodeApiError(f"{what}: HTTP {exc.code}: {_status_message(exc)}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise NodeApiError(f"{what}: cannot reach the API server {self.server}: {reason}") from None
        if len(raw) > MAX_REPLY_BYTES:
            raise NodeApiError(f"{what}: the reply is larger than {MAX_REPLY_BYTES} bytes")
        try:
            doc = json.loads(raw or b"{}")
        except ValueError:
            raise NodeApiError(f"{what}: the reply is not JSON") from None
        return doc if isinstance(doc, dict) else {}


def _status_message(exc: Any) -> str:
    """The ``message`` of a Kubernetes Status reply, else the HTTP reason (bounded: it came off the wire)."""
    try:
        doc = json.loads(exc.read(16 << 10) or b"{}")
    except (ValueError, OSError):
        doc = {}
    text = doc.get("message") if isinstance(doc, dict) else None
    return str(text or exc.reason or "")[:300]
