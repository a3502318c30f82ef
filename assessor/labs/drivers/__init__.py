"""Lab drivers: what sets a node up for a lab, applies the reference solution and resets it.

- :mod:`.sim`: a simulated node in a state file, changed through the simulator's own tools and faults;
- :mod:`.ansible`: a real node (ssh:// or an inventory host), changed by the lab's playbooks through
  ansible-runner. It is the one module that calls ``ansible_runner``.
"""

from __future__ import annotations

import os
import shlex

from assessor.errors import GpulabError

# A diagnostic whose exit status reports what it found, not that it could not run: dcgmi diag exits
# DCGM_ST_NVVS_ERROR (-30, so 226) when a test failed and DCGM_ST_NVVS_ISOLATE_ERROR (-51, so 205) for an
# error that calls for isolating the GPU (dcgmi/Diag.cpp GetFailureResult), after its results table. 226 also
# says that it could not run what was asked (an unknown test): then no table follows "Successfully ran".
_FINDING_EXITS = {("dcgmi", "diag"): frozenset({205, 226})}
_RAN = "Successfully ran diagnostic"


class StepFailed(GpulabError):
    """A scenario or solution step the node refused: the lab itself is broken, or the node is."""


class Unreachable(StepFailed):
    """The node could not be reached (no connection, refused authentication, a dropped session): nothing of
    the step is known to have run. ``gpulab lab start|solve|reset`` exit 3 for it, as ``gpulab assess``
    does for a host it could not assess."""


def found_something(line: str, code: int, output: str) -> bool:
    """Whether a step that exited ``code`` ran and reported a finding (a diagnostic that failed a GPU): the step
    did its job, as a candidate who runs it to find the fault sees; a lab's or a walk's step is not refused."""
    try:
        argv = shlex.split(line)
    except ValueError:
        return False
    if len(argv) < 2 or any(word in (";", "&&", "||", "|") for word in argv):
        return False
    codes = _FINDING_EXITS.get((os.path.basename(argv[0]), argv[1]))
    return codes is not None and code in codes and _RAN in output
