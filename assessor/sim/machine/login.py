"""An SSH login to a simulated node: what the node's host runs for each session (sshd's forced command).

A practice host serves a simulated node over SSH by giving each key a forced command in its
``authorized_keys`` (or ``ForceCommand`` in ``sshd_config``)::

    command="gpulab sim login /srv/gpulab/node.json" ssh-ed25519 AAAA... candidate@laptop
    command="gpulab sim login --admin /srv/gpulab/node.json" ssh-ed25519 AAAA... instructor@bastion

Every session of either key lands inside the node, as ``gpulab sim shell`` does: an interactive login, a
command (``ssh node nvidia-smi``), SFTP (``sftp-server`` inside the node, so Ansible's file copies land on
the node's files). The admin key alone also has ``gpulab-node VERB ...``, run on the host, outside the
node, where the node's state is: that is how a lab is started, solved or reset on a simulated node reached
over SSH, and how the grader reads the node's tamper evidence. A candidate's key cannot reach it.

The admin verbs (one command line, split as a shell would, never run by a shell; they are run by
:mod:`assessor.labs.drivers.sim_ssh`):

- ``gpulab-node probe``: prints ``gpulab simulated node FIXTURE HOST``: the node says it is simulated;
- ``gpulab-node start|solve|reset LAB [VARIANT_JSON]``: the simulator's lab step on this node;
- ``gpulab-node flags``: one ``flag: ...`` line per piece of tamper evidence the node's state carries.
"""

from __future__ import annotations

import shlex
from pathlib import Path

ADMIN_COMMAND = "gpulab-node"
SFTP_SERVERS = ("/usr/lib/openssh/sftp-server", "/usr/lib/sftp-server", "/usr/libexec/openssh/sftp-server")
PROBE_ANSWER = "gpulab simulated node"


def session_command(original: str) -> list[str]:
    """What runs inside the node for an SSH session whose client asked for ``original`` ('' = a login)."""
    if not original.strip():
        return []
    if original.strip() in ("internal-sftp", "sftp", "sftp-server") or original.split()[0] in SFTP_SERVERS:
        return [next((s for s in SFTP_SERVERS if Path(s).exists()), SFTP_SERVERS[0])]
    return ["/bin/bash", "-c", original]


def admin_words(original: str) -> list[str] | None:
    """The admin verb and its arguments when ``original`` is a ``gpulab-node`` line; None otherwise."""
    try:
        words = shlex.split(original)
    except ValueError:
        return None
    return words[1:] if words[:1] == [ADMIN_COMMAND] else None


def remote_admin_line(verb: str, *args: str) -> str:
    """The command line an admin client sends for ``verb`` (quoted: the login splits it as a shell would)."""
    return shlex.join([ADMIN_COMMAND, verb, *args])
