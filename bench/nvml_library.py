"""What NVML through gpulab's libnvidia-ml.so.1 costs: `python bench/nvml_library.py` (after scripts/setup.sh).

Prints, each the median of several runs:

- process: a fresh Python that imports pynvml, calls ``nvmlInit`` and one query (``nvmlDeviceGetCount`` and
  ``nvmlDeviceGetName`` of GPU 0) and shuts down, through the library (``LD_LIBRARY_PATH``; the library starts
  its server at ``nvmlInit``), against the same program through the pre-library Python-level mock
  (``MockNvml`` in-process, what the pynvml hook patched in before);
- init + query: ``nvmlInit`` plus one query inside a running process, through the library (a new server each
  ``nvmlInit`` after the last shutdown is not needed: the server stays for the process's life) against the
  in-process mock;
- per call: one ``nvmlDeviceGetTemperature`` round trip once initialised.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS = 7
QUERY = (
    "import time, pynvml\n"
    "t = time.perf_counter()\n"
    "pynvml.nvmlInit()\n"
    "pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(pynvml.nvmlDeviceGetCount() - 1))\n"
    "first = time.perf_counter() - t\n"
    "h = pynvml.nvmlDeviceGetHandleByIndex(0)\n"
    "t = time.perf_counter()\n"
    "for _ in range(200):\n"
    "    pynvml.nvmlDeviceGetTemperature(h, 0)\n"
    "per_call = (time.perf_counter() - t) / 200\n"
    "pynvml.nvmlShutdown()\n"
    "print(first, per_call)\n"
)
MOCK = (
    "import time\n"
    "t = time.perf_counter()\n"
    "from assessor.sim.mock_nvml import MockNvml\n"
    "n = MockNvml(path={state!r})\n"
    "n.nvmlInit()\n"
    "n.nvmlDeviceGetName(n.nvmlDeviceGetHandleByIndex(n.nvmlDeviceGetCount() - 1))\n"
    "first = time.perf_counter() - t\n"
    "h = n.nvmlDeviceGetHandleByIndex(0)\n"
    "t = time.perf_counter()\n"
    "for _ in range(200):\n"
    "    n.nvmlDeviceGetTemperature(h, 0)\n"
    "per_call = (time.perf_counter() - t) / 200\n"
    "print(first, per_call)\n"
)


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    walls, firsts, calls = [], [], []
    for i in range(RUNS + 1):
        start = time.perf_counter()
        out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout.split()
        if i == 0:
            continue  # warm-up: caches, the library's first build
        walls.append(time.perf_counter() - start)
        firsts.append(float(out[0]))
        calls.append(float(out[1]))
    return statistics.median(walls), statistics.median(firsts), statistics.median(calls)


def main() -> int:
    from assessor.sim.node_init import init_node
    from assessor.sim.nvml_lib.build import write_library

    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "node.json"
        init_node("hgx-h100", state, host="bench")
        library = write_library(Path(tmp) / "lib").parent
        base = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_")}
        lib_env = {**base, "LD_LIBRARY_PATH": str(library), "GPULAB_SIM_STATE": str(state), "GPULAB_NVML_SERVER": ""}
        tool = ROOT / ".tools" / "nvml13" / "bin" / "python"
        python = str(tool) if tool.exists() else sys.executable
        lib = measure([python, "-c", QUERY], lib_env)
        mock = measure([sys.executable, "-c", MOCK.format(state=str(state))], {**base, "PYTHONPATH": str(ROOT)})
    print(f"{'':34}{'library':>12}{'Python mock':>14}")
    print(f"{'process (start, init, query, end)':34}{lib[0]:>11.3f}s{mock[0]:>13.3f}s")
    print(f"{'nvmlInit + one query':34}{lib[1]:>11.3f}s{mock[1]:>13.3f}s")
    print(f"{'one call once initialised':34}{lib[2] * 1e6:>10.0f}us{mock[2] * 1e6:>12.0f}us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
