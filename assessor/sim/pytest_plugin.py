"""A pytest plugin (entry point ``pytest11``): run a test suite's NVML code against a simulated node.

Installed with gpulab, it gives every test suite two fixtures:

- ``sim_node``: one node for the test. Which one: the indirect parameter
  (``@pytest.mark.parametrize("sim_node", ["hgx-h100", "dgx-a100"], indirect=True)``), else the marker
  (``@pytest.mark.sim_node("pcie-l40s", faults=["row-remap-pending"])``; a fault with options is a mapping,
  ``faults=[{"fault": "ecc-uncorrectable", "gpu": 3}]``), else ``--sim-node NAME`` on the
  command line, else ``hgx-h100``. A name is a shipped fixture; a path is a state file (``gpulab sim init``,
  ``gpulab sim record``), copied so the test cannot change the original.
- ``make_sim_node``: a factory, ``make_sim_node("dgx-a100", faults=[...], root=True)``, for tests that want
  several nodes in turn (the last one made is the one the environment names).

While the test runs, ``GPULAB_SIM_STATE`` names the node's state file (in ``tmp_path``), ``GPULAB_SIM_EUID`` is
0 (root; 1000 with ``root=False``), ``PATH`` starts with the simulated tools (``nvidia-smi``, ``dcgmi``...) and
``pynvml`` answers from the node through gpulab's ``libnvidia-ml.so.1`` (:mod:`assessor.sim.pynvml_hook`); all of
it is undone after the test. The test's own ``import pynvml`` needs nothing else, and names bound at import time
(``from pynvml import nvmlDeviceGetCount`` at the top of the module under test) work too: pynvml looks each C
function up in its library when it is called.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from assessor.sim.state import NodeState

DEFAULT_NODE = "hgx-h100"


@dataclass
class SimNode:
    """A simulated node a test runs against: its state file and how to reach it."""

    path: Path  # the state file GPULAB_SIM_STATE names
    source: str  # the fixture name or file it was built from
    bin_dir: Path  # the simulated tools, first on PATH
    faults: list[Any] = field(default_factory=list)  # names, or {"fault": name, option: value...}

    def state(self) -> NodeState:
        """The node as it is now (pynvml and the tools may have changed it)."""
        from assessor.sim.state import load_state

        return load_state(self.path)

    def run(self, *argv: str) -> Any:
        """Run a simulated tool in-process: ``node.run("nvidia-smi", "mig", "-lgi").stdout``."""
        from assessor.sim.tools import Session, run_tool

        return run_tool(list(argv), Session(path=self.path, env={"GPULAB_SIM_STATE": str(self.path)}))


Faults = Sequence["str | Mapping[str, Any]"]


def build_node(source: str | Path | NodeState, directory: Path, faults: Faults = (), *, name: str = "node") -> Path:
    """Write a node's state file in ``directory``: from a fixture name, a state file or a NodeState."""
    from assessor.errors import InputError
    from assessor.sim import faults as fault_catalogue
    from assessor.sim.fixtures import fixture_names, load_fixture
    from assessor.sim.state import load_state, save_state

    if isinstance(source, NodeState):
        state = source
    elif str(source) in fixture_names():
        state = load_fixture(str(source))
    else:
        state = load_state(source)  # InputError naming the file when it is not a state
    for item in faults:
        # a fault's name, or a mapping with its options: {"fault": "ecc-uncorrectable", "gpu": 3}
        options = dict(item) if isinstance(item, Mapping) else {}
        fault = options.pop("fault", None) if isinstance(item, Mapping) else item
        if fault not in fault_catalogue.FAULTS:
            raise pytest.UsageError(f"unknown simulator fault {fault!r} (known: {', '.join(fault_catalogue.FAULTS)})")
        try:
            fault_catalogue.FAULTS[fault].apply(state, **options)
        except InputError as exc:
            raise pytest.UsageError(f"simulator fault {fault!r}: {exc}") from None
    path = directory / f"{name}.json"
    save_state(state, path)
    return path


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpulab", "gpulab simulated nodes")
    group.addoption(
        "--sim-node",
        default=None,
        help=f"fixture name or state file the sim_node fixture uses by default ({DEFAULT_NODE})",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sim_node(source, faults=()): the simulated node (fixture name or state file) the test runs on"
    )


def _shims(directory: Path) -> Path:
    from assessor.sim.shims import write_shims

    bin_dir = directory / "bin"
    if not bin_dir.exists():
        write_shims(bin_dir)
    return bin_dir


@pytest.fixture
def make_sim_node(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., SimNode]]:
    """A factory of simulated nodes; each call points the environment and pynvml at the new node."""
    from assessor.sim import pynvml_hook

    workdir = tmp_path_factory.mktemp("sim_node")
    bin_dir = _shims(workdir)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    made: list[SimNode] = []
    we_installed = False

    def make(source: str | Path | NodeState = DEFAULT_NODE, faults: Faults = (), *, root: bool = True) -> SimNode:
        nonlocal we_installed
        path = build_node(source, workdir, faults, name=f"node{len(made)}")
        monkeypatch.setenv("GPULAB_SIM_STATE", str(path))
        # A user (uid 1000) when not root, even if the test itself runs as root (in a container).
        monkeypatch.setenv("GPULAB_SIM_EUID", "0" if root else "1000")
        try:
            import pynvml  # noqa: F401
        except ImportError:  # no nvidia-ml-py here: the tools still work
            pass
        else:
            if not pynvml_hook.installed():
                pynvml_hook.install()
                we_installed = True
        label = source.fixture if isinstance(source, NodeState) else str(source)
        node = SimNode(path=path, source=label, bin_dir=bin_dir, faults=list(faults))
        made.append(node)
        return node

    yield make
    if we_installed:
        pynvml_hook.uninstall()


@pytest.fixture
def sim_node(request: pytest.FixtureRequest, make_sim_node: Callable[..., SimNode]) -> SimNode:
    """The simulated node of this test (see the module docstring for how it is chosen)."""
    faults: Faults = ()
    source: Any = getattr(request, "param", None)
    marker = request.node.get_closest_marker("sim_node")
    if source is None and marker is not None:
        source = marker.args[0] if marker.args else marker.kwargs.get("source")
        faults = marker.kwargs.get("faults", ())
    if source is None:
        source = request.config.getoption("--sim-node", default=None) or DEFAULT_NODE
    if isinstance(source, tuple):  # indirect parameter ("dgx-a100", ["row-remap-pending"])
        source, faults = source
    return make_sim_node(source, faults)


__all__ = ["SimNode", "build_node", "make_sim_node", "sim_node"]
