"""Helm values for one class's roster: each account's own uid, and the passwd lines every server
mounts so that the exchange's owners have names (nbgrader collects by owner).

    python deploy/kubernetes/roster_values.py roster.json > values-roster.yaml
    helm upgrade --install course jupyterhub/jupyterhub -f deploy/kubernetes/values.yaml -f values-roster.yaml

On Kubernetes every server would otherwise run as uid 1000, and nbgrader's exchange, which relies on
Unix owners and modes, would let every student read every submission.
"""
from __future__ import annotations

import json
import sys

import yaml

FIRST_UID = 20000


def roster_values(roster: dict) -> dict:
    names = list(roster["instructors"]) + list(roster["students"])
    uids = {name: FIRST_UID + i for i, name in enumerate(names)}
    passwd = "root:x:0:0:root:/root:/bin/bash\n" + "".join(
        f"{n}:x:{u}:{u}::/home/jovyan:/bin/bash\n" for n, u in uids.items())
    return {
        "hub": {"extraConfig": {"10-roster": "\n".join([
            f"ROSTER_UIDS = {json.dumps(uids)}",
            f"INSTRUCTORS = {json.dumps(list(roster['instructors']))}",
            f"STUDENTS = {json.dumps(list(roster['students']))}",
        ])}},
        "singleuser": {"extraFiles": {"passwd": {"mountPath": "/etc/passwd", "stringData": passwd}}},
    }


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(yaml.safe_dump(roster_values(json.load(f)), sort_keys=False))
