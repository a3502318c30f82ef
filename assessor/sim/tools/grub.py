"""``update-grub``: GRUB's configuration written from ``/etc/default/grub`` (:mod:`assessor.sim.grub`)."""

from __future__ import annotations

from assessor.sim.tools import Session, ToolResult

_NOT_ROOT = "/usr/sbin/grub-mkconfig: You must run this as root\n"


def update_grub(args: list[str], session: Session) -> ToolResult:
    """``update-grub``: writes ``/boot/grub/grub.cfg``; the new kernel parameters apply at the next boot."""
    from assessor.sim.grub import update_grub as write_grub_cfg

    if any(a in ("-h", "--help") for a in args):
        return ToolResult(0, "Usage: update-grub\n")
    if session.euid != 0:
        return ToolResult(1, "", _NOT_ROOT)
    root = session.root()
    if root is None:
        return ToolResult(1, "", "update-grub: this simulated node has no files (start it with a state file)\n")
    error, printed = write_grub_cfg(session.read(), root)
    if error is not None:
        return ToolResult(1, "", error + "\n")
    return ToolResult(0, "", printed)  # grub-mkconfig reports on stderr
