"""The simulated ``lspci`` and ``ibdev2netdev``: the node's PCI devices and HCA-to-netdev map, from its state.

``lspci`` lists the GPUs, NVSwitches and HCAs (the devices gpulab cares about) in bus order, with the names
pciutils' pci.ids gives them (``3D controller: NVIDIA Corporation GH100 [H100 SXM5 80GB] (rev a1)``).
``-d VENDOR:[DEVICE]`` and ``-s [[DOMAIN:]BUS:]SLOT[.FUNC]`` filter, ``-n``/``-nn`` add the numeric ids,
``-v``/``-vv`` add a short verbose block whose ``LnkCap``/``LnkSta`` lines carry the PCIe link (a degraded
link says ``(downgraded)`` as lspci 3.6+ prints it). ``ibdev2netdev`` prints ``mlx5_0 port 1 ==> ib0 (Up)``
(corpus ``ibdev2netdev/01``).
"""

from __future__ import annotations

from dataclasses import dataclass

from assessor.sim.state import NodeState
from assessor.sim.tools import Session, ToolResult

NVIDIA = 0x10DE
MELLANOX = 0x15B3

# pci.ids names of the devices the fixtures hold (device id -> name), and the class each reports.
_NVIDIA_NAMES = {
    0x20B0: "GA100 [A100 SXM4 40GB]",
    0x20B2: "GA100 [A100 SXM4 80GB]",
    0x20B5: "GA100 [A100 PCIe 80GB]",
    0x20F1: "GA100 [A100 PCIe 40GB]",
    0x2330: "GH100 [H100 SXM5 80GB]",
    0x2321: "GH100 [H100 NVL]",
    0x2335: "GH100 [H200 SXM 141GB]",
    0x26B9: "AD102GL [L40S]",
    0x1AF1: "GA100 [A100 NVSwitch]",
    0x22A3: "GH100 [H100 NVSwitch]",
}
# ConnectX part (ibstat's CA type MTxxxx) -> PCI device id and name; with the PCIe link the card trains at.
_MELLANOX = {
    "MT4123": (0x101B, "MT28908 Family [ConnectX-6]", 4),
    "MT4125": (0x101D, "MT2892 Family [ConnectX-6 Dx]", 4),
    "MT4126": (0xA2D6, "MT42822 BlueField-2 integrated ConnectX-6 Dx network controller", 4),
    "MT4129": (0x1021, "MT2910 Family [ConnectX-7]", 5),
}
_GT_PER_S = {1: "2.5GT/s", 2: "5GT/s", 3: "8GT/s", 4: "16GT/s", 5: "32GT/s", 6: "64GT/s"}
_CLASSES = {"3D controller": "0302", "Bridge": "0680", "Infiniband controller": "0207", "Ethernet controller": "0200"}


@dataclass(frozen=True)
class PciDevice:
    """One line of ``lspci``: where the device sits, what it is, and its PCIe link."""

    domain: int
    bus: int
    slot: int
    function: int
    device_class: str
    vendor: int
    device: int
    name: str
    subsystem: int
    numa_node: int | None
    link_gen: tuple[int, int]  # (current, max)
    link_width: tuple[int, int]

    @property
    def address(self) -> str:
        return f"{self.bus:02x}:{self.slot:02x}.{self.function:x}"


def _split_bus_id(bus_id: str) -> tuple[int, int, int, int]:
    """``00000000:18:00.0`` or ``0000:1a:00.0`` -> (domain, bus, slot, function)."""
    domain, bus, devfn = bus_id.split(":")
    slot, _, function = devfn.partition(".")
    return int(domain, 16), int(bus, 16), int(slot, 16), int(function or "0", 16)


def pci_devices(state: NodeState) -> list[PciDevice]:
    """The GPUs, NVSwitches and HCAs of the node, in bus order."""
    devices: list[PciDevice] = []
    for gpu in state.gpus:
        if gpu.lost:
            continue  # fallen off the bus: config space reads fail and lspci no longer lists it
        device = gpu.pci_device_id >> 16
        name = _NVIDIA_NAMES.get(device, f"Device {device:04x}")
        gens = (gpu.pcie_gen_current, gpu.pcie_gen_max)
        widths = (gpu.pcie_width_current, gpu.pcie_width_max)
        devices.append(
            PciDevice(
                *_split_bus_id(gpu.bus_id),
                "3D controller",
                NVIDIA,
                device,
                name,
                gpu.pci_subsystem_id >> 16,
                gpu.numa_node,
                gens,
                widths,
            )
        )
    hopper = any(g.architecture == "Hopper" for g in state.gpus)
    for switch in state.nvswitches:
        device = 0x22A3 if hopper else 0x1AF1
        devices.append(
            PciDevice(
                *_split_bus_id(switch.bus_id),
                "Bridge",
                NVIDIA,
                device,
                f"Device {device:04x}",  # pci.ids of the distributions' pciutils do not name NVSwitches
                0x1796 if hopper else 0x1620,
                None,
                (4, 4),
                (2, 2),
            )
        )
    for hca in state.ib_hcas:
        if hca.bus_id is None:
            continue
        device, name, gen = _MELLANOX.get(hca.ca_type, (0x1021, f"Device {hca.ca_type}", 4))
        ethernet = all(p.link_layer == "Ethernet" for p in hca.ports) and hca.ports
        devices.append(
            PciDevice(
                *_split_bus_id(hca.bus_id),
                "Ethernet controller" if ethernet else "Infiniband controller",
                MELLANOX,
                device,
                name,
                0x0023,
                hca.numa_node,
                (gen, gen),
                (16, 16),
            )
        )
    return sorted(devices, key=lambda d: (d.domain, d.bus, d.slot, d.function))


def _vendor_name(vendor: int) -> str:
    return "NVIDIA Corporation" if vendor == NVIDIA else "Mellanox Technologies"


def _matches_id(dev: PciDevice, spec: str) -> bool | None:
    """``-d [VENDOR]:[DEVICE]``; None when the spec is not one lspci accepts."""
    vendor, colon, device = spec.partition(":")
    if not colon:
        return None
    try:
        v = int(vendor, 16) if vendor not in ("", "*") else None
        d = int(device, 16) if device not in ("", "*") else None
    except ValueError:
        return None
    return (v is None or v == dev.vendor) and (d is None or d == dev.device)


def _matches_slot(dev: PciDevice, spec: str) -> bool | None:
    """``-s [[DOMAIN:]BUS:]SLOT[.FUNC]``; None when the spec does not parse."""
    parts = spec.split(":")
    try:
        devfn = parts[-1]
        slot, dot, func = devfn.partition(".")
        if slot not in ("", "*") and int(slot, 16) != dev.slot:
            return False
        if dot and func not in ("", "*") and int(func, 16) != dev.function:
            return False
        if len(parts) >= 2 and parts[-2] not in ("", "*") and int(parts[-2], 16) != dev.bus:
            return False
        if len(parts) == 3 and parts[0] not in ("", "*") and int(parts[0], 16) != dev.domain:
            return False
    except ValueError:
        return None
    return len(parts) <= 3


def _line(dev: PciDevice, numeric: int) -> str:
    rev = " (rev a1)" if dev.vendor == NVIDIA else ""
    klass = _CLASSES.get(dev.device_class, "0000")
    ids = f"{dev.vendor:04x}:{dev.device:04x}"
    if numeric == 1:
        return f"{dev.address} {klass}: {ids}{rev}"
    name = f"{_vendor_name(dev.vendor)} {dev.name}"
    if numeric >= 2:
        return f"{dev.address} {dev.device_class} [{klass}]: {name} [{ids}]{rev}"
    return f"{dev.address} {dev.device_class}: {name}{rev}"


def _link(gen: int, width: int, max_gen: int, max_width: int) -> str:
    speed = _GT_PER_S.get(gen, "unknown")
    # pciutils 3.6+ marks each against LnkCap: "(ok)" or "(downgraded)"
    speed += " (downgraded)" if gen < max_gen else " (ok)"
    lanes = f"x{width}" + (" (downgraded)" if width < max_width else " (ok)")
    return f"Speed {speed}, Width {lanes}"


def _verbose(dev: PciDevice) -> list[str]:
    lines = [f"\tSubsystem: {_vendor_name(dev.vendor)} Device {dev.subsystem:04x}"]
    if dev.numa_node is not None:
        lines.append(f"\tNUMA node: {dev.numa_node}")
    lines.append("\tCapabilities: [78] Express (v2) Endpoint, MSI 00")
    cap_speed = _GT_PER_S.get(dev.link_gen[1], "unknown")
    lines.append(f"\t\tLnkCap:\tPort #0, Speed {cap_speed}, Width x{dev.link_width[1]}, ASPM not supported")
    lines.append("\t\tLnkSta:\t" + _link(dev.link_gen[0], dev.link_width[0], dev.link_gen[1], dev.link_width[1]))
    driver = "nvidia" if dev.vendor == NVIDIA and dev.device_class == "3D controller" else "mlx5_core"
    if dev.device_class == "Bridge":
        driver = "nvidia-nvswitch"
    lines.append(f"\tKernel driver in use: {driver}")
    lines.append("")
    return lines


_USAGE = "Usage: lspci [<switches>]\n"


def lspci(args: list[str], session: Session) -> ToolResult:
    """``lspci [-n|-nn] [-v|-vv|-vvv] [-D] [-d VENDOR:DEVICE] [-s SLOT]``."""
    numeric = 0
    verbose = 0
    ids: str | None = None
    slot: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-d", "-s"):
            if i + 1 >= len(args):
                return ToolResult(2, "", f"lspci: option requires an argument -- '{arg[1]}'\n{_USAGE}")
            if arg == "-d":
                ids = args[i + 1]
            else:
                slot = args[i + 1]
            i += 2
            continue
        if arg.startswith("-d") or arg.startswith("-s"):
            if arg[1] == "d":
                ids = arg[2:]
            else:
                slot = arg[2:]
        elif arg in ("-n", "-nn", "-nnn"):
            numeric = len(arg) - 1
        elif arg in ("-v", "-vv", "-vvv"):
            verbose = len(arg) - 1
        elif arg in ("-D", "-k", "-t", "-tv"):
            pass  # accepted; the listing does not change for the devices simulated
        else:
            bad = arg[1:2] if arg.startswith("-") else arg
            return ToolResult(2, "", f"lspci: invalid option -- '{bad}'\n{_USAGE}")
        i += 1
    devices = pci_devices(session.read())
    out: list[str] = []
    for dev in devices:
        if ids is not None:
            ok = _matches_id(dev, ids)
            if ok is None:
                return ToolResult(2, "", f"lspci: -d: Invalid vendor ID\n{_USAGE}")
            if not ok:
                continue
        if slot is not None:
            ok = _matches_slot(dev, slot)
            if ok is None:
                return ToolResult(2, "", f"lspci: -s: Invalid slot number\n{_USAGE}")
            if not ok:
                continue
        out.append(_line(dev, numeric))
        if verbose:
            out += _verbose(dev)
    return ToolResult(0, "".join(line + "\n" for line in out))


def ibdev2netdev(args: list[str], session: Session) -> ToolResult:
    """``ibdev2netdev [-v]``: each HCA port and the network interface it backs, Up or Down."""
    verbose = False
    for arg in args:
        if arg == "-v":
            verbose = True
        else:
            return ToolResult(1, "", f"Usage: ibdev2netdev [-v]\nunknown option {arg}\n")
    state = session.read()
    lines = []
    for hca in state.ib_hcas:
        for port in hca.ports:
            netdev = port.netdev or f"ib{hca.name.rsplit('_', 1)[-1]}"
            link = "Up" if port.state == "Active" else "Down"
            if verbose:
                _device, name, _gen = _MELLANOX.get(hca.ca_type, (0, hca.ca_type, 0))
                state_word = port.state.upper()
                lines.append(
                    f"{hca.bus_id or ''} {hca.name} ({hca.ca_type} - {hca.board_id or 'N/A'}) {name} "
                    f"fw {hca.firmware} port {port.port} ({state_word}) ==> {netdev} ({link})"
                )
            else:
                lines.append(f"{hca.name} port {port.port} ==> {netdev} ({link})")
    return ToolResult(0, "".join(line + "\n" for line in lines))
