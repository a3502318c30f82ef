"""Lab drivers: what sets a node up for a lab, applies the reference solution and resets it.

- :mod:`.sim`: a simulated node in a state file, changed through the simulator's own tools and faults;
- :mod:`.ansible`: a real node (ssh:// or an inventory host), changed by the lab's playbooks through
  ansible-runner. It is the one module that calls ``ansible_runner``.
"""

from __future__ import annotations

from assessor.errors import GpulabError


class StepFailed(GpulabError):
    """A scenario or solution step the node refused: the lab itself is broken, or the node is."""


class Unreachable(StepFailed):
    """The node could not be reached (no connection, refused authentication, a dropped session): nothing of
    the step is known to have run. ``gpulab lab start|solve|reset`` exit 3 for it, as ``gpulab assess``
    does for a host it could not assess."""
