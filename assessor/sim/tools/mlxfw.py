"""Simulated NVIDIA firmware tools (MFT and mstflint): ``flint``/``mstflint``, ``mlxfwmanager``, ``mlxfwreset``.

What an adapter runs and what it will run are two things, as on a real ConnectX: ``hca.firmware`` is the
running firmware (``ibstat``'s ``Firmware version``, ``ibv_devinfo``'s ``fw_ver``), ``hca.firmware_next`` the
image burned to flash that runs only after ``mlxfwreset -d DEV reset`` or a reboot. Until then

- ``flint -d DEV q`` prints ``FW Version:`` (flash) and ``FW Version(Running):`` (the old one), the two lines
  real flint prints after a burn (mstflint's ``flint_ops``: the running line only when the two differ);
- ``mlxfwmanager --query`` lists the device's ``FW`` (flash) and ``FW (Running)`` versions;
- ``mlxfwmanager -u`` and ``flint ... burn`` end with the real reminder (``Restart needed for updates to take
  effect.``, ``-I- To load new FW run mlxfwreset or reboot machine.``).

A firmware image is a file on the node. The simulator's images are small text files with the lines
``PSID: MT_...``, ``FW Version: X.Y.Z`` and ``Device: MT4129`` (a lab puts them where the README says); a burn
checks the PSID as the real tools do, so the image of another card is refused.

Devices are named as the real tools take them: ``mlx5_N`` (the RDMA name), ``/dev/mst/mt4129_pciconf0`` (the
mst device: one per adapter of that type, in PCI order), or a PCI address (``1a:00.0``, ``0000:1a:00.0``).

Layouts come from real outputs in ``tests/data/corpus/flint`` and ``tests/data/corpus/mlxfwmanager``: flint's
``Key:`` padded to column 23, mlxfwmanager's device blocks with two-space indents. The running image has no
release date (the line is left out, as flint leaves it out when the date is unknown).
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from assessor.sim import switch_firmware
from assessor.sim.state import IbHcaState, NodeState, PortPhyState
from assessor.sim.tools import Session, ToolResult

# What each ConnectX model reports that the state does not keep: part number, description, image format.
_MODEL: dict[str, tuple[str, str, str]] = {
    "MT4129": (
        "ConnectX7",
        "MCX75310AAS-NEA_Ax",
        "NVIDIA ConnectX-7 HHHL Adapter card; 400GbE / NDR IB (default mode); Single-port OSFP; PCIe 5.0 x16; "
        "Crypto Disabled; Secure Boot Enabled",
    ),
    "MT4123": (
        "ConnectX6",
        "MCX653105A-HDA_Ax",
        "ConnectX-6 VPI adapter card; HDR IB (200Gb/s) and 200GbE; single-port QSFP56; PCIe4.0 x16; tall bracket; "
        "ROHS R6",
    ),
    "MT4131": (
        "ConnectX8",
        "900-9X81Q-00CN-ST0",
        "NVIDIA ConnectX-8 C8180 HHHL SuperNIC; 800Gbs XDR IB (default mode) / 2x400GbE; Single-cage OSFP",
    ),
}
_ROM_INFO = ("type=UEFI version=14.34.12 cpu=AMD64,AARCH64", "type=PXE version=3.7.300 cpu=AMD64")
_PXE, _UEFI = "3.7.0300", "14.34.0012"
IMAGE_MAGIC = "GPULAB-SIM-FW-IMAGE"


def firmware_image(psid: str, version: str, device: str = "MT4129") -> str:
    """The text of a simulated firmware image file for the adapters with ``psid``."""
    return f"{IMAGE_MAGIC}\nPSID: {psid}\nFW Version: {version}\nDevice: {device}\n"


def activate_firmware(hca: IbHcaState) -> None:
    """A firmware reset or a reboot: the image on flash runs, and the ports' counters start over."""
    if hca.firmware_next is not None:
        hca.firmware = hca.firmware_next
        hca.firmware_next = None
    for port in hca.ports:
        clear_counters(port.phy, 0.0)


def clear_counters(phy: PortPhyState, now_s: float) -> None:
    """What ``mlxlink --pc`` (and a firmware reset, a reboot) does: the physical counters start at zero."""
    phy.cleared_at_s = now_s
    phy.link_down = 0
    phy.link_recovery = 0
    phy.past_effective_errors = 0


def flash_version(hca: IbHcaState) -> str:
    return hca.firmware_next or hca.firmware


def mst_name(state: NodeState, hca: IbHcaState) -> str:
    """``/dev/mst/mt4129_pciconf0``: the mst device of ``hca`` (numbered per type, in PCI order)."""
    same = sorted((h for h in state.ib_hcas if h.ca_type == hca.ca_type), key=lambda h: h.bus_id or h.name)
    return f"/dev/mst/{hca.ca_type.lower()}_pciconf{same.index(hca)}"


_PCI = re.compile(r"^(?:(?:pciconf-)?(?P<domain>[0-9a-f]{4}):)?(?P<bdf>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7])$", re.IGNORECASE)


def find_device(state: NodeState, name: str) -> IbHcaState | None:
    """The adapter a device argument names (RDMA name, mst device or PCI address); None when none does."""
    for hca in state.ib_hcas:
        if name == hca.name or name == mst_name(state, hca):
            return hca
    if m := _PCI.match(name):
        for hca in state.ib_hcas:
            if hca.bus_id and hca.bus_id.lower().endswith(m.group("bdf").lower()):
                return hca
    return None


def _base_guid(hca: IbHcaState) -> str:
    return hca.node_guid.lower().removeprefix("0x").rjust(16, "0")


def _base_mac(hca: IbHcaState) -> str:
    guid = _base_guid(hca)
    return guid[:6] + guid[10:]  # a GUID is the MAC with ff:fe (or 03:00) in the middle


def _option(args: list[str], *names: str) -> str | None:
    for i, a in enumerate(args):
        if a in names and i + 1 < len(args):
            return args[i + 1]
        for n in names:
            if n.startswith("--") and a.startswith(n + "="):
                return a.split("=", 1)[1]
    return None


def _node_path(path: str, session: Session) -> str:
    return path if path.startswith("/") else str(PurePosixPath(session.env.get("PWD", "/root")) / path)


def read_image(path: str, session: Session) -> tuple[dict[str, str] | None, str]:
    """The fields of the image file at ``path`` on the node, or None and why not."""
    from assessor.sim.config_root import read_config

    text = read_config(session.root(), _node_path(path, session))
    if text is None:
        return None, f"-E- Cannot open {path}: No such file or directory"
    lines = text.splitlines()
    if not lines or lines[0].strip() != IMAGE_MAGIC:
        return None, f"-E- Cannot open {path}: Invalid image format"
    fields = {}
    for line in lines[1:]:
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    if not {"PSID", "FW Version"} <= set(fields):
        return None, f"-E- Cannot open {path}: Invalid image format"
    return fields, ""


# ---- flint / mstflint -----------------------------------------------------------------------


def _query_lines(state: NodeState, hca: IbHcaState) -> list[str]:
    flash = flash_version(hca)
    out = ["Image type:            FS4", f"FW Version:            {flash}"]
    if flash != hca.firmware:
        out.append(f"FW Version(Running):   {hca.firmware}")
    out += [
        f"Product Version:       {flash}",
        f"Rom Info:              {_ROM_INFO[0]}",
        f"                       {_ROM_INFO[1]}",
        "Description:           UID                GuidsNumber",
        f"Base GUID:             {_base_guid(hca)}        16",
        f"Base MAC:              {_base_mac(hca)}            16",
        "Image VSD:             N/A",
        "Device VSD:            N/A",
        f"PSID:                  {hca.board_id or 'N/A'}",
        "Security Attributes:   secure-fw",
    ]
    return out


def _flint(args: list[str], session: Session, program: str) -> ToolResult:
    device = _option(args, "-d", "--device")
    image = _option(args, "-i", "--image")
    words = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in ("-d", "-i"))]
    command = words[0] if words else ""
    if command in ("q", "query"):
        if device is None and image is not None:
            fields, why = read_image(image, session)
            if fields is None:
                return ToolResult(1, "", why + "\n")
            return ToolResult(
                0,
                f"Image type:            FS4\nFW Version:            {fields['FW Version']}\n"
                f"PSID:                  {fields['PSID']}\n",
            )
        if device is None:
            return ToolResult(1, "", "-E- Missing device name, use -d option\n")
        state = session.read()
        if switch_firmware.is_lid_device(device):
            switch = switch_firmware.switch_at(state, device)
            if switch is None:
                return ToolResult(1, "", f"-E- Cannot open Device: {device}. No such file or directory. MFE_CR_ERROR\n")
            return ToolResult(0, "\n".join(switch_firmware.query_lines(state, switch)) + "\n")
        hca = find_device(state, device)
        if hca is None:
            return ToolResult(1, "", f"-E- Cannot open Device: {device}. No such file or directory. MFE_CR_ERROR\n")
        return ToolResult(0, "\n".join(_query_lines(state, hca)) + "\n")
    if command in ("b", "burn"):
        if device is None:
            return ToolResult(1, "", "-E- Missing device name, use -d option\n")
        if image is None:
            return ToolResult(1, "", "-E- Burn command requires an image file, use -i option\n")
        fields, why = read_image(image, session)
        if fields is None:
            return ToolResult(1, "", why + "\n")
        if switch_firmware.is_lid_device(device):
            switch = switch_firmware.switch_at(session.read(), device)
            if switch is None:
                return ToolResult(1, "", f"-E- Cannot open Device: {device}. No such file or directory. MFE_CR_ERROR\n")
            return ToolResult(
                1,
                "",
                f"-E- Burning FW image failed: Image PSID ({fields['PSID']}) does not match the device's PSID "
                f"({switch_firmware.SWITCH_PSID}). Use --allow_psid_change to override.\n",
            )
        with session.update() as state:
            hca = find_device(state, device)
            if hca is None:
                return ToolResult(1, "", f"-E- Cannot open Device: {device}. No such file or directory. MFE_CR_ERROR\n")
            if fields["PSID"] != hca.board_id:
                return ToolResult(
                    1,
                    "",
                    f"-E- Burning FW image failed: Image PSID ({fields['PSID']}) does not match the device's PSID "
                    f"({hca.board_id}). Use --allow_psid_change to override.\n",
                )
            before = flash_version(hca)
            new = fields["FW Version"]
            hca.firmware_next = None if new == hca.firmware else new
        return ToolResult(
            0,
            "\n"
            f"    Current FW version on flash:  {before}\n"
            f"    New FW version:               {new}\n"
            "\n"
            "Burning FW image without signatures - OK  \n"
            "Restoring signature                     - OK  \n"
            "-I- To load new FW run mlxfwreset or reboot machine.\n",
        )
    if not command:
        return ToolResult(1, "", f"-E- No command given. See {program} -h for details\n")
    return ToolResult(1, "", f'-E- Invalid command "{command}" (the simulator answers q/query and b/burn)\n')


def flint(args: list[str], session: Session) -> ToolResult:
    """``flint -d DEV q``, ``flint -i IMAGE q``, ``flint -d DEV -i IMAGE [-y] burn`` (MFT)."""
    return _flint(args, session, "flint")


def mstflint(args: list[str], session: Session) -> ToolResult:
    """``mstflint``: the open-source flint, same commands and output."""
    return _flint(args, session, "mstflint")


# ---- mlxfwmanager ---------------------------------------------------------------------------


def _device_block(state: NodeState, number: int, hca: IbHcaState, available: str, status: str) -> list[str]:
    kind, part, description = _MODEL.get(hca.ca_type, ("ConnectX", "N/A", "N/A"))
    flash = flash_version(hca)
    rows = [f"     FW             {flash:<15}{available:<14}"]
    if flash != hca.firmware:
        rows.append(f"     FW (Running)   {hca.firmware:<15}{'N/A':<14}")
    return [
        f"Device #{number}:",
        "----------",
        "",
        f"  Device Type:      {kind}",
        f"  Part Number:      {part}",
        f"  Description:      {description}",
        f"  PSID:             {hca.board_id or 'N/A'}",
        f"  PCI Device Name:  {mst_name(state, hca)}",
        f"  Base GUID:        {_base_guid(hca)}",
        f"  Base MAC:         {_base_mac(hca)}",
        f"  Versions:         {'Current':<15}{'Available':<14}",
        *rows,
        f"     PXE            {_PXE:<15}{'N/A':<14}",
        f"     UEFI           {_UEFI:<15}{'N/A':<14}",
        "",
        f"  Status:           {status}",
        "",
    ]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def mlxfwmanager(args: list[str], session: Session) -> ToolResult:
    """``mlxfwmanager [--query] [-d DEV]`` and ``mlxfwmanager -u -i IMAGE [-d DEV] [-y] [-f]``."""
    device = _option(args, "-d", "--dev")
    image = _option(args, "-i", "--image-file")
    update = "-u" in args or "--update" in args
    force = "-f" in args or "--force" in args
    fields: dict[str, str] | None = None
    if image is not None:
        fields, why = read_image(image, session)
        if fields is None:
            return ToolResult(1, "", why + "\n")
    state = session.read()
    hcas = sorted(state.ib_hcas, key=lambda h: h.bus_id or h.name)
    if device is not None:
        one = find_device(state, device)
        if one is None:
            return ToolResult(1, "", f"-E- Failed to open device: {device}\n")
        hcas = [one]
    if update and fields is None:
        return ToolResult(1, "", "-E- No image file given, use -i (the simulator has no online update)\n")

    def plan(hca: IbHcaState) -> tuple[str, str, bool]:
        if fields is None or fields["PSID"] != hca.board_id:
            return "N/A", "No matching image found", False
        new = fields["FW Version"]
        if new == flash_version(hca) and not force:
            return new, "Up to date", False
        if _version_key(new) < _version_key(flash_version(hca)) and not force:
            return new, "Forced update required", False
        return new, "Update required", True

    out = ["Querying Mellanox devices firmware ...", ""]
    for number, hca in enumerate(hcas, 1):
        available, status, _ = plan(hca)
        out += _device_block(state, number, hca, available, status)
    if not update:
        return ToolResult(0, "\n".join(out) + "\n")
    todo = [(n, h) for n, h in enumerate(hcas, 1) if plan(h)[2]]
    if not todo:
        out += ["---------", "No devices require firmware update.", ""]
        return ToolResult(0, "\n".join(out) + "\n")
    if "-y" not in args and "--yes" not in args:
        out += [
            "---------",
            f"Found {len(todo)} device(s) requiring firmware update. Please use -u flag to perform "
            "the update (add -y to skip the confirmation).",
            "",
        ]  # the simulator has no terminal to ask on
        return ToolResult(1, "\n".join(out) + "\n")
    assert fields is not None
    with session.update() as live:
        for _, hca in todo:
            target = live.hca(hca.name)
            new = fields["FW Version"]
            target.firmware_next = None if new == target.firmware else new
    out += ["---------", f"Found {len(todo)} device(s) requiring firmware update...", ""]
    for number, _ in todo:
        out += [
            f"Device #{number}: Updating FW ...",
            "FSMST_INITIALIZE -   OK",
            "Writing Boot image component -   OK",
            "Done",
            "",
        ]
    out += ["Restart needed for updates to take effect."]
    return ToolResult(0, "\n".join(out) + "\n")


# ---- mlxfwreset -----------------------------------------------------------------------------


def mlxfwreset(args: list[str], session: Session) -> ToolResult:
    """``mlxfwreset -d DEV [-y] reset``: loads the firmware on flash (level 3: driver restart and PCI reset)."""
    device = _option(args, "-d", "--device")
    words = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in ("-d", "-l"))]
    if device is None:
        return ToolResult(1, "", "-E- Please specify a device (-d)\n")
    if not words or words[0] not in ("reset", "r", "query", "q"):
        return ToolResult(1, "", "-E- No command given: reset or query\n")
    state = session.read()
    hca = find_device(state, device)
    if hca is None:
        return ToolResult(1, "", f"-E- Failed to open device: {device}\n")
    mst = mst_name(state, hca)
    if words[0] in ("query", "q"):
        return ToolResult(
            0,
            'Reset-levels:\n0: Driver, PCI link, network link will remain up ("live-Patch")  -Supported     '
            "(default)\n3: Driver restart and PCI reset                                 -Supported\n",
        )
    head = f"The reset level for device, {mst} is:\n\n3: Driver restart and PCI reset\n"
    if "-y" not in args and "--yes" not in args:
        return ToolResult(1, head + "Continue with reset?[y/N] \n-E- Aborted by user\n")
    with session.update() as live:
        activate_firmware(live.hca(hca.name))
    return ToolResult(
        0,
        head + "Continue with reset?[y/N] y\n"
        "-I- Sending Reset Command To Fw             -Done\n"
        "-I- Stopping Driver                         -Done\n"
        "-I- Resetting PCI                           -Done\n"
        "-I- Starting Driver                         -Done\n"
        "-I- Restarting MST                          -Done\n"
        "-I- FW was loaded successfully.\n",
    )
