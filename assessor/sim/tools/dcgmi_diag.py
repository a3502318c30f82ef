"""Simulated ``dcgmi diag -r 1|2|3|4`` (or ``short|quick|medium|long|xlong``, or plugin names such as ``memtest``).

The results come from the node state: a GPU with a pending or failed row remap, uncorrectable ECC errors, a GPU
that fell off the bus, NVLinks down, a degraded PCIe link, persistence off, a driver mismatch or a fabric that
never completed fails the test that would catch it; a GPU with weak HBM cells (``latent_faults``) passes every
test but memtest, which only level 4 runs. Memtest's patterns also trip the weak cells for real: the run leaves
an uncorrectable error, Xid 48 and a failed row remap behind (:func:`_memtest_aftermath`).

Which tests a level runs is DCGM's own list (nvvs ``NvidiaValidationSuite::FillTestVectors``): level 2 adds
memory and PCIe to the software checks; level 3 the diagnostic (GEMM burn), the stress, power and memory
bandwidth plugins, EUD where its package is installed and, in DCGM 4, nvbandwidth; level 4 (xlong) adds
memtest and the pulse test. Two layouts:

- DCGM 3.x (``corpus/dcgmi_diag/01..05, 09, 10``): Metadata and Deployment under ``|-----`` rules, the other
  sections under ``+-----`` rules in the order Integration, Hardware, Stress; a fixed row per test (Pulse Test
  after Diagnostic in Hardware, Memtest after Memory Bandwidth in Stress); per-GPU results as ``Pass -
  GPUs: ...`` / ``Fail - GPU: N`` rows and messages wrapped at 45 characters.
- DCGM 4.x (``perf.dcgm_version`` 4.*; ``corpus/dcgmi_diag/06..08``): lower-case plugin names in the order the
  host engine ran them, grouped Deployment, Hardware, Integration, Stress (dcgmi/Diag.cpp
  HelperDisplayAsCli); memtest belongs to Stress and pulse_test to Hardware (nvvs PluginStrings.h); under each
  plugin a ``GPUn: Pass`` row per GPU, each GPU's warnings right after its row as ``Warning: GPUn``.

The exit status is dcgmi's (:func:`exit_status`): 0 when every test that ran passed, DCGM_ST_NVVS_ERROR (226)
when one failed, DCGM_ST_NVVS_ISOLATE_ERROR (205) when a failure calls for isolating the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assessor.sim.state import GpuState, NodeState
from assessor.sim.tools import Session, ToolResult

_NAME_W = 26  # "| " + name padded + "| "
_CELL_W = 45  # DCGM wraps result-cell text in pieces of this width
_RULE = "+" + "-" * 27 + "+" + "-" * 48 + "+\n"
_HEADER_RULE = "+" + "=" * 27 + "+" + "=" * 48 + "+\n"

# What the latent fault of a GPU with weak HBM cells is called in ``GpuState.latent_faults``.
WEAK_HBM_ROW = "weak-hbm-row"

_SOFTWARE = (
    "Denylist",
    "NVML Library",
    "CUDA Main Library",
    "Permissions and OS Blocks",
    "Persistence Mode",
    "Environment Variables",
    "Page Retirement/Row Remap",
    "Graphics Processes",
    "Inforom",
)
# test -> (DCGM 4.x plugin, lowest level that runs it). Keys are DCGM 3.x's row names (nvbandwidth has none).
_LEVEL: dict[str, tuple[str, int]] = {
    **{name: ("software", 1) for name in _SOFTWARE},
    "PCIe": ("pcie", 2),
    "GPU Memory": ("memory", 2),
    "Diagnostic": ("diagnostic", 3),
    "Targeted Stress": ("targeted_stress", 3),
    "Targeted Power": ("targeted_power", 3),
    "Memory Bandwidth": ("memory_bandwidth", 3),
    "EUD Test": ("eud", 3),
    "nvbandwidth": ("nvbandwidth", 3),
    "Pulse Test": ("pulse_test", 4),
    "Memtest": ("memtest", 4),
}
# DCGM 3.x rows, section by section, in dcgmi's fixed order (dcgmi/Diag.cpp 3.3: HelperDisplayIntegration,
# HelperDisplayHardware, HelperDisplayPerformance).
_LAYOUT_3X: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Deployment", _SOFTWARE),
    ("Integration", ("PCIe",)),
    ("Hardware", ("GPU Memory", "Diagnostic", "Pulse Test")),
    ("Stress", ("Targeted Stress", "Targeted Power", "Memory Bandwidth", "Memtest", "EUD Test")),
)
# DCGM 4.x plugins in the order the host engine runs them (software, the hardware list, pcie, the performance
# list), each with its category and the tests it folds in.
_PLUGINS_4X: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("software", "Deployment", _SOFTWARE),
    ("memory", "Hardware", ("GPU Memory",)),
    ("diagnostic", "Hardware", ("Diagnostic",)),
    ("eud", "Stress", ("EUD Test",)),
    ("nvbandwidth", "Hardware", ("nvbandwidth",)),
    ("memtest", "Stress", ("Memtest",)),
    ("pulse_test", "Hardware", ("Pulse Test",)),
    ("pcie", "Integration", ("PCIe",)),
    ("memory_bandwidth", "Stress", ("Memory Bandwidth",)),
    ("targeted_stress", "Stress", ("Targeted Stress",)),
    ("targeted_power", "Stress", ("Targeted Power",)),
)
_CATEGORIES_4X = ("Deployment", "Hardware", "Integration", "Stress")
# The Extended Utility Diagnostics ship in a separate package (nvidia-diagnostic-NNN) that a node rarely has:
# DCGM 3.3 lists the test at level 3 as "Skip - All" (corpus dcgmi_diag/05); DCGM 4 leaves it out.
_NOT_INSTALLED = {"EUD Test"}

# Run levels by number and by suite name (nvvs accepts "quick" and "short" alike).
RUN_LEVELS = {"1": 1, "2": 2, "3": 3, "4": 4, "quick": 1, "short": 1, "medium": 2, "long": 3, "xlong": 4}
# DCGM_ST_NVVS_ERROR (-30) as an exit status: a test failed, or the diagnostic could not run what was asked;
# DCGM_ST_NVVS_ISOLATE_ERROR (-51): a test failed with an error whose priority is DCGM_ERROR_ISOLATE
NVVS_ERROR_EXIT = 226
NVVS_ISOLATE_EXIT = 205


@dataclass
class _Outcome:
    """One test's result: GPUs that failed (with messages)."""

    failed: dict[int, list[str]] = field(default_factory=dict)  # GPU index -> messages
    errors: list[str] = field(default_factory=list)  # node-level messages (Deployment tests)
    isolating: set[int] = field(default_factory=set)  # GPUs with an error of priority DCGM_ERROR_ISOLATE

    def fail(self, gpu: int, message: str, *, isolate: bool = False) -> None:
        self.failed.setdefault(gpu, []).append(message)
        if isolate:
            self.isolating.add(gpu)


@dataclass
class Selection:
    """What ``-r`` asked for: a level (1-4), or tests by name (the software checks always run first)."""

    level: int | None
    tests: frozenset[str]


def four(state: NodeState) -> bool:
    """Whether the node's DCGM prints the 4.x layout."""
    return (state.perf.dcgm_version or "").startswith("4")


def parse_error(value: str) -> ToolResult | None:
    """dcgmi's own refusal of ``-r VALUE``, before it connects to the host engine; None when it takes it."""
    if len(value) > 1 or value in RUN_LEVELS:
        return None
    # modules/diag/DcgmDiagCommon.cpp: the only one-character values are the levels; TCLAP's handler adds a period
    # of its own, and dcgmi's main prints why it gave up (exit -2).
    return ToolResult(
        254,
        "",
        f"Error: Invalid value '{value}' specified for -r..\nAn error occurred trying to parse the command line.\n",
    )


def select(value: str, state: NodeState) -> Selection | ToolResult:
    """The tests ``-r VALUE`` runs on this node, or dcgmi's refusal."""
    dcgm4 = four(state)
    if value.lower() in RUN_LEVELS:
        level = RUN_LEVELS[value.lower()]
        names = {t for t, (_, lvl) in _LEVEL.items() if lvl <= level and (dcgm4 or t != "nvbandwidth")}
        return Selection(level, frozenset(names))
    refused = parse_error(value)
    if refused is not None:
        return refused
    wanted = [w.strip() for w in value.split(",") if w.strip()]
    plugins = {plugin for plugin, _ in _LEVEL.values() if dcgm4 or plugin != "nvbandwidth"}
    unknown = [w for w in wanted if w.lower() not in plugins or (w.lower() == "eud" and not dcgm4)]
    if dcgm4 and [w.lower() for w in wanted] == ["eud"]:
        # nvvs ThrowTestNotFoundExecption: the EUD plugin is exported only when its package is installed
        return ToolResult(NVVS_ERROR_EXIT, "Error: requested test(s): [eud] cannot find dependent package.\n")
    if unknown:
        if dcgm4:  # nvvs 4.x ThrowTestNotFoundExecption
            text = f"Error: requested test(s): [{', '.join(unknown)}] were not found among possible test choices.\n"
        else:  # nvvs 3.x (NVIDIA/DCGM#67)
            text = f'Error: requested test "{unknown[0]}" was not found among possible test choices.\n'
        return ToolResult(NVVS_ERROR_EXIT, text)
    chosen = {w.lower() for w in wanted} | {"software"}
    names = {t for t, (plugin, _) in _LEVEL.items() if plugin in chosen and t not in _NOT_INSTALLED}
    return Selection(None, frozenset(names))


def outcomes(state: NodeState, gpus: list[GpuState]) -> dict[str, _Outcome]:
    """Each test's outcome on this node (keyed by its DCGM 3.x name)."""
    out = {name: _Outcome() for name in _LEVEL}
    drv = state.driver
    if drv.version != drv.kernel_module_version:
        out["NVML Library"].errors.append(
            f"Error using NVML API nvmlInit: Driver/library version mismatch (library {drv.version}, "
            f"kernel module {drv.kernel_module_version}). Reboot or reload the nvidia kernel modules."
        )
    for g in gpus:
        if g.lost:
            out["NVML Library"].fail(
                g.index,
                f"GPU {g.index} is lost: it has fallen off the bus. Reboot the node; "
                "if it stays lost, reseat or RMA the GPU.",
                isolate=True,  # DCGM_FR_FALLEN_OFF_BUS
            )
            continue
        if g.fabric_state not in (None, "Completed"):
            out["CUDA Main Library"].fail(
                g.index,
                f"GPU {g.index}: error using CUDA API cuInit: system not yet initialized (802): the "
                "NVSwitch fabric is not configured. Start nvidia-fabricmanager and rerun diagnostics.",
            )
        if not g.persistence_mode:
            # The real message, typo included.
            out["Persistence Mode"].fail(
                g.index,
                f"Persistence mode for GPU {g.index} is currently disabled. The DCGM diagnostic requires "
                'peristence mode to be enabled. Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " '
                "as root.",
            )
        rows = g.remapped_rows
        if rows is not None and rows.failure:
            out["Page Retirement/Row Remap"].fail(
                g.index,
                f"GPU {g.index} had uncorrectable memory errors and row remapping failed. Run a field "
                "diagnostic on the GPU.",
            )
        elif rows is not None and rows.pending:
            out["Page Retirement/Row Remap"].fail(
                g.index,
                f"GPU {g.index} has uncorrectable memory errors and row remappings are pending. Drain the "
                "GPU and reset it or reboot the node.",
            )
        if g.ecc.volatile_uncorrected:
            out["GPU Memory"].fail(
                g.index,
                f"GPU {g.index} had {g.ecc.volatile_uncorrected} uncorrectable ECC errors (DBE) since the "
                "last reset. Drain the GPU and reset it or reboot the node.",
                isolate=True,  # DCGM_FR_VOLATILE_DBE_DETECTED
            )
        down = [str(link.link) for link in g.nvlinks if not link.active]
        if down:
            out["PCIe"].fail(
                g.index,
                f"GPU {g.index}'s NvLink link {', '.join(down)} is currently down Check DCGM and system logs "
                "for errors. Reset GPU. Restart DCGM. Rerun diagnostics.",
            )
        if g.pcie_width_current < g.pcie_width_max:
            out["PCIe"].fail(
                g.index,
                f"GPU {g.index} is running at PCI link width {g.pcie_width_current}X, which is below the "
                f"minimum allowed link width of {g.pcie_width_max}X.",
            )
        hot = [r for r in g.throttle_reasons if r in ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")]
        if hot:
            out["Targeted Power"].fail(
                g.index,
                f"GPU {g.index} Thermal violations totaling 12.1 seconds started at 3.2 seconds into the "
                f"test for GPU {g.index} Verify that the cooling on this machine is functional, including external, "
                "thermal material interface, fans, and any other components.",
            )
        if WEAK_HBM_ROW in g.latent_faults:
            # DCGM_FR_MEMORY_MISMATCH, the one per-GPU error the memtest plugin reports (nvvs memtest
            # Memtest::CheckPassFailSingleGpu), with its next step (TRIAGE_RUN_FIELD_DIAG_MSG).
            out["Memtest"].fail(
                g.index,
                f"A memory mismatch was detected on GPU {g.index}, but no error was reported by CUDA or NVML. "
                "Run a field diagnostic on the GPU.",
                isolate=True,  # DCGM_FR_MEMORY_MISMATCH
            )
    return out


def exit_status(selection: Selection, results: dict[str, _Outcome]) -> int:
    """dcgmi's status after its table (dcgmi/Diag.cpp GetFailureResult): 0 when every test that ran passed;
    DCGM_ST_NVVS_ISOLATE_ERROR when a failure's priority is ISOLATE (dcgmlib/src/dcgm_errors.c: a GPU fallen
    off the bus, a DBE, a memory mismatch), else DCGM_ST_NVVS_ERROR. Row remap failures and pending remaps are
    RESET, an NVLink down TRIAGE, persistence mode CONFIG, thermal violations MONITOR: all NVVS_ERROR."""
    ran = [results[name] for name in selection.tests if name in results]
    if any(outcome.isolating for outcome in ran):
        return NVVS_ISOLATE_EXIT
    if any(outcome.failed or outcome.errors for outcome in ran):
        return NVVS_ERROR_EXIT
    return 0


def _wrap(text: str) -> list[str]:
    """DCGM's wrapping: fixed-width pieces of the cell, cut mid-word."""
    return [text[i : i + _CELL_W] for i in range(0, len(text), _CELL_W)] or [""]


def _row(name: str, value: str) -> str:
    return f"| {name:<{_NAME_W}}| {value:<{_CELL_W}}  |\n"


def _message_rows(label: str, text: str) -> list[str]:
    pieces = _wrap(text)
    return [_row(label, pieces[0])] + [_row("", p) for p in pieces[1:]]


def _section(name: str, bar: str) -> str:
    head = f"{bar}-----  {name}  "
    left = head + "-" * (28 - len(head)) + "+"
    right = "-" * 48 + bar
    return left + right + "\n"


def _gpu_list(indices: list[int]) -> str:
    return ", ".join(str(i) for i in indices)


def _device_ids(gpus: list[GpuState], dcgm4: bool) -> str:
    """The ``GPU Device IDs Detected`` row: DCGM 3.x joins the ids with a bare comma
    (``2330,2330,...``, published 3.3 runs), 4.x with ``", "`` (dcgmi/Diag.cpp HelperDisplayVersionAndDevIds
    from 4.0.0 on). The value is one row: CommandOutputController cuts a longer one to the 46-character
    cell with ``...`` at its end."""
    ids = (", " if dcgm4 else ",").join(f"{g.pci_device_id >> 16:04x}" for g in gpus)
    if len(ids) > _CELL_W + 1:
        ids = ids[: _CELL_W - 2] + "..."
    return f"| {'GPU Device IDs Detected':<{_NAME_W}}| {ids:<{_CELL_W + 1}} |\n"


def _head(state: NodeState, gpus: list[GpuState], dcgm4: bool) -> list[str]:
    lines = ["Successfully ran diagnostic for group.\n", _RULE, _row("Diagnostic", "Result"), _HEADER_RULE]
    lines.append(_section("Metadata", "|"))
    lines.append(_row("DCGM Version", state.perf.dcgm_version or ("4.2.3" if dcgm4 else "3.3.5")))
    lines.append(_row("Driver Version Detected", state.driver.version))
    lines.append(_device_ids(gpus, dcgm4))
    return lines


def render_3x(
    state: NodeState, gpus: list[GpuState], selection: Selection, results: dict[str, _Outcome], *, listed: bool
) -> str:
    lines = _head(state, gpus, dcgm4=False)
    indices = [g.index for g in gpus]
    for cat, names in _LAYOUT_3X:
        if cat != "Deployment" and selection.level == 1 and not listed:
            # dcgmi 3.x prints the GPU sections for the GPUs of -i, or else for those a GPU test ran on
            # (Diag::PopulateGpuList): a short run without -i prints the software checks alone
            break
        lines.append(_section(cat, "|" if cat == "Deployment" else "+"))
        for name in names:
            if name not in selection.tests:
                continue  # a test the run left out has no row
            outcome = results[name]
            if name in _NOT_INSTALLED:
                lines.append(_row(name, "Skip - All"))
                continue
            if cat == "Deployment":
                failed = bool(outcome.failed or outcome.errors)
                lines.append(_row(name, "Fail" if failed else "Pass"))
                for message in outcome.errors + [m for ms in outcome.failed.values() for m in ms]:
                    lines.extend(_message_rows("Error", message))
                continue
            bad = sorted(i for i in outcome.failed if i in indices)
            good = [i for i in indices if i not in bad]
            if not bad:
                lines.append(_row(name, "Pass - All"))
                continue
            if good:
                lines.append(_row(name, f"Pass - GPUs: {_gpu_list(good)}"))
                lines.append(_row("", f"Fail - GPU{'s' if len(bad) > 1 else ''}: {_gpu_list(bad)}"))
            else:
                lines.append(_row(name, "Fail - All"))
            for i in bad:
                for message in outcome.failed[i]:
                    lines.extend(_message_rows("Warning", message))
    lines.append(_RULE)
    return "".join(lines)


def render_4x(
    state: NodeState, gpus: list[GpuState], selection: Selection, results: dict[str, _Outcome], *, listed: bool
) -> str:
    lines = _head(state, gpus, dcgm4=True)
    for cat in _CATEGORIES_4X:
        plugins = [
            (plugin, names)
            for plugin, category, names in _PLUGINS_4X
            if category == cat and any(n in selection.tests and n not in _NOT_INSTALLED for n in names)
        ]
        if not plugins:
            continue
        lines.append(_section(cat, "|" if cat == "Deployment" else "+"))
        for plugin, names in plugins:
            failed: dict[int, list[str]] = {}
            errors: list[str] = []
            for name in names:
                for i, ms in results[name].failed.items():
                    failed.setdefault(i, []).extend(ms)
                errors.extend(results[name].errors)
            lines.append(_row(plugin, "Fail" if failed or errors else "Pass"))
            for message in errors:  # errors of no GPU in particular: right under the plugin's row
                lines.extend(_message_rows("Warning", message))
            for g in gpus:
                lines.append(_row("", f"GPU{g.index}: {'Fail' if g.index in failed else 'Pass'}"))
                for message in failed.get(g.index, []):  # a GPU's own errors follow its row
                    lines.extend(_message_rows(f"Warning: GPU{g.index}", message))
    lines.append(_RULE)
    return "".join(lines)


def _memtest_aftermath(state: NodeState, uuids: set[str]) -> None:
    """What memtest's patterns leave on a GPU with weak HBM cells: the cells flip two bits in one word, ECC
    counts an uncorrectable error (Xid 48), and the row remapper finds no spare row left in that bank: the
    remap fails (nvidia-smi -q: Remapping Failure Occurred: Yes; DCGM's software check fails the GPU from now
    on). Once per GPU: a bank without spares stays that way."""
    from assessor.sim.tools.system import append_kernel_log

    for g in state.gpus:
        if g.uuid not in uuids or WEAK_HBM_ROW not in g.latent_faults:
            continue
        if g.remapped_rows is not None and g.remapped_rows.failure:
            continue
        g.ecc.volatile_uncorrected += 1
        g.ecc.aggregate_uncorrected += 1
        if g.remapped_rows is not None:
            g.remapped_rows.uncorrectable += 1
            g.remapped_rows.failure = True
        pci = g.bus_id[-12:-2].lower()
        append_kernel_log(
            state,
            [
                f"NVRM: Xid (PCI:{pci}): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) "
                "has been detected on GPU in the framebuffer at partition 2, subpartition 1."
            ],
        )


def diag(args: list[str], session: Session, *, unreachable: ToolResult | None = None) -> ToolResult:
    """``dcgmi diag -r LEVEL|NAMES [-i GPUS]``: the table, from the node's state. dcgmi checks its command line
    before it connects: a bad ``-r`` is refused even with no host engine running; a good one then gets
    ``unreachable`` (dcgmi's connection error) when one is given."""
    state = session.read()
    run: str | None = None
    chosen: list[int] | None = None
    it = iter(args)
    for arg in it:
        if arg in ("-r", "--run"):
            run = next(it, "")
            refused = parse_error(run)
            if refused is not None:
                return refused
        elif arg in ("-i", "--gpuList", "--entity-id"):
            try:
                chosen = [int(x) for x in next(it, "").split(",") if x]
            except ValueError:
                return _usage("ERROR: -i takes a comma-separated list of GPU ids")
        elif arg in ("-g", "--group", "-p", "--parameters", "-c", "--configfile"):
            next(it, None)
    if run is None:
        return _usage("ERROR: dcgmi diag needs a run level (-r)")
    if unreachable is not None:
        return unreachable
    selection = select(run, state)
    if isinstance(selection, ToolResult):
        return selection
    gpus = [g for g in state.gpus if chosen is None or g.index in chosen]
    if not gpus:
        return ToolResult(255, "Error: invalid GPU list: no such GPU.\n")
    results = outcomes(state, gpus)
    text = (render_4x if four(state) else render_3x)(state, gpus, selection, results, listed=chosen is not None)
    if "Memtest" in selection.tests and results["Memtest"].failed:
        # by UUID: inside a Slurm job the tool sees the job's GPUs renumbered from 0
        worn = {g.uuid for g in gpus if g.index in results["Memtest"].failed}
        with session.update() as node:
            _memtest_aftermath(node, worn)
    return ToolResult(exit_status(selection, results), text)


def _usage(message: str) -> ToolResult:
    return ToolResult(
        255, "", f"{message}\nUsage: dcgmi diag -r <1|2|3|4|short|medium|long|xlong|TEST> [-g groupId] [-i gpuList]\n"
    )
