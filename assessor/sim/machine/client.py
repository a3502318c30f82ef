"""A simulated tool inside the node: hands the command line to the node's agent and prints its answer.

Installed as ``/usr/bin/nvidia-smi``, ``/usr/sbin/ibstat``, ... (runs inside the node: standard library
only, no gpulab import). The agent outside the node runs the tool on the node's state, which no process
inside can read or change.
"""

import json
import os
import socket
import sys

SOCKET = "/run/gpulab/node.sock"
MAX_REPLY = 64 * 1024 * 1024


def main():
    program = os.path.basename(sys.argv[0])
    request = {"argv": [program, *sys.argv[1:]], "env": dict(os.environ), "uid": os.geteuid()}
    try:
        request["cwd"] = os.getcwd()
    except OSError:
        request["cwd"] = "/"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(60)
            conn.connect(SOCKET)
            conn.sendall(json.dumps(request).encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)
            chunks, size = [], 0
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_REPLY:
                    raise OSError("reply too large")
        reply = json.loads(b"".join(chunks))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"{program}: the simulated node's agent does not answer ({exc}); re-enter the node\n")
        return 1
    sys.stdout.write(reply.get("stdout", ""))
    sys.stdout.flush()
    sys.stderr.write(reply.get("stderr", ""))
    return int(reply.get("exit", 1))


if __name__ == "__main__":
    sys.exit(main())
