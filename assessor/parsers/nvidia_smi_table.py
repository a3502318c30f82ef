"""The default ``nvidia-smi`` table, as drivers 450 to 580 print it.

::

    | NVIDIA-SMI 565.57.01              Driver Version: 565.57.01      CUDA Version: 12.7     |
    |-----------------------------------------+------------------------+----------------------+
    | GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
    | Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
    |                                         |                        |               MIG M. |
    |=========================================+========================+======================|
    |   0  NVIDIA H100 80GB HBM3          On  |   00000000:18:00.0 Off |                    0 |
    | N/A   30C    P0            100W /  700W |       1MiB /  81559MiB |      0%      Default |
    |                                         |                        |             Disabled |
    +-----------------------------------------+------------------------+----------------------+

Each GPU is two rows (three where the header has ``MIG M.``) of three ``|`` cells; column
widths changed (R530 widened them, 470 had ``Persistence-M|`` with no space), so cells are split
on ``|`` and read by position within the cell rather than by column offsets. The ``MIG
devices`` box and the ``Processes`` box follow. Names longer than the cell are cut by
nvidia-smi itself (``NVIDIA GeForce ...``) and kept as printed.
"""

from __future__ import annotations

import re

from assessor.errors import ParseError
from assessor.facts import DriverInfo, Gpu, GpuProcess, MigDevice, NodeFacts
from assessor.parsers._nvsmi import check_text, is_not_available, raise_on_failure, says_no_devices
from assessor.parsers._text import last_content_line
from assessor.pci import normalize_bus_id

# R610 renamed the fields: "KMD Version:" for the driver, "CUDA UMD Version:" for CUDA.
_VERSIONS = re.compile(
    r"NVIDIA-SMI\s+(?P<smi>\S+)\s+(?:Driver|KMD) Version:\s+(?P<driver>\S+)"
    r"(?:\s+CUDA(?: UMD)? Version:\s+(?P<cuda>\S+))?"
)
_ROW1_BUS = re.compile(r"^(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])(?:\s+(?P<disp>\S+))?$")
_TEMP = re.compile(r"^(?P<temp>\d+)C$")
_WATTS = re.compile(r"^(?P<w>\d+(?:\.\d+)?)W$")
_MIB = re.compile(r"^(?P<n>\d+)MiB$")
_PSTATE = re.compile(r"^P\d{1,2}$")
_PERCENT = re.compile(r"^(?P<n>\d{1,3})%$")
_MIG_ROW = re.compile(r"^(?P<gpu>\d+)\s+(?P<gi>\d+)\s+(?P<ci>\d+)\s+(?P<dev>\d+)$")
_PROCESS = re.compile(
    r"^(?P<gpu>\d+)\s+(?P<gi>\d+|N/A)\s+(?P<ci>\d+|N/A)\s+(?P<pid>\d+)\s+(?P<type>[A-Z+]{1,4})\s+(?P<rest>.*)$"
)
_OLD_PROCESS = re.compile(r"^(?P<gpu>\d+)\s+(?P<pid>\d+)\s+(?P<type>[A-Z+]{1,4})\s+(?P<rest>.*)$")


def parse(text: str) -> NodeFacts:
    """Parse the default ``nvidia-smi`` output into ``driver``, ``gpus``, ``mig_devices`` and ``gpu_processes``.

    A GPU row whose cells cannot be read raises a ParseError naming the line, except on the
    last line of the file (a paste cut short). nvidia-smi's failure text raises a ParseError
    carrying it; "No devices were found" gives no GPUs.
    """
    lines = check_text(text)
    if says_no_devices(text):
        return NodeFacts(gpus=[])
    last = last_content_line(lines)
    driver: DriverInfo | None = None
    gpus: list[Gpu] = []
    mig_devices: list[MigDevice] = []
    processes: list[GpuProcess] = []
    box = ""  # "gpus", "mig", "processes" once past that box's "|===" rule
    header_box = ""  # the box whose header rows are being read
    row = 0  # which row of the current GPU (1, 2, 3)
    mig_row: MigDevice | None = None
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line:
            continue
        number = i + 1
        if m := _VERSIONS.search(line):
            driver = DriverInfo(version=m["driver"], cuda_version=_value(m["cuda"]))
            continue
        if line.startswith("+") or (line.startswith("|") and set(line) <= set("|-+")):
            row = 0  # a rule between GPUs (or the box's frame)
            mig_row = None
            continue
        if line.startswith("|") and set(line) <= set("|=+"):
            box, header_box = header_box, ""
            row = 0
            continue
        if not line.startswith("|"):
            continue  # the date line, a prompt the cleaner missed, prose around the paste
        cells = [c.strip() for c in line.strip("|").split("|")]
        first = cells[0]
        if first.startswith("GPU  Name") or first.startswith("GPU Name"):
            header_box, box = "gpus", ""
            continue
        if first.startswith("MIG devices"):
            header_box, box = "mig", ""
            continue
        if first.startswith("Processes"):
            header_box, box = "processes", ""
            continue
        try:
            if box == "gpus":
                row += 1
                _gpu_row(gpus, cells, row)
            elif box == "mig":
                mig_row = _mig_row(mig_devices, cells, mig_row)
            elif box == "processes":
                _process_row(processes, cells)
        except (ValueError, IndexError) as exc:
            if i == last:
                continue  # the paste ends inside this row
            raise ParseError(f"cannot read this nvidia-smi table row ({exc}): {line[:80]!r}", line=number) from None
    joined = "\n".join(lines)  # one scan of what was read, not a generator over a million lines
    seen_box = bool(box or header_box or gpus or processes or mig_devices) or "Processes:" in joined
    if driver is None and not seen_box:
        raise_on_failure(text)
        first_line = next((i for i, raw in enumerate(lines, start=1) if raw.strip()), 1)
        raise ParseError("not the default nvidia-smi table (no 'NVIDIA-SMI ... Driver Version' line)", line=first_line)
    return NodeFacts(
        driver=driver,
        # An excerpt holding only the process box says nothing about the GPU list.
        gpus=gpus if gpus or driver is not None else None,
        mig_devices=mig_devices or None,
        gpu_processes=processes if "Processes" in joined else None,
    )


def _value(text: str | None) -> str | None:
    return None if text is None or is_not_available(text) else text


def _gpu_row(gpus: list[Gpu], cells: list[str], row: int) -> None:
    if len(cells) < 3:
        raise ValueError(f"{len(cells)} cells where the table has 3")
    if row == 1:
        # "0  NVIDIA H100 80GB HBM3          On": split by hand (a lazy name group is quadratic).
        words = cells[0].split()
        if len(words) < 2 or not words[0].isdigit() or words[-1] not in ("On", "Off", "N/A"):
            raise ValueError("no GPU index, name and persistence mode")
        bus = _ROW1_BUS.match(cells[1])
        gpus.append(
            Gpu(
                index=int(words[0]),
                name=" ".join(words[1:-1]) or None,
                persistence_mode={"On": True, "Off": False}.get(words[-1]),
                bus_id=normalize_bus_id(bus["bus"]) if bus else None,
                ecc_volatile_uncorrected=int(cells[2]) if cells[2].isdigit() else None,
            )
        )
        return
    if not gpus:
        raise ValueError("a GPU row before any GPU")
    gpu = gpus[-1]
    if row == 2:
        # "N/A   30C    P0            100W /  700W": fan, temp, perf, power draw / cap. " / " splits
        # draw from cap; a bare "/" would also split the "N/A" of a fan or a cap.
        for word in cells[0].split():
            if (t := _TEMP.match(word)) and gpu.temperature_c is None:
                gpu.temperature_c = int(t["temp"])
            elif _PSTATE.match(word) and gpu.performance_state is None:
                gpu.performance_state = word
        left, slash, right = cells[0].rpartition(" / ")
        if slash and left.split() and right.split():
            draw = _WATTS.match(left.split()[-1])
            cap = _WATTS.match(right.split()[0])
            gpu.power_draw_w = float(draw["w"]) if draw else None
            gpu.power_limit_w = float(cap["w"]) if cap else None
        _used, slash, total_text = cells[1].rpartition(" / ")
        if slash and total_text.split() and (total := _MIB.match(total_text.split()[0])):
            gpu.memory_total_mib = int(total["n"])
        util = cells[2].split()
        if len(util) >= 2:
            gpu.compute_mode = _value(util[-1])
            if percent := _PERCENT.match(util[0]):
                gpu.utilization_gpu_pct = float(percent["n"])
    elif row == 3:
        mig = cells[2]
        gpu.mig_mode_current = {"Enabled": True, "Disabled": False}.get(mig)


def _mig_row(devices: list[MigDevice], cells: list[str], previous: MigDevice | None) -> MigDevice | None:
    """A MIG devices row; the second row of a device (BAR1 usage) adds nothing."""
    m = _MIG_ROW.match(cells[0])
    if m is None:
        if previous is not None or not cells[0]:
            return previous  # the device's BAR1 row, or a header row
        raise ValueError("no GPU, GI, CI and MIG device ids")
    used_text, _slash, total_text = (cells[1] if len(cells) > 1 else "").partition(" / ")
    used = _MIB.match(used_text.strip())
    total = _MIB.match(total_text.strip())
    sm = cells[2].split() if len(cells) > 2 else []
    device = MigDevice(
        gpu=int(m["gpu"]),
        gi_id=int(m["gi"]),
        ci_id=int(m["ci"]),
        mig_device=int(m["dev"]),
        memory_used_mib=int(used["n"]) if used else None,
        memory_total_mib=int(total["n"]) if total else None,
        sm=int(sm[0]) if sm and sm[0].isdigit() else None,
    )
    devices.append(device)
    return device


def _process_row(processes: list[GpuProcess], cells: list[str]) -> None:
    text = cells[0]
    if not text or text.lower().startswith("no running processes"):
        return
    m = _PROCESS.match(text) or _OLD_PROCESS.match(text)
    if m is None:
        raise ValueError("no GPU, PID and type")
    groups = m.groupdict()
    rest = m["rest"].split()
    memory = _MIB.match(rest[-1]) if rest else None
    name = " ".join(rest[:-1] if rest and (memory or rest[-1] == "N/A") else rest)
    processes.append(
        GpuProcess(
            gpu=int(m["gpu"]),
            pid=int(m["pid"]),
            gi_id=_int_or_none(groups.get("gi")),
            ci_id=_int_or_none(groups.get("ci")),
            type=m["type"],
            name=name or None,
            memory_mib=int(memory["n"]) if memory else None,
        )
    )


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None
