"""The default ``nvidia-smi`` table's layout per driver branch, from public captures (corpus ``nvml/``).

- R530-R545 (``nvidia_smi_default_A100_40GB_mig_535.txt``): 89 columns, the Bus-Id/Memory cell 22 wide,
  power limit in 3 digits, MIG devices memory cell 32 wide, process header ``PID`` in 10.
- R550-R565 (``nvidia_smi_default_8xH100_SXM.txt``, ``nvidia_smi_mig_devices_H100_NVL.txt``): 91 columns,
  middle cell 24 wide, power limit in 4, MIG memory cell 34 wide.
- R570-R575 (``nvidia_smi_default_T4_570.txt``): as R550, with ``PID`` in 16 and the process name 6 shorter.
- R580+ (``nvidia_smi_default_GB10_580_processes.txt``): as R570, the rule under the version line made of ``+``.
"""

from __future__ import annotations


class TableLayout:
    """Column widths and fixed lines of the default table for one driver branch.

    A plain class, not a dataclass: this module is imported by every ``nvidia-smi`` shim call.
    """

    __slots__ = ("header_rule_ends", "inner", "limit_digits", "middle", "mig_memory", "pid_width")

    def __init__(
        self,
        inner: int,  # characters between the outer bars
        middle: int,  # width of the Bus-Id / Memory-Usage cell
        limit_digits: int,  # the power limit's field ("400W" in 535, " 700W" in 550+)
        pid_width: int,
        header_rule_ends: tuple[str, str],  # first and last character of the rule under the version line
        mig_memory: int,  # width of the MIG devices box's Memory-Usage cell
    ) -> None:
        self.inner = inner
        self.middle = middle
        self.limit_digits = limit_digits
        self.pid_width = pid_width
        self.header_rule_ends = header_rule_ends
        self.mig_memory = mig_memory

    @property
    def rule(self) -> str:
        return "+" + "-" * self.inner + "+"

    @property
    def cells(self) -> str:
        return "+" + "-" * 41 + "+" + "-" * self.middle + "+" + "-" * 22 + "+"

    @property
    def header_rule(self) -> str:
        first, last = self.header_rule_ends
        return first + "-" * 41 + "+" + "-" * self.middle + "+" + "-" * 22 + last

    @property
    def process_name_width(self) -> int:
        # "|" GPU(5) GI(6) CI(5) PID Type(7) "   " NAME MEMORY(14) " |"
        return self.inner - 5 - 6 - 5 - self.pid_width - 7 - 3 - 14 - 1


R535 = TableLayout(87, 22, 3, 10, ("|", "+"), 32)
R550 = TableLayout(89, 24, 4, 10, ("|", "+"), 34)
R570 = TableLayout(89, 24, 4, 16, ("|", "+"), 34)
R580 = TableLayout(89, 24, 4, 16, ("+", "+"), 34)


def layout_for(driver_version: str) -> TableLayout:
    """The layout of the default table a driver of ``driver_version`` prints (R535's before R550)."""
    head = driver_version.split(".", 1)[0]
    major = int(head) if head.isdigit() else 0
    if major >= 580:
        return R580
    if major >= 570:
        return R570
    if major >= 550:
        return R550
    return R535
