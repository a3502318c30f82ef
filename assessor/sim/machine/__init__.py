"""A simulated node as a Linux machine: ``gpulab sim shell``.

The node runs in namespaces of its own, made with util-linux ``unshare`` (user, mount, PID, UTS, IPC and
network): its own host name, its own process table, its files at their real paths and its GPU daemons and
jobs as real processes that hold its device files. The simulated tools (``nvidia-smi``, ``ibstat``, ...)
sit at their real paths and answer through a small agent outside the namespaces that alone holds the
node's state file, so nothing typed inside reaches the host or the record a grade is checked against.

- :mod:`.layout`: where a node's directories are and what it shows (pure).
- :mod:`.mounts`: the shell script that builds the node's root inside the namespaces (pure).
- :mod:`.agent`: the process outside that boots the node, answers its tools and keeps its processes.
- :mod:`.enter`: entering a running node (``nsenter``), or falling back to PATH shims where namespaces
  are not available.
- ``pid1.py``, ``client.py``, ``standin.sh``: what runs inside (standard library only, no gpulab import).
"""
