"""gpulab: GPU-cluster readiness lab and skills assessor."""

__version__ = "0.1.0"
