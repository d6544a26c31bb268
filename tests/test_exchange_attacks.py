"""Collecting from nbgrader's exchange, as students attacked it (issue 49), through the real
``nbgrader collect`` with the course's settings (:class:`CourseCollect`).

Each student here is a real system account that writes its own folder in the exchange's inbound
folder (mode 2733, nbgrader's), as a student on a shared machine can; the instructor's collect then
runs over all of them at once. On the code before the fix, each attack below succeeded: a link to
the instructor's source notebook was collected as the student's submission (23/23 and every
solution line in the feedback), a link to another student's notebook was graded as the linker's,
``gradebook.db`` was copied through a link, a backdated ``timestamp.txt`` and folder name were
recorded as the time of submission, a folder name that is not a time stopped the whole collect,
and a pipe named ``lab8.ipynb`` hung it. The course's collect also serves the hub's submission
service (tested in ``test_hub.py``).
"""
from __future__ import annotations

import datetime
import json
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

import nbgrader_harness as harness
from conftest import REPO

COURSE = "attention-and-transformers"
BACKDATED = "2026-09-30 12:00:00.000000 UTC"
DUE = "2026-10-01 00:00:00 UTC"

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                reason="students are system accounts here: run as root")


def as_student(name: str, script: str) -> None:
    """A shell script run as that student's own account (what a student can do in a terminal)."""
    subprocess.run(["runuser", "-u", name, "--", "sh", "-ec", script], check=True,
                   capture_output=True, text=True, timeout=60)


def notebook_text(marker: str) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"# {marker}\nx = 1")]
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def collected():
    tmp = Path(tempfile.mkdtemp(prefix="course-exchange-"))  # students must reach it (pytest's
    tmp.chmod(0o755)                                          # own folders are root's alone)
    tag = secrets.token_hex(3)
    names = {kind: f"tq{tag}{kind[0]}{i}" for i, kind in enumerate(
        ["honest", "source", "neighbour", "gradebook", "backdated", "malformed", "fifo", "hardlink",
         "folderlink"])}
    for name in names.values():
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True)
    try:
        yield _term(tmp, names)
    finally:
        for name in names.values():
            subprocess.run(["pkill", "-KILL", "-u", name], check=False)
            subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def _term(tmp: Path, names: dict) -> dict:
    course = harness.make_course(tmp / "course", REPO / "source" / "lab8", "lab8")
    course.root.chmod(0o700)                                  # the instructor's, as on the hub
    harness.generate(course, "lab8")
    course.nbgrader("db", "assignment", "add", "lab8", f"--duedate={DUE}")
    exchange = tmp / "exchange"
    inbound = exchange / COURSE / "inbound"
    inbound.mkdir(parents=True)
    exchange.chmod(0o1777)
    (exchange / COURSE).chmod(0o755)
    inbound.chmod(0o2733)                                     # nbgrader's: write, never list

    def folder(kind: str, when: str = "2026-12-04 09:00:00.000000 UTC") -> str:
        return f"{inbound}/{names[kind]}+lab8+{when}+{secrets.token_urlsafe(6)}"

    source_nb = course.root / "source" / "lab8" / "lab8.ipynb"
    honest = folder("honest")
    as_student(names["honest"], f"""mkdir '{honest}'
        printf '%s' '{notebook_text("honest work")}' > '{honest}/lab8.ipynb'
        date -u '+%Y-%m-%d %H:%M:%S.000000 UTC' > '{honest}/timestamp.txt'
        echo honest-secret > '{honest}/submission_secret.txt'""")
    linked = folder("source")                                 # the instructor's source notebook
    as_student(names["source"], f"mkdir '{linked}'; ln -s '{source_nb}' '{linked}/lab8.ipynb'")
    neighbour = folder("neighbour")                           # the honest student's notebook
    as_student(names["neighbour"], f"mkdir '{neighbour}'; ln -s '{honest}/lab8.ipynb' '{neighbour}/lab8.ipynb'")
    grades = folder("gradebook")
    as_student(names["gradebook"], f"""mkdir '{grades}'
        printf '%s' '{notebook_text("own work")}' > '{grades}/lab8.ipynb'
        ln -s '{course.root}/gradebook.db' '{grades}/gradebook.db'""")
    backdated = folder("backdated", BACKDATED)
    as_student(names["backdated"], f"""mkdir '{backdated}'
        printf '%s' '{notebook_text("late work")}' > '{backdated}/lab8.ipynb'
        echo '{BACKDATED}' > '{backdated}/timestamp.txt'
        touch -d '2026-09-30 12:00 UTC' '{backdated}/lab8.ipynb' '{backdated}/timestamp.txt' '{backdated}'""")
    malformed = f"{inbound}/{names['malformed']}+lab8+not a time at all+x"
    as_student(names["malformed"], f"""mkdir '{malformed}'
        printf '%s' '{notebook_text("odd name")}' > '{malformed}/lab8.ipynb'""")
    fifo = folder("fifo")
    as_student(names["fifo"], f"mkdir '{fifo}'; mkfifo '{fifo}/lab8.ipynb'")
    hard = folder("hardlink")                                 # as on a machine without
    as_student(names["hardlink"], f"mkdir '{hard}'")         # protected_hardlinks
    os.link(source_nb, f"{hard}/lab8.ipynb")
    whole = folder("folderlink")                              # the whole folder a link
    as_student(names["folderlink"], f"ln -s '{honest}' '{whole}'")

    started = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    done = course.nbgrader("collect", "lab8", f"--Exchange.root={exchange}",
                           f"--CourseDirectory.course_id={COURSE}", timeout=120)
    return {"course": course.root, "names": names, "log": done.stdout + done.stderr, "started": started,
            "source_nb": source_nb}


def submitted(term, kind: str) -> Path:
    return term["course"] / "submitted" / term["names"][kind] / "lab8"


def record(term, kind: str) -> dict:
    return json.loads((submitted(term, kind) / "exchange-record.json").read_text())


def test_the_honest_student_is_collected_with_the_exchanges_time(collected):
    folder = submitted(collected, "honest")
    assert "honest work" in (folder / "lab8.ipynb").read_text()
    assert (folder / "submission_secret.txt").read_text().strip() == "honest-secret"
    got = record(collected, "honest")
    assert got["source"] == "inbound folder" and got["files"] == ["lab8.ipynb", "submission_secret.txt"]
    assert got["refused"] == [] and got["flags"] == []


@pytest.mark.parametrize("kind, words", [
    ("source", "a symbolic link: never followed"),
    ("neighbour", "a symbolic link: never followed"),
    ("fifo", "not a regular file"),
    ("hardlink", "not the student's own file (owned by root)"),
])
def test_a_notebook_that_is_not_the_students_own_file_is_refused_with_the_reason(collected, kind, words):
    folder = submitted(collected, kind)
    assert not (folder / "lab8.ipynb").exists()
    assert record(collected, kind)["refused"] == [["lab8.ipynb", words]]
    assert f"{collected['names'][kind]}'s lab8.ipynb: {words}" in collected["log"]


def test_no_solution_line_reaches_a_submission(collected):
    solution_lines = set(harness.solution_lines(nbformat.read(collected["source_nb"], as_version=4)))
    for path in (collected["course"] / "submitted").rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [line for line in solution_lines if len(line) > 20 and line in text], path


def test_a_link_to_the_gradebook_is_not_copied(collected):
    folder = submitted(collected, "gradebook")
    assert (folder / "lab8.ipynb").exists() and not os.path.lexists(folder / "gradebook.db")
    assert record(collected, "gradebook")["refused"] == [["gradebook.db", "a symbolic link: never followed"]]


def test_a_folder_that_is_a_link_is_never_collected(collected):
    assert not submitted(collected, "folderlink").exists()
    assert "a link or not a folder: never followed" in collected["log"]


def test_a_backdated_submission_keeps_the_exchanges_time_and_is_flagged(collected):
    """The student set the folder name, timestamp.txt and the files' times to before the due date;
    the change time the system keeps says when they were really written."""
    stamp = (submitted(collected, "backdated") / "timestamp.txt").read_text()
    when = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f UTC")
    assert abs((when - collected["started"]).total_seconds()) < 300, stamp
    flags = " ".join(record(collected, "backdated")["flags"])
    assert f"the submission says {BACKDATED}" in flags and "the exchange's time is used" in flags


def test_a_folder_name_that_is_no_time_is_collected_with_the_exchanges_time(collected):
    """Stock nbgrader's collect stopped for every student at such a name (dateutil's ParserError)."""
    got = record(collected, "malformed")
    assert got["files"] == ["lab8.ipynb"]
    assert any("not a time ('not a time at all')" in f for f in got["flags"]), got["flags"]


def test_the_grader_refuses_links_on_the_way_to_a_notebook(collected, tmp_path):
    """What collect refuses, the hardened grader refuses too, if it reaches submitted/ by other
    means (an LMS download unpacked with ``unzip``, which makes links): the student's folder, the
    lab's folder or the notebook a link, or the notebook a hard link."""
    from attention_course_instructor.grading.hardened import GradingRun, grade_batch

    root = tmp_path / "course"
    shutil.copytree(collected["course"] / "source", root / "source")
    own = root / "submitted" / "own" / "lab8"
    own.mkdir(parents=True)
    shutil.copy(collected["source_nb"], own / "lab8.ipynb")
    (root / "submitted" / "whole").symlink_to(own.parent)
    (root / "submitted" / "lab" ).mkdir()
    (root / "submitted" / "lab" / "lab8").symlink_to(own)
    (root / "submitted" / "file" / "lab8").mkdir(parents=True)
    (root / "submitted" / "file" / "lab8" / "lab8.ipynb").symlink_to(collected["source_nb"])
    (root / "submitted" / "hard" / "lab8").mkdir(parents=True)
    os.link(own / "lab8.ipynb", root / "submitted" / "hard" / "lab8" / "lab8.ipynb")
    run = GradingRun(root, "lab8", use_sandbox=False)
    results = {r.student: r for r in grade_batch(run, students={
        s: root / "submitted" / s / "lab8" / "lab8.ipynb" for s in ("whole", "lab", "file", "hard")})}
    assert results["whole"].error == "whole is a symbolic link, which grading never follows: refused"
    assert results["lab"].error == "lab/lab8 is a symbolic link, which grading never follows: refused"
    assert results["file"].error == "file/lab8/lab8.ipynb is a symbolic link, which grading never follows: refused"
    assert results["hard"].error == "hard/lab8/lab8.ipynb is a hard link (one file under 2 names): refused"
    assert all(r.score == 0 for r in results.values())
