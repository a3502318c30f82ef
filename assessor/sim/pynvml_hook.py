"""Point the real ``pynvml`` at a simulated node: ``import pynvml`` in any program, no GPU needed.

A thin loader of gpulab's ``libnvidia-ml.so.1`` (:mod:`assessor.sim.nvml_lib`), the one way NVML answers
from a simulated node: pynvml keeps every function of its own and calls them through the library, exactly as
it calls the driver's. The wheel ships ``gpulab_nvml_hook.pth``; at interpreter start-up its one line imports
this module only when ``GPULAB_SIM_STATE`` is set (so a normal interpreter pays one environment lookup).
:func:`activate` then waits for ``pynvml`` to be imported (a meta-path finder, so interpreters that never use
NVML, such as the simulated tools themselves, import nothing more) and :func:`install` hands pynvml the
library in place of the driver's (``pynvml.nvmlLib``), building it on first use.

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
_ORIGINALS = "_gpulab_originals"  # attribute of a pynvml given gpulab's library: what it had before


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


def install(module: ModuleType | None = None) -> Any:
    """Hand ``pynvml`` (imported if needed) gpulab's library in place of the driver's; returns the library.

    Idempotent. pynvml's names, bound anywhere (``from pynvml import nvmlDeviceGetCount`` at import time
    included), keep working: they look their C function up in ``pynvml.nvmlLib`` when called.
    """
    if module is None:
        import pynvml as module  # type: ignore[no-redef]
    assert module is not None
    if hasattr(module, _ORIGINALS):
        return getattr(module, _ORIGINALS)["library"]
    if os.environ.get("GPULAB_NVML_SERVER"):
        return None  # the library's own server process: it answers NVML, it never loads it
    library = _Library()
    originals = {"nvmlLib": getattr(module, "nvmlLib", None), "library": library}
    with module.libLoadLock:
        setattr(module, "nvmlLib", library)  # noqa: B010
        getattr(module, "_nvmlGetFunctionPointer_cache").clear()  # noqa: B009
    setattr(module, _ORIGINALS, originals)
    return library


class _Library:
    """gpulab's libnvidia-ml.so.1, built and loaded at pynvml's first lookup of a C function.

    Not at install: pynvml is often imported while gpulab itself is still importing (the simulator's own
    modules import pynvml for its constants), and building needs those modules.
    """

    def __init__(self) -> None:
        self._cdll: Any = None

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._cdll is None:
            import ctypes

            from assessor.sim.nvml_lib.build import ensure_library

            self._cdll = ctypes.CDLL(str(ensure_library()))
        return getattr(self._cdll, name)


def uninstall(module: ModuleType | None = None) -> None:
    """Give ``pynvml`` its own library back (the pytest plugin does this after each test)."""
    module = module or sys.modules.get("pynvml")
    if module is None or not hasattr(module, _ORIGINALS):
        return
    with module.libLoadLock:
        setattr(module, "nvmlLib", getattr(module, _ORIGINALS)["nvmlLib"])  # noqa: B010
        getattr(module, "_nvmlGetFunctionPointer_cache").clear()  # noqa: B009
    delattr(module, _ORIGINALS)


def installed(module: ModuleType | None = None) -> bool:
    """Whether ``pynvml`` currently answers from a simulated node."""
    module = module or sys.modules.get("pynvml")
    return module is not None and hasattr(module, _ORIGINALS)
