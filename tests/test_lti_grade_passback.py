"""Grades back to the LMS by LTI Advantage (``attention_course_instructor.grading.lti_ags``).

A test platform (``tests/lti_platform.py``) runs as its own process on 127.0.0.1 with the tool's
public key registered, laid out and behaving as a plain AGS platform, as Canvas or as Moodle
(each from that LMS's own source); the passback command, run as an instructor runs it, signs in
with the tool's private key and sends the gradebook of ``test_lms_export``: ada has both labs,
bo Lab 8, cy and di nothing, eve Lab 12 with a written answer still to be graded by hand. The
platform records what it accepted and what its gradebook then shows.

What no test here can show: that a live Canvas or Moodle answers as the platform does. The
layouts, the refusals and what each gradebook keeps are taken from their source code (named in
``lti_platform.py``), not from a running LMS.
"""
from __future__ import annotations

import csv
import json
import socket
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from test_lms_export import course  # noqa: F401  (the gradebook fixture)

HERE = Path(__file__).resolve().parent
CLIENT_ID = "course-tool"
# (lab, lms user id) -> (score, maximum) of every complete submission in the gradebook
COMPLETE = {("lab8", "1001"): (9, 10), ("lab12", "1001"): (21, 27), ("lab8", "1002"): (4, 10)}


def key_pair(folder: Path, name: str) -> Path:
    """An RSA key for the tool: ``<name>.pem`` (private) and ``<name>-public.pem``."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = folder / f"{name}.pem"
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    (folder / f"{name}-public.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return private


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("platform")
    key_pair(folder, "tool-key")
    key_pair(folder, "another-key")
    return folder


@contextmanager
def running_platform(folder: Path, *options: str):
    """The test platform as a process of its own; yields its address."""
    process = subprocess.Popen([sys.executable, str(HERE / "lti_platform.py"), "--port", "0",
                                "--tool-key", str(folder / "tool-key-public.pem"),
                                "--client-id", CLIENT_ID, *options], stdout=subprocess.PIPE, text=True)
    try:
        base = process.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:"), base
        yield base
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def platform(keys):
    with running_platform(keys) as base:
        yield base, keys


CONTAINERS = {"plain": "/lineitems", "canvas": "/api/lti/courses/2/line_items",
              "moodle": "/mod/lti/services.php/2/lineitems?type_id=7"}


def platform_file(folder: Path, base: str, key: str = "tool-key.pem", lms: str = "plain", **changes) -> Path:
    """The instructor's platform.json; ``lineitems`` as the LMS's launches give it."""
    values = {"issuer": base, "client_id": CLIENT_ID, "deployment_id": "deployment-1",
              "token_url": f"{base}/token", "lineitems": f"{base}{CONTAINERS[lms]}",
              "private_key": key, "key_id": "course-tool-1", **changes}
    path = folder / f"platform-{key}-{lms}-{len(changes)}.json"
    path.write_text(json.dumps(values))
    return path


def send(course: Path, platform: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "attention_course_instructor.grading.lti_ags",
                           "--platform", str(platform), "--course", str(course), *args],
                          capture_output=True, text=True, timeout=180)


def received(base: str) -> dict:
    return requests.get(f"{base}/received", timeout=10).json()


def control(base: str, **levers) -> None:
    requests.post(f"{base}/control", json=levers, timeout=10).raise_for_status()


def sent_scores(got: dict) -> dict:
    lab = {i["id"]: i["resourceId"] for i in got["line_items"]}
    return {(lab[s["lineItem"]], s["userId"]): s for s in got["scores"]}


def shown(got: dict) -> dict:
    """What the LMS gradebook shows: (lab, user) -> score."""
    lab = {i["id"]: i["resourceId"] for i in got["line_items"]}
    return {(lab[item], user): score for item, users in got["gradebook"].items()
            for user, score in users.items()}


def no_traceback(done: subprocess.CompletedProcess) -> bool:
    return "Traceback" not in done.stderr + done.stdout


def test_each_lab_becomes_a_line_item_and_each_complete_submission_a_score(course, platform):  # noqa: F811
    base, folder = platform
    done = send(course, platform_file(folder, base), "lab8", "lab12")
    assert done.returncode == 0, done.stderr
    got = received(base)
    assert {(i["resourceId"], i["scoreMaximum"]) for i in got["line_items"]} == {("lab8", 10), ("lab12", 27)}
    scores = sent_scores(got)
    # ada: 9 of 10, and 23 less a late penalty of 2 of 27; bo: Lab 8 only; cy, di: nothing; eve's
    # Lab 12 has a written answer still to grade: no score is sent for it
    assert {k: (s["scoreGiven"], s["scoreMaximum"]) for k, s in scores.items()} == COMPLETE
    assert all(s["gradingProgress"] == "FullyGraded" for s in got["scores"])
    assert "cy: not sent (nothing submitted)" in done.stdout
    assert "eve: not sent (written answers still to be graded: task7)" in done.stdout

    again = send(course, platform_file(folder, base))                # every lab, a second time
    assert again.returncode == 0, again.stderr
    after = received(base)
    assert len(after["line_items"]) == 2                              # updated, not duplicated
    assert len(after["scores"]) == 2 * len(got["scores"])


def test_a_report_says_what_was_sent_to_whom(course, platform, tmp_path):  # noqa: F811
    base, folder = platform
    report = tmp_path / "sent.csv"
    done = send(course, platform_file(folder, base), "lab12", "--report", str(report))
    assert done.returncode == 0, done.stderr
    rows = {(r["lab"], r["student"]): r for r in csv.DictReader(report.open())}
    assert rows[("lab12", "ada")]["outcome"] == "sent" and rows[("lab12", "ada")]["score"] == "21"
    assert rows[("lab12", "ada")]["lms_user_id"] == "1001"
    assert rows[("lab12", "ada")]["grading_progress"] == "FullyGraded"
    assert rows[("lab12", "eve")]["outcome"] == "not sent"
    assert rows[("lab12", "eve")]["detail"] == "written answers still to be graded: task7"
    assert rows[("lab12", "cy")]["detail"] == "nothing submitted"
    assert set(rows) == {("lab12", s) for s in ("ada", "bo", "cy", "di", "eve")}


def test_pending_work_is_sent_only_on_request_and_never_as_a_grade(course, keys):  # noqa: F811
    for lms in ("canvas", "moodle"):
        with running_platform(keys, "--lms", lms) as base:
            done = send(course, platform_file(keys, base, lms=lms), "lab12", "--send-pending")
            assert done.returncode == 0, done.stderr
            got = received(base)
            eve = sent_scores(got)[("lab12", "1005")]
            # the platform's own word for "handed in, a grader must finish it"; no number
            assert eve["gradingProgress"] == "PendingManual" and eve["activityProgress"] == "Submitted"
            assert "scoreGiven" not in eve
            assert shown(got)[("lab12", "1005")] is None, lms
            assert shown(got)[("lab12", "1001")] == 21, lms


def test_moodle_line_items_keep_their_type_id(course, keys):  # noqa: F811
    """Moodle's line item URLs end in ``?type_id=N``, which every request must carry: the scores
    URL is the line item's path with ``/scores`` added, its query kept."""
    with running_platform(keys, "--lms", "moodle") as base:
        done = send(course, platform_file(keys, base, lms="moodle"))
        assert done.returncode == 0, done.stderr + done.stdout
        got = received(base)
        assert {k: (s["scoreGiven"], s["scoreMaximum"]) for k, s in sent_scores(got).items()} == COMPLETE
        posts = [path for method, path, status in got["requests"] if path.split("?")[0].endswith("/scores")]
        assert posts and all(p.endswith("/lineitem/scores?type_id=7") for p in posts), posts
        assert all(status < 400 for _, _, status in got["requests"]), got["requests"]
        again = send(course, platform_file(keys, base, lms="moodle"))
        assert again.returncode == 0 and len(received(base)["line_items"]) == 2


def test_canvas_listing_is_followed_page_by_page(course, keys):  # noqa: F811
    """Canvas pages a listing of line items (a Link header names the next page): a lab's item on
    a later page is found again, not made a second time."""
    with running_platform(keys, "--lms", "canvas", "--page-size", "1") as base:
        for _ in range(2):
            done = send(course, platform_file(keys, base, lms="canvas"))
            assert done.returncode == 0, done.stderr
        got = received(base)
        assert sorted(i["resourceId"] for i in got["line_items"]) == ["lab12", "lab8"]
        assert any("page=2" in path for method, path, _ in got["requests"] if method == "GET")


def test_an_unavailable_lms_is_tried_again_then_named(course, keys):  # noqa: F811
    with running_platform(keys) as base:
        control(base, unavailable=2)                    # a 503 for the next two requests
        done = send(course, platform_file(keys, base), "lab8")
        assert done.returncode == 0, done.stderr
        got = received(base)
        assert [s for _, _, s in got["requests"]].count(503) == 2
        assert {k for k in sent_scores(got)} == {("lab8", "1001"), ("lab8", "1002")}

        control(base, unavailable=1000)                 # down for good
        down = send(course, platform_file(keys, base), "lab8")
        assert down.returncode != 0 and no_traceback(down), down.stderr
        assert "HTTP 503" in down.stderr and "tries" in down.stderr


def test_an_lms_that_cannot_be_reached_is_named(course, keys):  # noqa: F811
    with socket.socket() as probe:                      # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    done = send(course, platform_file(keys, base), "lab8")
    assert done.returncode != 0 and no_traceback(done), done.stderr
    assert f"could not reach the LMS at {base}/token" in done.stderr


def test_an_expired_token_is_replaced(course, keys):  # noqa: F811
    from attention_course_instructor.grading.lti_ags import AgsClient, Platform

    with running_platform(keys) as base:
        client = AgsClient(Platform.from_file(platform_file(keys, base)))
        item = client.line_item("lab8", "Lab 8", 10)
        control(base, expire_tokens=True)              # the LMS ends the token mid-run
        assert client.score(item, "1001", 9, 10) == "FullyGraded"
        statuses = [s for _, _, s in received(base)["requests"]]
        assert statuses == [200, 201, 401, 200]


def test_a_score_the_lms_refuses_is_reported_and_the_others_are_sent(course, keys):  # noqa: F811
    """bo is not a learner of the LMS course (a TA imported as a student, say): Canvas refuses
    that one score; everyone else's is sent and the command says which failed."""
    with running_platform(keys, "--lms", "canvas", "--learners", "1001,1005") as base:
        done = send(course, platform_file(keys, base, lms="canvas"), "lab8")
        assert done.returncode == 3 and no_traceback(done), done.stderr
        assert "bo: refused by the LMS: HTTP 422" in done.stdout
        assert {k for k in sent_scores(received(base))} == {("lab8", "1001")}


def test_a_tool_key_the_lms_does_not_know_is_refused(course, platform):  # noqa: F811
    base, folder = platform
    before = len(received(base)["scores"])
    done = send(course, platform_file(folder, base, key="another-key.pem"), "lab8")
    assert done.returncode != 0 and no_traceback(done)
    assert "the LMS refused the access token: HTTP 401" in done.stderr and "invalid_client" in done.stderr
    assert len(received(base)["scores"]) == before


def test_missing_platform_values_are_named(course, platform, tmp_path):  # noqa: F811
    base, folder = platform
    path = platform_file(folder, base, token_url="", lineitems="")
    done = send(course, path, "lab8")
    assert done.returncode != 0 and "need token_url, lineitems" in done.stderr


def test_a_grade_changed_by_question_or_regrade_reaches_the_lms(course, platform, tmp_path, monkeypatch):  # noqa: F811
    """What the grading page does when it writes a score: the student's new lab total goes to the
    LMS at once (``by_question.regrades.send_to_lms``), as the whole-class passback would send it."""
    import shutil

    from nbgrader.coursedir import CourseDirectory

    from attention_course_instructor.grading.by_question import answers, regrades

    base, folder = platform
    shutil.copytree(course, tmp_path / "course")
    db = f"sqlite:///{tmp_path / 'course' / 'gradebook.db'}"
    written = answers.Question("lab12", "lab12", "task7", "Task 7", 7.0, None)
    answers.apply(CourseDirectory(root=str(tmp_path / "course")), db, written, "eve", 6.0, "Clear.", "ta1")
    monkeypatch.delenv("COURSE_LMS_PLATFORM", raising=False)
    said, finished = regrades.send_to_lms(db, "lab12", "eve")
    assert "no LMS is set" in said and finished
    monkeypatch.setenv("COURSE_LMS_PLATFORM", str(platform_file(folder, base)))
    assert regrades.send_to_lms(db, "lab12", "eve") == ("LMS: sent, 21", True)   # 15 + 6
    assert shown(received(base))[("lab12", "1005")] == 21
    # an LMS out of reach: the page is told it is not finished; nothing raises (the score is written)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        away = f"http://127.0.0.1:{closed.getsockname()[1]}"
    monkeypatch.setenv("COURSE_LMS_PLATFORM", str(platform_file(folder, base, token_url=f"{away}/token")))
    said, finished = regrades.send_to_lms(db, "lab12", "eve")
    assert said.startswith("LMS: not sent (") and not finished, said
