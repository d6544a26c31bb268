"""Each student's Kubernetes limits and the class's node count, from measured numbers only.

The inputs are ``benchmarks/results/hub_capacity.json`` (one student running the whole of Lab 8, and
an idle server on the hub); the outputs are the limits ``values.yaml`` sets and the capacity table of
``deploy/hub/README.md``. ``tests/test_kubernetes_values.py`` checks that both agree with this file.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "hub_capacity.json"
HEADROOM = 1.25                 # over the measured peak: other data, a second notebook open
NODE = {"name": "8 vCPU, 32 GiB", "cpus": 8, "memory_mb": 32 * 1024}
NODE_RESERVED = {"cpus": 0.5, "memory_mb": 2048}     # kubelet, system pods, the image puller
CLASS_SIZES = (50, 200, 1000)


def measured(path: Path = RESULTS) -> dict:
    return json.loads(path.read_text())


def student_limits(results: dict) -> dict:
    lab, hub = results["one_student"], results["class_at_once"]
    peak = lab["peak_rss_mb"] + hub["idle_server_rss_mb"]              # kernel + its server
    memory = 256 * math.ceil(peak * HEADROOM / 256)                     # MB, whole 256 MB steps
    busy_cores = lab["cpu_s"] / lab["wall_s"]                           # cores used while training
    return {"memory_limit_mb": memory, "memory_guarantee_mb": memory,
            "cpu_guarantee": max(0.25, round(busy_cores * 4) / 4), "cpu_limit": 2.0}


def capacity(results: dict) -> list[dict]:
    """Students per node when every one of them runs the lab at once (the worst hour), and nodes."""
    limits = student_limits(results)
    by_memory = (NODE["memory_mb"] - NODE_RESERVED["memory_mb"]) // limits["memory_guarantee_mb"]
    by_cpu = math.floor((NODE["cpus"] - NODE_RESERVED["cpus"]) / limits["cpu_guarantee"])
    per_node = int(min(by_memory, by_cpu))
    return [{"class": n, "students_per_node": per_node, "nodes": math.ceil(n / per_node)}
            for n in CLASS_SIZES]


def capacity_table(results: dict) -> str:
    rows = capacity(results)
    lines = [f"| class size | students per node ({NODE['name']}) | nodes |", "|---:|---:|---:|"]
    lines += [f"| {r['class']} | {r['students_per_node']} | {r['nodes']} |" for r in rows]
    return "\n".join(lines)


if __name__ == "__main__":
    results = measured()
    print(json.dumps(student_limits(results), indent=2))
    print(capacity_table(results))
