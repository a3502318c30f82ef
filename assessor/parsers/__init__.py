"""Parsers: pure functions from a tool's raw text to (partial) node facts.

Every parser module has ``parse(text: str) -> NodeFacts`` that sets only the fields its
tool speaks about and raises :class:`assessor.errors.ParseError` (with the 1-based line)
for what it cannot understand. Real captures are messy (tabs or spaces, truncation,
unknown lines): tolerate what a real tool may print.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from assessor.errors import InputError, ParseError
from assessor.facts import NodeFacts
from assessor.parsers._text import check_input


@dataclass(frozen=True)
class Kind:
    name: str  # what `gpulab parse KIND` takes (which snapshot file holds it: assessor.capture.sources)
    module: str  # assessor.parsers.<module>
    function: str
    about: str  # the tool output it reads, in words
    fields: tuple[str, ...]  # NodeFacts fields it fills


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "nvml",
            "nvml_json",
            "parse",
            "the NVML collector (pynvml)",
            ("driver", "gpus", "mig_instances"),
        ),
        Kind("nvidia-smi-xml", "nvidia_smi_xml", "parse", "nvidia-smi -q -x", ("driver", "gpus", "mig_compute_gis")),
        Kind("nvidia-smi-q", "nvidia_smi_q", "parse", "nvidia-smi -q", ("driver", "gpus")),
        Kind(
            "nvidia-smi",
            "nvidia_smi_table",
            "parse",
            "nvidia-smi",
            ("driver", "gpus", "mig_devices", "gpu_processes"),
        ),
        Kind(
            "nvidia-smi-nvlink",
            "nvidia_smi_nvlink",
            "parse",
            "nvidia-smi nvlink -s",
            ("nvlink_status",),
        ),
        Kind("nvidia-smi-list", "nvidia_smi_list", "parse", "nvidia-smi -L", ("gpus",)),
        Kind("nvidia-smi-topo", "nvidia_smi_topo", "parse", "nvidia-smi topo -m", ("topology",)),
        Kind(
            "nvidia-smi-mig-lgi",
            "nvidia_smi_mig",
            "parse_lgi",
            "nvidia-smi mig -lgi",
            ("mig_instances",),
        ),
        Kind(
            "nvidia-smi-mig-lgip",
            "nvidia_smi_mig",
            "parse_lgip",
            "nvidia-smi mig -lgip",
            ("mig_profiles",),
        ),
        Kind("nvidia-smi-mig-lgipp", "nvidia_smi_mig", "parse_lgipp", "nvidia-smi mig -lgipp", ("mig_profiles",)),
        Kind("ibstat", "ibstat", "parse", "ibstat", ("ib_ports",)),
        Kind("ibv-devinfo", "ibv_devinfo", "parse", "ibv_devinfo", ("ib_devices",)),
        Kind("mlxlink", "mlxlink", "parse", "mlxlink -d DEV -m -c (MFT), one or more runs", ("link_phy",)),
        Kind("mlxfwmanager", "mlxfwmanager", "parse", "mlxfwmanager --query (MFT) or mlxup", ("adapter_firmware",)),
        Kind("ipmitool-lan", "ipmitool", "parse_lan", "ipmitool lan print 1 (the BMC's LAN channel)", ("bmc_lan",)),
        Kind(
            "ipmitool-users",
            "ipmitool",
            "parse_users",
            "ipmitool channel getaccess 1 or user list 1 (the BMC's users)",
            ("bmc_users",),
        ),
        Kind("ibnetdiscover", "ibnetdiscover", "parse", "ibnetdiscover (the fabric topology file)", ("ib_links",)),
        Kind("iblinkinfo", "iblinkinfo", "parse", "iblinkinfo (every port of the fabric)", ("ib_links",)),
        Kind(
            "ib-write-bw",
            "perftest",
            "parse",
            "ib_write_bw (perftest, client side)",
            ("ib_write_bw",),
        ),
        Kind("lsmod", "lsmod", "parse", "lsmod", ("modules",)),
        Kind("dmesg", "dmesg", "parse", "dmesg", ("kernel_events",)),
        Kind("systemctl-show", "services", "parse", "systemctl show <NVIDIA services>", ("services",)),
        Kind(
            "systemctl-status",
            "services",
            "parse",
            "systemctl status <NVIDIA services> (with its journal lines)",
            ("services",),
        ),
        Kind("nccl-tests", "nccl_tests", "parse", "all_reduce_perf (nccl-tests)", ("nccl",)),
        Kind("nccl-debug", "nccl_debug", "parse", "NCCL_DEBUG=INFO log lines", ("nccl",)),
        Kind("dcgmi-diag", "dcgmi_diag", "parse", "dcgmi diag -r N", ("dcgm_diag",)),
        Kind("hpl", "hpl", "parse", "HPL-NVIDIA hpl.sh / xhpl (HPL's result table)", ("hpl",)),
        Kind("nvbandwidth", "nvbandwidth", "parse", "nvbandwidth [-t TEST]", ("nvbandwidth",)),
        Kind(
            "driver-version",
            "system",
            "parse_driver_version",
            "cat /proc/driver/nvidia/version",
            ("driver",),
        ),
        Kind("os-release", "system", "parse_os_release", "cat /etc/os-release", ("os_release",)),
        Kind("docker-info", "docker_info", "parse", "docker info", ("container_engine",)),
        Kind("cdi-spec", "cdi_spec", "parse", "a CDI spec: cat /etc/cdi/nvidia.yaml", ("cdi_spec",)),
        Kind("uname", "system", "parse_uname", "uname -a", ("uname",)),
        Kind("proc-cmdline", "kernel_cmdline", "parse_cmdline", "cat /proc/cmdline", ("kernel_cmdline",)),
        Kind("grub-default", "kernel_cmdline", "parse_grub_default", "cat /etc/default/grub", ("grub_cmdline",)),
        Kind("dpkg-list", "dpkg", "parse", "dpkg -l (dpkg's package database)", ("packages",)),
        Kind("dkms-status", "dkms", "parse", "dkms status", ("dkms",)),
        Kind(
            "scontrol-node",
            "slurm_nodes",
            "parse",
            "scontrol show node -o (Slurm's view of its nodes)",
            ("slurm_nodes",),
        ),
    )
}


def kind(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        if name == AUTO:
            raise InputError("'auto' is not a kind of its own: parse('auto', ...) recognises the kind") from None
        import difflib

        close = difflib.get_close_matches(name, KINDS, n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise InputError(f"unknown kind {name!r}{hint} (kinds: {', '.join(KINDS)})") from None


AUTO = "auto"  # the kind name that asks for recognition by content (assessor.parsers.detect)


def parse_auto(text: str, *, source: str | None = None) -> tuple[str, NodeFacts]:
    """The kind ``text`` is recognised as, and its facts; ParseError when unknown or ambiguous."""
    from assessor.parsers.detect import require_kind

    try:
        check_input(text)
        found = require_kind(text, source=source)
    except ParseError as exc:
        raise (exc.with_source(source) if source else exc) from None
    return found, parse(found, text, source=source)


def parse(kind_name: str, text: str, *, source: str | None = None) -> NodeFacts:
    """Parse ``text`` as ``kind_name`` (``auto``: recognised by content); ParseErrors name ``source``."""
    if kind_name == AUTO:
        return parse_auto(text, source=source)[1]
    spec = kind(kind_name)
    module = importlib.import_module(f"assessor.parsers.{spec.module}")
    func = getattr(module, spec.function)
    try:
        check_input(text)  # NUL and control bytes, undecodable runs, 5,000-digit numbers
        facts: NodeFacts = func(text)
    except ParseError as exc:
        if source:
            raise exc.with_source(source) from None
        raise
    return facts
