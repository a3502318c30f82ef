"""What a run found, in the words Slurm keeps: one finding, and the reason a drained node carries.

A reason gpulab writes starts with ``gpulab:``, then the check that failed and what it saw, the other failing
checks after it::

    gpulab: gpu.xid Xid 79 on PCI 0000:5d:00: GPU has fallen off the bus (x2) [+gpu.count]

That prefix is how gpulab knows a drain is its own, and the check after it is the one a later run must see pass
before it resumes the node. The reason is at most :data:`MAX_REASON_BYTES` bytes: slurmctld keeps it as given,
but slurmdbd stores each node event's reason in a MySQL ``tinytext`` column (255 bytes; Slurm 22.05,
``src/plugins/accounting_storage/mysql/accounting_storage_mysql.c``, ``event_table_fields``), and ``sinfo -R``
shows only its first 20 characters (``src/sinfo/opts.c``: ``reason:20``), so what matters comes first.
"""

from __future__ import annotations

from dataclasses import dataclass

from assessor.checks.result import Result, TargetResults
from assessor.neutralise import visible
from assessor.secrets import redact

PREFIX = "gpulab:"
MAX_REASON_BYTES = 128
ELLIPSIS = "..."


@dataclass(frozen=True)
class Finding:
    """What one run found on the node.

    ``healthy``: no check failed or errored and gpulab saw something. ``reason``: for a problem, the drain
    reason (already cut to :data:`MAX_REASON_BYTES`); for a healthy node, a summary. ``passed``: the checks
    that passed or warned, any of which may resume a drain that names it. ``lines``: one line per check that
    did not pass, for whoever reads gpulab's output (slurmd logs it when a health check exits non-zero).
    ``bad_input``: gpulab could not run as configured (exit 2).
    """

    healthy: bool
    reason: str
    passed: frozenset[str] = frozenset()
    lines: tuple[str, ...] = ()
    bad_input: bool = False


def clean(text: str) -> str:
    """Node output made fit for a reason: one line of visible characters, no credential, no double quote
    (``scontrol`` strips a ``"`` at either end of a reason)."""
    return visible(redact(text)).replace('"', "'").strip()


def cut(text: str, limit: int = MAX_REASON_BYTES) -> str:
    """``text`` in at most ``limit`` bytes of UTF-8, cut at a character boundary and ended with ``...``."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    if limit <= len(ELLIPSIS):
        return data[: max(0, limit)].decode("utf-8", "ignore")
    return data[: limit - len(ELLIPSIS)].decode("utf-8", "ignore").rstrip() + ELLIPSIS


def reason(check: str, saw: str, others: tuple[str, ...] = (), limit: int = MAX_REASON_BYTES) -> str:
    """``gpulab: CHECK SAW [+OTHER, ...]`` in at most ``limit`` bytes: what it saw is cut before the list of
    the other failing checks is, and the list before the check's own id."""
    head = f"{PREFIX} {clean(check)}"
    body = f"{head} {clean(saw)}" if saw.strip() else head
    if not others:
        return cut(body, limit)
    tail = f" [+{', '.join(clean(o) for o in others)}]"
    if len((body + tail).encode("utf-8")) <= limit:
        return body + tail
    if len((head + tail).encode("utf-8")) + 24 <= limit:  # room left for at least a few words of what it saw
        return cut(body, limit - len(tail.encode("utf-8"))) + tail
    return cut(f"{cut(body, max(len(head.encode('utf-8')), limit - 16))} [+{len(others)} more]", limit)


def is_gpulab(text: str | None) -> bool:
    """Whether a node's reason is one gpulab wrote."""
    return bool(text) and str(text).startswith(PREFIX)


def check_named(text: str | None) -> str | None:
    """The check a gpulab reason names (``gpulab: gpu.xid ...`` -> ``gpu.xid``); None for any other reason or
    one that names no check gpulab has (``gpulab: no verdict ...``)."""
    if not is_gpulab(text):
        return None
    from assessor import checks

    words = str(text)[len(PREFIX) :].split()
    return words[0] if words and words[0] in checks.REGISTRY else None


def _line(r: Result) -> str:
    return f"{r.status.upper()} {r.check}: {clean(r.message)}"


def finding(target: TargetResults, limit: int = MAX_REASON_BYTES) -> Finding:
    """The finding of one node's results: the first failed check names the reason (or, with none failed, the
    first errored one); a node that could not be assessed, or whose checks all skipped, is a problem too: gpulab
    cannot say its GPUs are fine."""
    if target.error is not None:
        return Finding(False, cut(f"{PREFIX} not assessed: {clean(target.error)}", limit))
    results = target.results
    passed = frozenset(r.check for r in results if r.status in ("pass", "warn"))
    lines = tuple(_line(r) for r in results if r.status != "pass")
    for status, saw in (("fail", ""), ("error", "cannot tell: ")):
        bad = [r for r in results if r.status == status]
        if bad:
            first, others = bad[0], tuple(r.check for r in results if r.status in ("fail", "error") and r is not bad[0])
            return Finding(False, reason(first.check, saw + first.message, others, limit), passed, lines)
    if not passed:
        skipped = ", ".join(r.check for r in results) or "no checks"
        return Finding(False, cut(f"{PREFIX} nothing seen: {clean(skipped)} skipped", limit), passed, lines)
    return Finding(True, f"ok: {', '.join(sorted(passed))}", passed, lines)


def stalled(deadline: float, limit: int = MAX_REASON_BYTES) -> Finding:
    """No verdict by the deadline: a tool on the node hung (a wedged GPU makes nvidia-smi and NVML hang)."""
    return Finding(False, cut(f"{PREFIX} no verdict within {deadline:g}s: a GPU tool hung", limit))


def broken(why: str, *, bad_input: bool = False, limit: int = MAX_REASON_BYTES) -> Finding:
    """gpulab could not run: a profile or option that is wrong (``bad_input``), or a failure of gpulab itself."""
    return Finding(False, cut(f"{PREFIX} cannot run: {clean(why)}", limit), bad_input=bad_input)
