"""Lab drivers: what sets a node up for a lab, applies the reference solution and resets it.

- :mod:`.sim`: a simulated node in a state file, changed through the simulator's own tools and faults;
- :mod:`.ansible`: a real node (ssh:// or an inventory host), changed by the lab's playbooks through
  ansible-runner. It is the one module that calls ``ansible_runner``.
"""

from __future__ import annotations

from assessor.errors import GpulabError


class StepFailed(GpulabError):
    """A scenario or solution step the node refused: the lab itself is broken, or the node is."""
