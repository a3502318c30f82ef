"""Point the real ``pynvml`` at a simulated node: ``import pynvml`` in any program, no GPU needed.

The wheel ships ``gpulab_nvml_hook.pth``; at interpreter start-up its one line imports this module only when
``GPULAB_SIM_STATE`` is set (so a normal interpreter pays one environment lookup). :func:`activate` then waits
for ``pynvml`` to be imported (a meta-path finder, so interpreters that never use NVML, such as the simulated
tools themselves, import nothing more) and :func:`install` swaps the module's ``nvml*`` functions for a
:class:`~assessor.sim.mock_nvml.MockNvml` over the state file. Everything else of ``pynvml`` stays its own:
constants, ctypes structures and the ``NVMLError_*`` classes, so ``except pynvml.NVMLError_NotSupported``
works unchanged. A pynvml function the mock does not simulate raises ``NVMLError_FunctionNotFound``, what
pynvml raises when the driver's library lacks a symbol.

The state file is the node: a change made through pynvml (MIG mode, instances, persistence, ECC mode) is
written to it under the simulator's lock, so the simulated ``nvidia-smi`` sees it, and a change made by the
tools (``nvidia-smi -mig 1``, ``-r``, a fault) shows up in the next pynvml call. Which file is read is decided
at each ``nvmlInit`` from ``GPULAB_SIM_STATE``; changes need root as on a real node (``GPULAB_SIM_EUID``
pretends a user, as for the shims).

Without the environment variable nothing is touched and pynvml talks to the real driver.
"""

from __future__ import annotations

import os
import sys

# Every Python process started with GPULAB_SIM_STATE set imports this module (the simulated tools are Python
# too), so it imports nothing at run time beyond os and sys: no importlib.abc (which pulls importlib.resources,
# ~70 ms) and no typing (~25 ms). The finder and loader protocols need no base class; mypy honours any
# TYPE_CHECKING name.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import importlib.machinery
    from collections.abc import Sequence
    from types import ModuleType
    from typing import Any

ENV = "GPULAB_SIM_STATE"
_ORIGINALS = "_gpulab_originals"  # attribute of the patched pynvml module: the functions it had before


def activate() -> None:
    """Called from the ``.pth`` line: patch pynvml now if it is loaded, else as soon as it is imported."""
    if not os.environ.get(ENV):
        return
    module = sys.modules.get("pynvml")
    if module is not None:
        install(module)
    elif not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


class _Finder:
    """Finds ``pynvml`` with the other finders, then patches it right after it runs."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != "pynvml":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _Loader(spec.loader)  # type: ignore[assignment]  # a Loader by protocol
                return spec
        return None


class _Loader:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self.inner.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        if os.environ.get(ENV):
            install(module)


def _env_nvml() -> Any:
    """A MockNvml whose state file (and caller's uid) is read from the environment at each ``nvmlInit``."""
    import pynvml

    from assessor.sim.mock_nvml import MockNvml

    class EnvNvml(MockNvml):
        def nvmlInitWithFlags(self, flags: int) -> None:
            if self._refcount == 0:
                path = os.environ.get(ENV)
                if not path:
                    # No node named: what pynvml says on a host without the driver's library.
                    raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
                if not os.path.exists(path):
                    raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
                if self.path is None or str(self.path) != path:
                    self.point_at(path)  # another node: its own handles
                self.euid = int(os.environ.get("GPULAB_SIM_EUID", os.geteuid()))
            super().nvmlInitWithFlags(flags)

    return EnvNvml(path=os.environ.get(ENV) or os.devnull)


def install(module: ModuleType | None = None) -> Any:
    """Patch ``pynvml`` (imported if needed) to answer from the simulated node; returns the mock.

    Idempotent. Each ``nvml*`` function the mock simulates is replaced by the mock's; pynvml's lookup of C
    symbols answers ``FunctionNotFound`` for the rest (pynvml's own wrappers then raise it as they would).
    """
    if module is None:
        import pynvml as module  # type: ignore[no-redef]
    assert module is not None
    if hasattr(module, _ORIGINALS):
        return getattr(module, "_gpulab_mock")  # noqa: B009
    building = sys.modules.get("assessor.sim.mock_nvml")
    if building is not None and not hasattr(building, "MockNvml"):
        # gpulab's own mock is importing pynvml (a mock: target in a shell where GPULAB_SIM_STATE is set): the
        # mock does not exist yet; the mock module runs this once it is built (its last lines)
        patched = module
        building.__dict__["_after_build"] = lambda: install(patched)
        return None
    from assessor.sim.mock_nvml import MockNvml

    mock = _env_nvml()
    originals: dict[str, Any] = {}
    for name in dir(MockNvml):
        if name.startswith("nvml") and hasattr(module, name):
            originals[name] = getattr(module, name)
            setattr(module, name, getattr(mock, name))

    def not_in_the_simulator(name: str) -> Any:
        raise module.NVMLError(module.NVML_ERROR_FUNCTION_NOT_FOUND)

    originals["_nvmlGetFunctionPointer"] = getattr(module, "_nvmlGetFunctionPointer")  # noqa: B009
    setattr(module, "_nvmlGetFunctionPointer", not_in_the_simulator)  # noqa: B010
    setattr(module, "_gpulab_mock", mock)  # noqa: B010
    setattr(module, _ORIGINALS, originals)
    return mock


def uninstall(module: ModuleType | None = None) -> None:
    """Give ``pynvml`` its own functions back (the pytest plugin does this after each test)."""
    module = module or sys.modules.get("pynvml")
    if module is None or not hasattr(module, _ORIGINALS):
        return
    for name, func in getattr(module, _ORIGINALS).items():
        setattr(module, name, func)
    delattr(module, _ORIGINALS)
    del module._gpulab_mock


def installed(module: ModuleType | None = None) -> bool:
    """Whether ``pynvml`` currently answers from a simulated node."""
    module = module or sys.modules.get("pynvml")
    return module is not None and hasattr(module, _ORIGINALS)
