"""The simulated node's NVML as one program that loaded gpulab's ``libnvidia-ml.so.1`` sees it.

Two things set it apart from the bare :class:`~assessor.sim.mock_nvml.MockNvml` over a state file:

- a node that is missing or unreadable is NVML's "Driver Not Loaded", as on a machine without the driver;
- inside a Slurm job it sees only the job's GPUs, numbered from 0, exactly as the simulated ``nvidia-smi``
  does there (:func:`assessor.sim.slurm_node.jobs.job_view`, given the node's configuration root as the
  node's agent gives it to the tools: its ``gres.conf`` says which devices a job's GPU indices are). The
  library sends the job's variables of its process's environment (:data:`JOB_VARIABLES`) before each
  ``nvmlInit``; :meth:`NodeNvml.enter_job` takes them. A change made through NVML inside a job (persistence,
  MIG) lands on the physical GPU behind the job's handle.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import pynvml

from assessor.errors import InputError
from assessor.sim.config_root import ROOT_ENV, node_root
from assessor.sim.mock_nvml import MockNvml
from assessor.sim.slurm_node.jobs import job_gpus, job_view
from assessor.sim.state import GpuState, NodeState, updating

# The environment variables that say which GPUs a process's Slurm job has (what job_view reads); build.py
# writes this list into the library, so the two halves never disagree on it.
JOB_VARIABLES = ("SLURM_JOB_ID", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS")


class NodeNvml(MockNvml):
    """NVML over a node's state file, for one program (one connection of the library)."""

    def __init__(self, path: str, euid: int) -> None:
        super().__init__(path=path, euid=euid)
        self.job: dict[str, str] = {}

    def enter_job(self, env: Mapping[str, str]) -> None:
        """The program's Slurm job variables (those of :data:`JOB_VARIABLES` it has set; none outside a job).

        A different job from the last one drops the handles given out so far: their GPU numbers were the
        other job's.
        """
        job = {name: env[name] for name in JOB_VARIABLES if name in env}
        if job == self.job:
            return
        self.job = job
        self.state = None  # read again, through the new job's view, at the next call
        self._seen = None
        self._handles.clear()
        self._by_key.clear()

    def _in_job(self, state: NodeState) -> NodeState:
        if not self.job:
            return state
        env = dict(self.job)
        root = node_root(self.path, {})  # the node's own files, as the agent's tools read them
        if root is not None:
            env[ROOT_ENV] = str(root)
        return job_view(state, env)

    def _reload(self) -> None:
        before = self.state
        try:
            super()._reload()
        finally:
            if self.state is not None and self.state is not before:
                self.state = self._in_job(self.state)

    def nvmlInitWithFlags(self, flags: int) -> None:
        before = self.state
        try:
            super().nvmlInitWithFlags(flags)
        except (OSError, InputError):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_DRIVER_NOT_LOADED) from None
        finally:
            if self.state is not None and self.state is not before:
                self.state = self._in_job(self.state)

    @contextlib.contextmanager
    def _changing(self, handle: Any) -> Iterator[GpuState]:
        """As :meth:`MockNvml._changing`; inside a job, on the physical GPU the job's handle stands for (all of
        it: a MIG layout outside the job stays), carrying the job's index while the caller changes it (the
        handles it makes are in the job's numbering)."""
        if job_gpus(self.job) is None:
            with super()._changing(handle) as gpu:
                yield gpu
            return
        self._physical(handle)  # Uninitialized / InvalidArgument / GpuIsLost before anything else
        if self.euid != 0:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)
        index = self._lookup(handle)[1]
        assert self.path is not None
        with updating(self.path) as fresh:
            seen = [gpu.uuid for gpu in self._in_job(fresh).gpus if gpu.index == index]
            physical = [gpu for gpu in fresh.gpus if gpu.uuid in seen]
            if not physical:  # the GPU left the job's view since the handle was taken
                raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)
            gpu, node_index = physical[0], physical[0].index
            gpu.index = index
            try:
                yield gpu
            finally:
                gpu.index = node_index  # the node's own numbering is what is written
        self.state = self._in_job(fresh)
        self._seen = self._signature()
