"""gpulab's ``libnvidia-ml.so.1``: NVML's C API for any program, answered by the simulator.

:mod:`.exports` is the table of functions, :mod:`.build` makes the shared library from it, :mod:`.serve`
answers its calls. ``docs/NVML_MOCK.md`` explains the design.
"""
