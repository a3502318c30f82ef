"""The simulator: a simulated GPU node as a JSON state, a mock NVML, and simulated command-line tools."""
