"""Ansible's ``ssh`` connection with every remote command under gpulab's guard (:mod:`assessor.targets.guard`).

:mod:`assessor.targets.ansible` puts this directory on ``ANSIBLE_CONNECTION_PLUGINS`` and makes ``gpulab_ssh``
the default connection (``ANSIBLE_TRANSPORT``) for its runs only: every host without a connection of its own
in the inventory. (It has a name of its own: a plugin file named ``ssh.py`` would share its Python module
with the builtin one, and which of the two Ansible loaded would depend on what loaded first.) It is the
builtin plugin, options and all, except that ``exec_command`` sends ``exec /bin/sh -c GUARD ... COMMAND``:
when Ansible gives up on a task (``ANSIBLE_TASK_TIMEOUT``), the run is stopped, or its connection closes,
what the task started on the node is ended there too. Ansible itself only abandons its local worker.

The guard's text and the seconds a command may run come from the environment gpulab gives
ansible-playbook (``GPULAB_REMOTE_GUARD``, ``GPULAB_REMOTE_LIMIT``); without them this is the builtin
plugin unchanged. Ansible loads this file by path: it imports nothing of gpulab.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from ansible.plugins.connection.ssh import DOCUMENTATION as _BUILTIN_DOCUMENTATION
from ansible.plugins.connection.ssh import Connection as _BuiltinSsh

# Ansible reads the plugin's options from it: the builtin's, under this plugin's name
DOCUMENTATION = _BUILTIN_DOCUMENTATION.replace("name: ssh\n", "name: gpulab_ssh\n", 1)


class Connection(_BuiltinSsh):
    """The builtin ``ssh`` connection; each remote command guarded."""

    def exec_command(self, cmd: str, in_data: bytes | None = None, sudoable: bool = True) -> Any:
        guard = os.environ.get("GPULAB_REMOTE_GUARD")
        limit = os.environ.get("GPULAB_REMOTE_LIMIT", "")
        if guard and limit.isdigit():
            cmd = f"exec /bin/sh -c {shlex.quote(guard)} gpulab-guard {limit} {shlex.quote(cmd)}"
        return super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
