"""Run the mock-NVML and pynvml-hook tests against chosen nvidia-ml-py releases.

    python bench/pynvml_versions.py 12.535.77 13.615.71

Each release is fetched with ``pip download`` (the network or a configured index is needed), unpacked into a
temporary folder and put first on PYTHONPATH of a pytest run, so the tests, the mock and the subprocess
scripts all import that release's ``pynvml``. Prints one line per release: version, pytest's summary.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = [
    "tests/sim/test_mock_nvml.py",
    "tests/sim/test_pynvml_hook.py",
    "tests/sim/test_plugin.py",
    "tests/sim/test_nvml_agrees_with_nvidia_smi.py",
    "tests/test_collector.py",
]


def run(version: str) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as tmp:
        wheels = Path(tmp) / "wheels"
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels), f"nvidia-ml-py=={version}"],
            check=True,
        )
        (wheel,) = wheels.glob("*.whl")
        unpacked = Path(tmp) / "pynvml"
        zipfile.ZipFile(wheel).extractall(unpacked)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(unpacked), str(ROOT)])
        env["GPULAB_TEST_PYNVML_PATH"] = str(unpacked)
        check = subprocess.run(
            [sys.executable, "-c", "import pynvml, importlib.metadata as m; print(pynvml.__file__)"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert check.stdout.startswith(str(unpacked)), check.stdout
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return proc.returncode, (proc.stdout.strip().splitlines() or [""])[-1]


def main(argv: list[str]) -> int:
    worst = 0
    for version in argv or ["12.535.77"]:
        code, summary = run(version)
        print(f"nvidia-ml-py {version}: {summary}")
        worst = max(worst, code)
    return worst


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
