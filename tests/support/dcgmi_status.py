"""What a simulated tool's exit status must be for the output it printed: 0, except ``dcgmi diag``, whose
status follows its table (DCGM_ST_NVVS_ERROR 226 or DCGM_ST_NVVS_ISOLATE_ERROR 205 when a test failed)."""

from __future__ import annotations

from collections.abc import Sequence

from assessor.parsers import parse
from assessor.sim.tools import ToolResult


def assert_tool_status(argv: Sequence[str], result: ToolResult) -> None:
    words = [str(a) for a in argv]
    if words[:2] == ["dcgmi", "diag"] and "Successfully ran diagnostic" in result.stdout:
        diag = parse("dcgmi-diag", result.stdout).dcgm_diag
        assert diag is not None, result.stdout
        failed = any(t.result == "Fail" for t in diag.tests)
        assert (result.exit_code in (205, 226)) if failed else (result.exit_code == 0), (
            f"dcgmi diag exited {result.exit_code} after a table with {'a' if failed else 'no'} failed test:\n"
            + result.stdout
        )
        return
    assert result.exit_code == 0, result.stdout + result.stderr
