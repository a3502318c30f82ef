"""gpulab's ``libnvidia-ml.so.1``: NVML's C API for any program, answered by the simulator.

:mod:`.exports` is the table of functions, :mod:`.build` makes the shared library from it, :mod:`.serve`
answers its calls from :mod:`.node` (the node's NVML as one program sees it: inside a Slurm job, the job's
GPUs). ``docs/NVML_MOCK.md`` explains the design.
"""
