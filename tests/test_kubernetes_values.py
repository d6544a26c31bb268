"""The Kubernetes values cannot be deployed here (no cluster); what can be checked is checked: the
files parse, the per-student limits are the ones the measured results give, the roster values
give every account its own uid and name, and the capacity table in the guide is computed."""
from __future__ import annotations

import re
import sys

import pytest
import yaml

from conftest import REPO

KUBE = REPO / "deploy" / "kubernetes"
sys.path.insert(0, str(KUBE))
import roster_values  # noqa: E402
import sizing  # noqa: E402


def values() -> dict:
    return yaml.safe_load((KUBE / "values.yaml").read_text())


def test_the_limits_are_the_measured_ones():
    limits = sizing.student_limits(sizing.measured())
    user = values()["singleuser"]
    assert user["memory"]["limit"] == f"{limits['memory_limit_mb']}M"
    assert user["memory"]["guarantee"] == f"{limits['memory_guarantee_mb']}M"
    assert user["cpu"]["guarantee"] == limits["cpu_guarantee"]
    assert user["cpu"]["limit"] == limits["cpu_limit"]
    measured = sizing.measured()
    assert limits["memory_limit_mb"] >= measured["one_student"]["peak_rss_mb"]   # the lab fits


def test_values_name_the_course_exchange_and_culling():
    v = values()
    env = v["singleuser"]["extraEnv"]
    assert env["COURSE_EXCHANGE"] in {m["mountPath"] for m in v["singleuser"]["storage"]["extraVolumeMounts"]}
    assert v["cull"]["enabled"] and v["cull"]["timeout"] > 0
    compile(v["hub"]["extraConfig"]["20-course"], "20-course", "exec")


def test_the_image_is_the_course_version():
    from attention_course import __version__

    assert values()["singleuser"]["image"]["tag"] == __version__
    assert f"attention-course:{__version__} ." in (KUBE / "Dockerfile").read_text()


def test_roster_values_give_each_account_its_own_uid_and_name():
    roster = {"instructors": ["ada"], "students": ["bo", "cy"]}
    out = yaml.safe_load(yaml.safe_dump(roster_values.roster_values(roster)))
    namespace = {}
    exec(out["hub"]["extraConfig"]["10-roster"], namespace)
    uids = namespace["ROSTER_UIDS"]
    assert sorted(uids) == ["ada", "bo", "cy"] and len(set(uids.values())) == 3
    passwd = out["singleuser"]["extraFiles"]["passwd"]["stringData"].splitlines()
    assert {f"{n}:x:{u}:{u}::/home/jovyan:/bin/bash" for n, u in uids.items()} <= set(passwd)


def test_capacity_table_covers_the_class_sizes():
    rows = sizing.capacity(sizing.measured())
    assert [r["class"] for r in rows] == [50, 200, 1000]
    assert all(r["students_per_node"] >= 1 and r["nodes"] * r["students_per_node"] >= r["class"]
               for r in rows)
    assert sizing.capacity_table(sizing.measured()) in (REPO / "benchmarks" / "results" /
                                                        "hub_capacity.md").read_text()


@pytest.mark.slow
def test_the_guide_shows_the_computed_table(built_book):
    page = (built_book / "book" / "instructors" / "course-hub.html").read_text()
    at = page.index("class size")
    table = page[page.rindex("<table", 0, at):page.index("</table>", at)]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", table, re.S)]
    for row in sizing.capacity(sizing.measured()):
        assert [str(row["class"]), str(row["students_per_node"]), str(row["nodes"])] in [
            cells[i:i + 3] for i in range(0, len(cells), 3)]


def test_a_server_for_someone_off_the_roster_is_refused_with_the_reason():
    """On Kubernetes an account's uid comes from the roster; an LTI launch by someone not on it
    must not start a server under another uid."""
    from types import SimpleNamespace

    from traitlets.config import Config

    scope = {"c": Config(), "ROSTER_UIDS": {"ada": 20000}, "INSTRUCTORS": ["ada"], "STUDENTS": []}
    exec(values()["hub"]["extraConfig"]["20-course"], scope)
    hook = scope["c"].KubeSpawner.pre_spawn_hook
    spawner = SimpleNamespace(user=SimpleNamespace(name="lti-0123456789abcdef"), environment={})
    with pytest.raises(ValueError, match="lti-0123456789abcdef is not on the course roster"):
        hook(spawner)
    ada = SimpleNamespace(user=SimpleNamespace(name="ada"), environment={})
    hook(ada)
    assert ada.uid == 20000 and ada.environment["PYTHONPATH"] == "/opt/attention-course/instructor"
