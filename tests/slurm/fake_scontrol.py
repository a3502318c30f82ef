"""A stand-in for ``scontrol`` (show node, update State=DRAIN|RESUME) over a JSON file, for the CLI tests.

``FAKE_SCONTROL_DB`` names the file: ``{"nodes": {NAME: {"state": ..., "reason": ...}}, "calls": [argv, ...]}``.
Every call is recorded; a node not in the file is "not found" (exit 1), as scontrol says it.
``FAKE_SCONTROL_FAIL`` makes every call fail with that text on stderr; ``FAKE_SCONTROL_SLEEP`` makes it hang.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    db = Path(os.environ["FAKE_SCONTROL_DB"])
    data = json.loads(db.read_text())
    data["calls"].append(argv)
    db.write_text(json.dumps(data))
    if os.environ.get("FAKE_SCONTROL_SLEEP"):
        time.sleep(float(os.environ["FAKE_SCONTROL_SLEEP"]))
    if os.environ.get("FAKE_SCONTROL_FAIL"):
        print(os.environ["FAKE_SCONTROL_FAIL"], file=sys.stderr)
        return 1
    nodes = data["nodes"]
    if argv[:2] == ["show", "node"]:
        node = nodes.get(argv[2])
        if node is None:
            print(f"Node {argv[2]} not found", file=sys.stderr)
            return 1
        print(f"NodeName={argv[2]} Arch=x86_64 CoresPerSocket=1\n   CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=0.01")
        print(f"   State={node['state']} ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A")
        print("   Partitions=gpu\n   CfgTRES=cpu=1,mem=1M,billing=1")
        if node.get("reason"):
            print(f"   Reason={node['reason']} [root@2026-12-02T03:32:55]")
        print()
        return 0
    if argv[:1] == ["update"]:
        fields = dict(arg.split("=", 1) for arg in argv[1:])
        node = nodes.get(fields.get("NodeName", ""))
        if node is None:
            print("slurm_update error: Invalid node name specified", file=sys.stderr)
            return 1
        base = node["state"].split("+")[0]
        if fields.get("State") == "DRAIN":
            node["state"], node["reason"] = f"{base}+DRAIN", fields["Reason"]
        elif fields.get("State") == "RESUME":
            node["state"], node["reason"] = base, None
        db.write_text(json.dumps(data))
        return 0
    print(f"invalid command: {argv}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
