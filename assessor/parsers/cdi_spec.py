"""A CDI spec (``/etc/cdi/nvidia.yaml`` as ``nvidia-ctk cdi generate`` writes it, or its JSON form) to
``NodeFacts.cdi_spec``: the devices it defines, with the device nodes each one injects, and the driver
libraries its common edits mount.

The driver the spec was generated for is read from the version in the names of the libraries it mounts
(``libcuda.so.565.57.01``), else from the ``enable-cuda-compat --host-driver-version=`` hook. What is pasted
before the document (a prompt and ``cat /etc/cdi/nvidia.yaml``) is skipped; a document cut short is a
ParseError when YAML cannot read it.

>>> s = parse('''cdiVersion: 0.5.0
... kind: nvidia.com/gpu
... devices:
... - name: "0"
...   containerEdits:
...     deviceNodes:
...     - path: /dev/nvidia0''').cdi_spec
>>> (s.kind, [(d.name, d.device_nodes) for d in s.devices])
('nvidia.com/gpu', [('nvidia.com/gpu=0', ['/dev/nvidia0'])])
"""

from __future__ import annotations

import re
from typing import Any

from assessor.errors import InputError, ParseError
from assessor.facts import CdiDevice, CdiSpec, NodeFacts

_START = re.compile(r"^(?:---\s*$|\{|cdiVersion:|kind:|containerEdits:|devices:)")
_LIB_VERSION = re.compile(r"/lib(?:cuda|nvidia-ml)\.so\.(\d+\.\d+(?:\.\d+)?)$")
_COMPAT = re.compile(r"^--host-driver-version=(\S+)$")


def _nodes(edits: Any) -> list[str]:
    if not isinstance(edits, dict) or not isinstance(edits.get("deviceNodes"), list):
        return []
    return [str(n["path"]) for n in edits["deviceNodes"] if isinstance(n, dict) and n.get("path")]


def parse(text: str) -> NodeFacts:
    """Parse a CDI spec into ``cdi_spec``."""
    from assessor import yamlio

    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if _START.match(line)), None)
    if first is None:
        raise ParseError("not a CDI spec: no cdiVersion, kind or devices key", line=1)
    body = "\n".join([""] * first + lines[first:]) + "\n"  # blank lines keep the line numbers
    try:
        data = yamlio.load("<cdi spec>", text=body).data
    except InputError as exc:
        found = re.search(r":(\d+):", str(exc))
        raise ParseError(f"CDI spec: {exc}", line=int(found.group(1)) if found else first + 1) from None
    if not isinstance(data, dict) or not (isinstance(data.get("kind"), str) or data.get("cdiVersion") is not None):
        raise ParseError("not a CDI spec: no kind or cdiVersion", line=first + 1)
    kind = data["kind"] if isinstance(data.get("kind"), str) else None
    devices = data.get("devices")
    partial = None
    if devices is None or kind is None:  # kind sorts after devices: a cut spec lacks both
        partial = "the CDI spec was cut before its devices" if devices is None else "the CDI spec has no kind"
        devices = devices if devices is not None else []
    if not isinstance(devices, list):
        raise ParseError("CDI spec: devices is not a list", line=first + 1)
    spec = CdiSpec(kind=kind, cdi_version=str(data["cdiVersion"]) if data.get("cdiVersion") is not None else None)
    for device in devices:
        if isinstance(device, dict) and device.get("name") is not None:
            name = f"{kind}={device['name']}" if kind else str(device["name"])
            spec.devices.append(CdiDevice(name, _nodes(device.get("containerEdits"))))
    edits = data.get("containerEdits")
    common: dict[str, Any] = edits if isinstance(edits, dict) else {}
    spec.common_device_nodes = _nodes(common)
    listed = common.get("mounts")
    mounts: list[Any] = listed if isinstance(listed, list) else []
    for mount in mounts:
        host = mount.get("hostPath") if isinstance(mount, dict) else None
        if isinstance(host, str) and ".so." in host:
            spec.libraries.append(host)
            found = _LIB_VERSION.search(host)
            if found and spec.driver_version is None:
                spec.driver_version = found.group(1)
    listed = common.get("hooks")
    hooks: list[Any] = listed if isinstance(listed, list) else []
    for hook in hooks:
        for arg in hook.get("args", []) if isinstance(hook, dict) and isinstance(hook.get("args"), list) else []:
            found = _COMPAT.match(str(arg))
            if found and spec.driver_version is None:
                spec.driver_version = found.group(1)
    facts = NodeFacts(cdi_spec=spec)
    if partial:
        facts.partial["cdi_spec"] = partial
    return facts
