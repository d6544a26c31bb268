"""The course on its hub, end to end, with real processes: JupyterHub, configurable-http-proxy,
system accounts, users' servers spawned by the hub, nbgrader's exchange, formgrader, the hardened
grader and ``nbgrader export``.

One instructor and three students. The instructor generates and releases Lab 8 from formgrader; the
students fetch it from their Assignments tab, save their work and submit (a correct notebook, one
task wrong) through the course's submission service; the third sends the untouched release to the
service by hand, claiming a time before the due date. One student also puts a link to the
instructor's source notebook in their folder before submitting, and tries the service's API
against another's submissions. The instructor collects, grades with the hardened grader in a
terminal, enters a manual score in formgrader and exports the gradebook. Then each account tries
what it must not be able to do.
"""
from __future__ import annotations

import base64
import csv
import io
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
import requests

import hub_helpers
from hub_helpers import COURSE_ID, Hub
from conftest import REPO

pytestmark = pytest.mark.slow
FULL, WITHOUT_TASK6, MANUAL = 23.0, 21.0, 1.5
WRONG_MAP = ("def attention_map(weights, reading, n_columns):\n"
             "    return weights[:, :n_columns].flip(0)\n")


def graded_cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


@pytest.fixture(scope="module")
def course():
    missing = hub_helpers.missing_requirements()
    if missing:
        pytest.skip(missing)
    hub_helpers.prepare()
    tag = secrets.token_hex(3)
    instructor = f"ti{tag}"
    good, blank, wrong = (f"ts{tag}{k}" for k in "abc")
    with Hub([instructor], [good, blank, wrong]) as hub:
        hub.names = {"instructor": instructor, "good": good, "blank": blank, "wrong": wrong}
        yield hub


@pytest.fixture(scope="module")
def graded(course):
    """Run the whole term once; the tests read what it left behind."""
    hub, n = course, course.names
    people = [n["instructor"], n["good"], n["blank"], n["wrong"]]
    for name in people:                                   # every server spawned by the hub at once
        hub.start_server(name)
    spawn_seconds = {name: hub.wait_ready(name) for name in people}

    inst = n["instructor"]
    assert hub.formgrader(inst, "POST", "assignment/lab8/assign").json()["success"]
    assert hub.formgrader(inst, "POST", "assignment/lab8/release").json()["success"]

    listed = {}
    for student in (n["good"], n["blank"], n["wrong"]):
        listed[student] = hub.api(student, "GET", f"/user/{student}/assignments",
                                  params={"course_id": COURSE_ID}).json()
        fetched = hub.nbgrader_action(student, "fetch", "lab8")
        assert fetched["success"], fetched
    solution = nbformat.read(REPO / "solutions" / "lab8" / "lab8.ipynb", as_version=4)
    wrong = nbformat.from_dict(json.loads(json.dumps(solution)))
    graded_cell(wrong, "task6_solution").source = WRONG_MAP
    hub.save_notebook(n["good"], "lab8/lab8.ipynb", solution)
    hub.save_notebook(n["wrong"], "lab8/lab8.ipynb", wrong)
    source = Path(os.path.expanduser(f"~{inst}")) / COURSE_ID / "source" / "lab8" / "lab8.ipynb"
    linked = hub.as_user(n["wrong"], "ln", "-s", str(source), "lab8/notes.ipynb")
    assert linked.returncode == 0, linked.stderr
    for student in (n["good"], n["wrong"]):
        submitted = hub.nbgrader_action(student, "submit", "lab8")
        assert submitted["success"], submitted
    # the "blank" student hands the release in by hand, with a time of their own choosing
    release = (REPO / "labs" / "lab8" / "lab8.ipynb").read_bytes()
    backdated = hub.api(n["blank"], "POST", SERVICE, json={
        "files": {"lab8.ipynb": base64.b64encode(release).decode()}, "secret": "s" * 128,
        "student_timestamp": BACKDATED})
    assert backdated.status_code == 201, backdated.text
    probes = service_probes(hub, n)

    # Validate, as the button does: the student's folder keeps only what they were given
    validated = hub.api(n["good"], "POST", f"/user/{n['good']}/assignments/validate",
                        data={"path": "lab8/lab8.ipynb"})
    validated.raise_for_status()
    folder = hub.api(n["good"], "GET", f"/user/{n['good']}/api/contents/lab8").json()["content"]

    collected = hub.formgrader(inst, "POST", "assignment/lab8/collect").json()
    course_dir = Path(os.path.expanduser(f"~{inst}")) / COURSE_ID
    # the guide's terminal commands, as written, in a terminal of the instructor's server
    terminal = hub.terminal(inst)
    try:
        commands = [(line, *terminal.run(line)) for line in guide_terminal_commands()]
    finally:
        terminal.close()
    failed = [(line, shown[-2000:]) for line, status, shown in commands if status != 0]
    assert not failed, failed

    # a manual score for one student's first written answer, through formgrader's API
    notebooks = hub.formgrader(inst, "GET", "submitted_notebooks/lab8/lab8").json()
    good_nb = next(s for s in notebooks if s["student"] == n["good"])
    grades = hub.formgrader(inst, "GET", "grades", params={"submission_id": good_nb["id"]}).json()
    written = next(g for g in grades if g["name"] == "task7a_answer")
    hub.formgrader(inst, "PUT", f"grade/{written['id']}", data=json.dumps({"manual_score": MANUAL}))

    export = hub.as_user(inst, "nbgrader", "export", "--to", "grades.csv", cwd=str(course_dir))
    assert export.returncode == 0, export.stderr[-3000:]      # again: the manual score is in now
    rows = {r["student_id"]: r for r in csv.DictReader(io.StringIO((course_dir / "grades.csv").read_text()))}

    # feedback back to the students through the exchange
    released = hub.formgrader(inst, "POST", "assignment/lab8/release_feedback").json()
    assert released["success"], released
    feedback = {s: hub.nbgrader_action(s, "fetch_feedback", "lab8") for s in (n["good"], n["wrong"])}
    return {"spawn": spawn_seconds, "listed": listed, "backdated": backdated.json(), "probes": probes,
            "validated": validated.json(), "folder": folder, "collected": collected,
            "commands": commands, "rows": rows, "course_dir": course_dir, "feedback": feedback}


def guide_terminal_commands() -> list[str]:
    """The instructor's terminal commands of the guide's "A term" (its first bash block)."""
    text = (REPO / "book" / "instructors" / "course-hub.md").read_text()
    block = text[text.index("## A term"):]
    block = block[block.index("```bash\n") + len("```bash\n"):]
    return [line for line in block[:block.index("```")].splitlines() if line.strip()]


SERVICE = f"/services/course-submissions/api/{COURSE_ID}/lab8"
BACKDATED = "2026-09-30 12:00:00.000000 UTC"


def service_probes(hub, n) -> dict:
    """What the "wrong" student gets from the submission service's API when they try it on."""
    theirs = hub.api(n["wrong"], "GET", SERVICE).json()["submissions"]
    good_id = next(r["id"] for r in hub.api(n["instructor"], "GET", SERVICE).json()["submissions"]
                   if r["student"] == n["good"])
    nb = base64.b64encode(b"{}").decode()
    return {
        "listed": sorted({r["student"] for r in theirs}),
        "other's files": hub.api(n["wrong"], "GET", f"{SERVICE}/{n['good']}/{good_id}").status_code,
        "a path out": hub.api(n["wrong"], "POST", SERVICE, json={"files": {"../x.ipynb": nb}}).status_code,
        "another course": hub.api(n["wrong"], "POST", SERVICE.replace(COURSE_ID, "other"),
                                  json={"files": {"x.ipynb": nb}}).status_code,
        "no token": requests.post(f"{hub.url}{SERVICE}", json={"files": {"x.ipynb": nb}}, timeout=30).status_code,
    }


def test_the_guides_terminal_commands_ran_in_a_login_shell_with_the_course_environment(course, graded):
    """Every command ran and exited 0 (the fixture checks that); the grader's line is among them,
    and the terminal's python is the course environment's."""
    lines = [line for line, _, _ in graded["commands"]]
    assert lines[0] == f"cd ~/{COURSE_ID}" and any("grading.hardened lab8" in line for line in lines)
    terminal = course.terminal(course.names["instructor"])
    try:
        status, shown = terminal.run("shopt -q login_shell && echo LOGIN; command -v python nbgrader")
    finally:
        terminal.close()
    assert status == 0 and "LOGIN" in shown
    assert shown.count(str(hub_helpers.USER_ENV / "bin")) >= 2, shown
    assert (graded["course_dir"] / "reports" / "lab8" / "similarity.html").exists()


def test_validating_leaves_only_what_was_released(course, graded):
    """Before, saving or validating wrote lab8.md beside the notebook (the release kept its
    jupytext pairing), which was then submitted."""
    assert graded["validated"]["success"], graded["validated"]
    assert [f["name"] for f in graded["folder"]] == ["lab8.ipynb"]


def test_students_see_lab8_in_their_assignments(course, graded):
    for student, listing in graded["listed"].items():
        assert listing["success"], listing
        assert [a["assignment_id"] for a in listing["value"]] == ["lab8"]
        assert all(a["status"] == "released" for a in listing["value"])


def test_export_holds_autograded_plus_manual_totals(course, graded):
    n, rows = course.names, graded["rows"]
    assert set(rows) >= {n["good"], n["blank"], n["wrong"]}
    assert float(rows[n["good"]]["raw_score"]) == FULL + MANUAL
    assert float(rows[n["blank"]]["raw_score"]) == 0.0
    assert float(rows[n["wrong"]]["raw_score"]) == WITHOUT_TASK6
    assert {float(r["max_score"]) for r in rows.values()} == {29.0}


def test_a_submission_keeps_the_time_the_service_received_it(course, graded):
    """The student's claimed time is kept beside it, flagged; the service's is the one graded by."""
    n = course.names
    assert graded["collected"]["success"], graded["collected"]
    folder = graded["course_dir"] / "submitted" / n["blank"] / "lab8"
    assert (folder / "timestamp.txt").read_text() == graded["backdated"]["received"]
    record = json.loads((folder / "exchange-record.json").read_text())
    assert record["source"] == "submission service" and record["student_timestamp"] == BACKDATED
    assert any(f"the submission says {BACKDATED}" in flag for flag in record["flags"])
    assert f"{n['blank']}: the submission says {BACKDATED}" in graded["collected"]["log"]


def test_a_link_in_a_students_folder_is_not_submitted(course, graded):
    n = course.names
    folder = graded["course_dir"] / "submitted" / n["wrong"] / "lab8"
    assert sorted(p.name for p in folder.iterdir()) == ["exchange-record.json", "lab8.ipynb",
                                                         "submission_secret.txt", "timestamp.txt"]


def test_the_service_gives_each_student_only_their_own(course, graded):
    n = course.names
    assert graded["probes"] == {"listed": [n["wrong"]], "other's files": 403, "a path out": 400,
                                "another course": 404, "no token": 401}


def test_feedback_reaches_its_student(course, graded):
    n = course.names
    for student in (n["good"], n["wrong"]):
        assert graded["feedback"][student]["success"], graded["feedback"][student]
        html = list((Path(os.path.expanduser(f"~{student}")) / "lab8" / "feedback").rglob("lab8.html"))
        assert len(html) == 1
        text = html[0].read_text()
        assert "run_hidden_check" not in text and "checks.py" not in text


def test_instructor_has_formgrader_and_students_do_not(course, graded):
    n = course.names
    assert course.api(n["instructor"], "GET", f"/user/{n['instructor']}/formgrader").status_code == 200
    for student in (n["good"], n["blank"]):
        r = course.api(student, "GET", f"/user/{student}/formgrader")
        assert r.status_code == 404
        r = course.api(student, "GET", f"/user/{student}/formgrader/api/assignments")
        assert r.status_code == 404


def test_only_instructors_have_the_instructor_package(course, graded):
    """The hub's environment holds the student package for everyone; the grader (the instructor
    package) is on instructors' path only, and the student package there holds no grading."""
    n = course.names
    probe = ("import importlib.util as u; print(u.find_spec('attention_course_instructor') is not None, "
             "u.find_spec('attention_course.grading') is not None)")
    instructor = course.as_user(n["instructor"], "python", "-c", probe)
    assert instructor.stdout.split() == ["True", "False"], instructor.stderr
    for student in (n["good"], n["blank"]):
        seen = course.as_user(student, "python", "-c", probe)
        assert seen.stdout.split() == ["False", "False"], seen.stderr


def test_the_course_environment_is_its_own(course):
    """Built as a copy of the tests' own environment (it holds exactly the pins; see
    user_env.py), the course environment still runs only itself: every script starts its own
    Python, the course package is the wheel's, and pip finds every package's requirements met."""
    env = hub_helpers.USER_ENV
    python = f"#!{env / 'bin' / 'python'}"
    scripts = [p for p in (env / "bin").iterdir() if p.is_file() and p.read_bytes()[:2] == b"#!"]
    elsewhere = [p.name for p in scripts if p.read_text(errors="replace").splitlines()[0]
                 not in (python, "#!/bin/sh", "#!/bin/bash")]
    assert len(scripts) > 50 and not elsewhere, elsewhere
    probe = "import attention_course, sys; print(attention_course.__file__, sys.prefix)"
    shown = course.as_user(course.names["good"], "python", "-c", probe)
    assert shown.stdout.split() == [str(env / "lib" / f"python{sys.version_info.major}."
                                        f"{sys.version_info.minor}" / "site-packages"
                                        / "attention_course" / "__init__.py"), str(env)], shown.stderr
    assert not list((env / "lib").glob("python*/site-packages/__editable__*"))
    check = course.as_user(course.names["good"], "python", "-m", "pip", "check")
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_course_environment_is_copied_only_from_one_holding_exactly_the_pins(tmp_path):
    """A venv with one package at another version than its pin, or one package more, is not
    copied (user_env.py then installs the pins with pip)."""
    user_env = hub_helpers.user_env_module()
    pinned = (REPO / "requirements.txt").read_text()
    assert user_env.holds_exactly_the_pins(REPO / "requirements.txt"), (
        "the tests' .venv holds more or other than the pins: make installs exactly them, and the "
        "hub's environment is copied from it only then (else installed with pip, 3 times as long); "
        "`.venv/bin/python deploy/hub/user_env.py --prune` uninstalls what no pin names")
    (tmp_path / "other.txt").write_text(pinned.replace("\npackaging==", "\npackaging==0.1\n# "))
    assert not user_env.holds_exactly_the_pins(tmp_path / "other.txt")
    (tmp_path / "fewer.txt").write_text(pinned.replace("\npackaging==", "\n# packaging=="))
    assert not user_env.holds_exactly_the_pins(tmp_path / "fewer.txt")


def test_removing_the_demo_leaves_no_empty_exchange_behind(tmp_path):
    """`make hub-remove-demo` (course.py remove-users --data) removes the course's exchange and
    submissions, and the folders setup made above them once nothing else is in them; another
    course's exchange folder keeps the root. (A newcomer found /srv/nbgrader/exchange left.)"""
    def remove(root: Path) -> str:
        env = {**os.environ, "COURSE_ROSTER": str(roster), "COURSE_HUB_STATE": str(root / "state"),
               "COURSE_EXCHANGE": str(root / "nbgrader" / "exchange"), "COURSE_ID": COURSE_ID,
               "COURSE_SUBMISSIONS": str(root / "nbgrader" / "submissions"),
               "COURSE_HUB_PORT": str(hub_helpers.free_ports(1))}
        done = subprocess.run([sys.executable, str(hub_helpers.HUB / "course.py"), "remove-users",
                               "--data"], env=env, capture_output=True, text=True, check=True)
        return done.stdout

    roster = tmp_path / "roster.json"
    roster.write_text(json.dumps({"instructors": [], "students": []}))
    for root, other in ((tmp_path / "alone", None), (tmp_path / "shared", "another-course")):
        for folder in ("state", f"nbgrader/exchange/{COURSE_ID}/outbound", "nbgrader/submissions/x"):
            (root / folder).mkdir(parents=True)
        if other:
            (root / "nbgrader" / "exchange" / other).mkdir()
        said = remove(root)
        assert sorted(p.name for p in root.iterdir()) == ([] if other is None else ["nbgrader"]), said
    assert [p.name for p in (tmp_path / "shared" / "nbgrader" / "exchange").iterdir()] == [other]


def test_a_student_cannot_open_another_users_server(course, graded):
    n = course.names
    for target in (n["blank"], n["instructor"]):
        r = course.api(n["good"], "GET", f"/user/{target}/api/contents", allow_redirects=False)
        assert r.status_code in (302, 403), r.status_code


READS = {
    "the exchange's feedback folder": "{exchange}/feedback",
    "the submission service's store": "{submissions}",
    "another student's home (their working copy, fetched feedback)": "~{other}/lab8",
    "the instructor's sources": "~{instructor}/{course}/source/lab8/lab8.ipynb",
    "the lab's checks": "~{instructor}/{course}/source/lab8/checks.py",
    "the solutions": "~{instructor}/{course}/solutions",
    "collected submissions": "~{instructor}/{course}/submitted",
    "the gradebook": "~{instructor}/{course}/gradebook.db",
    "everyone's feedback": "~{instructor}/{course}/feedback",
}


@pytest.mark.parametrize("what", list(READS))
def test_a_student_cannot_read(course, graded, what):
    n = course.names
    path = os.path.expanduser(READS[what].format(
        exchange=course.exchange / COURSE_ID, other=n["good"], instructor=n["instructor"], course=COURSE_ID,
        submissions=course.submissions))
    done = course.as_user(n["wrong"], "python", "-c", PEEK.format(path=path))
    assert done.stdout.strip() == "refused", (what, done.stdout, done.stderr)


PEEK = """
import os
path = {path!r}
try:
    if os.path.isdir(path):
        os.listdir(path)
    else:
        open(path, "rb").read(1)
    print("read")
except PermissionError:
    print("refused")
"""


def test_a_student_cannot_write_into_releases_or_others_folders(course, graded):
    n = course.names
    targets = [course.exchange / COURSE_ID / "outbound" / "lab8" / "lab8.ipynb",
               Path(os.path.expanduser(f"~{n['good']}")) / "lab8" / "lab8.ipynb",
               course.exchange / COURSE_ID / "outbound" / "lab9",
               course.exchange / COURSE_ID / "inbound",          # there is none to forge into
               course.submissions / n["good"]]
    for target in targets:
        done = course.as_user(n["wrong"], "python", "-c", SCRIBBLE.format(path=str(target)))
        assert done.stdout.strip() == "refused", (target, done.stdout, done.stderr)


SCRIBBLE = """
import os
path = {path!r}
try:
    if os.path.exists(path):
        open(path, "a").write("x")
    else:
        os.mkdir(path)
    print("written")
except PermissionError:
    print("refused")
"""


def test_no_server_logs_an_unwritable_exchange(course, graded):
    log = course.hub_log.read_text()
    assert "/usr/local/share/nbgrader/exchange" not in log
    assert "Unhandled error" not in log


def browser_login(browser, hub, name):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", name)
    page.fill("#password_input", hub.password)
    page.click("#login_submit")
    page.wait_for_load_state("networkidle")
    return context, page




@pytest.mark.browser
def test_in_the_browser_each_role_sees_its_own_tools(course, graded, browser):
    n, shots = course.names, REPO / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    context, page = browser_login(browser, course, n["blank"])
    try:
        page.goto(f"{course.url}/user/{n['blank']}/tree", wait_until="networkidle")
        page.get_by_text("Nbgrader", exact=True).first.click()
        menu = page.locator(".lm-Menu").first
        menu.wait_for()
        items = menu.inner_text()
        assert "Assignment List" in items
        assert "Formgrader" not in items and "Create Assignment" not in items
        assert hub_helpers.FORMGRADER <= hub_helpers.disabled_extensions(page)
        menu.get_by_text("Assignment List").click()
        page.wait_for_function("document.body.innerText.includes('lab8')")   # the list has loaded
        page.screenshot(path=str(shots / "hub-student-assignments.png"), full_page=True)
        refused = page.goto(f"{course.url}/user/{n['blank']}/formgrader")
        assert refused.status == 404
    finally:
        context.close()
    context, page = browser_login(browser, course, n["instructor"])
    try:
        page.goto(f"{course.url}/user/{n['instructor']}/lab", wait_until="networkidle")
        assert not hub_helpers.disabled_extensions(page) & hub_helpers.FORMGRADER
        page.get_by_text("Nbgrader", exact=True).first.click()
        page.locator(".lm-Menu").first.get_by_text("Formgrader", exact=True).click()
        frame = page.frame_locator("iframe[src*='formgrader']")
        frame.get_by_text("Manage Assignments").first.wait_for(timeout=30000)
        page.screenshot(path=str(shots / "hub-instructor-formgrader.png"))
        row = frame.locator("tr", has_text="lab8").first
        row.get_by_role("link", name="lab8").click()          # the lab's source folder, in JupyterLab
        page.locator(".jp-BreadCrumbs", has_text="source").wait_for(timeout=30000)
        row.locator("a:has(.glyphicon-search)").first.click()   # Preview: the release's folder
        page.locator(".jp-BreadCrumbs", has_text="labs").wait_for(timeout=30000)
        page.locator(".jp-DirListing-item", has_text="lab8.ipynb").first.dblclick()
        page.locator(".lm-TabBar-tabLabel", has_text="lab8.ipynb").first.wait_for(timeout=30000)
        page.locator(".lm-TabBar-tabLabel", has_text="Formgrader").first.click()
        frame.get_by_text("Manual Grading").first.click()
        frame.get_by_text("lab8").first.wait_for(timeout=30000)
        assert not page.get_by_text("official Jupyter news").count()   # no news prompt
    finally:
        context.close()


REGRADES = f"/services/course-submissions/regrades/{COURSE_ID}"


def regrade_probes(hub, n) -> dict:
    """What each role may do with the regrade queue's API (before any request is made)."""
    ask = {"assignment": "lab8", "task": "task7b_answer", "reason": "x"}
    first = hub.api(n["blank"], "POST", REGRADES, json=ask)
    return {
        "instructor asks": hub.api(n["instructor"], "POST", REGRADES, json=ask).status_code,
        "student asks": first.status_code,
        "asks again while open": hub.api(n["blank"], "POST", REGRADES, json=ask).status_code,
        "no reason": hub.api(n["good"], "POST", REGRADES, json={**ask, "reason": " "}).status_code,
        "a path for a task": hub.api(n["good"], "POST", REGRADES, json={**ask, "task": "../x"}).status_code,
        "student answers": hub.api(n["good"], "POST", f"{REGRADES}/{first.json()['id']}",
                                   json={"reason": "mine", "score_before": 0, "score_after": 2}).status_code,
        "another student lists": [r["student"] for r in hub.api(n["good"], "GET", REGRADES).json()["requests"]],
        "instructor lists": [r["student"] for r in hub.api(n["instructor"], "GET", REGRADES).json()["requests"]],
    }


def open_link_in_new_tab(context, page, name: str):
    """Click a link that opens a new tab (as JupyterLab's Markdown preview opens a link away
    from the files); the new tab, loaded."""
    with context.expect_page() as opened:
        page.get_by_role("link", name=name).first.click()
    tab = opened.value
    tab.wait_for_load_state("networkidle")
    return tab


@pytest.mark.browser
def test_grading_by_question_and_a_regrade_request_in_the_browser(course, graded, browser, axe_script):
    """An instructor grades a written question across the class from the grading page their
    START-HERE links to; a student asks, from their feedback page, for a regrade of the task they
    lost points on; the instructor resolves it; the gradebook, the student's regrade page and their
    feedback follow. The student reaches their feedback page as *Open in New Browser Tab* does
    (its ``/files/`` address)."""
    n, shots = course.names, REPO / "_build" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    inst, student = n["instructor"], n["wrong"]
    probes = regrade_probes(course, n)
    assert probes == {"instructor asks": 403, "student asks": 201, "asks again while open": 409,
                      "no reason": 400, "a path for a task": 400, "student answers": 403,
                      "another student lists": [], "instructor lists": [n["blank"]]}

    # the instructor grades 7b by question
    context, page = browser_login(browser, course, inst)
    try:
        page.goto(f"{course.url}/user/{inst}/lab/tree/START-HERE.md", wait_until="networkidle")
        grading = open_link_in_new_tab(context, page, "grading page")
        assert grading.url.endswith(f"/user/{inst}/course-grading")
        grading.get_by_role("link", name="(task7b)").first.click()
        grading.wait_for_load_state("networkidle")
        assert grading.get_by_role("heading", name="Answer 3 of 3").count() == 1
        assert not any(name in grading.content() for name in (n["good"], n["blank"], n["wrong"]))
        grading.screenshot(path=str(shots / "hub-grading-by-question.png"), full_page=True)
        first = grading.locator("section.card").first
        first.get_by_label("A weight is a mixing coefficient").check()
        first.get_by_role("button", name="Apply to answer 1").click()
        grading.wait_for_load_state("networkidle")
        assert grading.locator("section.card").first.get_by_text("Graded: 1 of 2").count() == 1
    finally:
        context.close()
    scores = {g["student"]: g for g in course.formgrader(inst, "GET", "submitted_notebooks/lab8/lab8").json()}
    graded_7b = [s for s in (n["good"], n["wrong"], n["blank"]) if manual_score(course, inst, scores[s]["id"],
                                                                                "task7b_answer") == 1]
    assert len(graded_7b) == 1

    # the student asks from their feedback page
    feedback = next((Path(os.path.expanduser(f"~{student}")) / "lab8" / "feedback").rglob("lab8.html"))
    first_feedback = feedback.read_text()
    relative = feedback.relative_to(os.path.expanduser(f"~{student}"))
    context, page = browser_login(browser, course, student)
    try:
        page.goto(f"{course.url}/user/{student}/files/{relative}", wait_until="networkidle")
        entry = page.locator("li", has_text="Task 6").filter(has_text="Ask for a regrade").first
        task = entry.get_by_role("link", name="Ask for a regrade of this task").get_attribute("href")
        entry.get_by_role("link", name="Ask for a regrade of this task").click()
        page.wait_for_load_state("networkidle")
        assert page.url.startswith(f"{course.url}/user/{student}/course-regrade")
        page.get_by_label("Why (required)").fill("My map reads the columns in order; see my plot.")
        page.get_by_role("button", name="Send the request").click()
        page.wait_for_load_state("networkidle")
        assert page.get_by_role("status").inner_text().startswith("Sent")
        page.screenshot(path=str(shots / "hub-regrade-request.png"), full_page=True)
        assert axe_violations(page, axe_script) == []
    finally:
        context.close()
    task = dict(p.split("=") for p in task.split("?", 1)[1].split("&"))["task"]

    # the instructor resolves it from the queue
    before = manual_or_auto(course, inst, scores[student]["id"], task)
    context, page = browser_login(browser, course, inst)
    try:
        page.goto(f"{course.url}/hub/user-redirect/course-grading", wait_until="networkidle")
        # a co-grader sets the same score in formgrader after this page was drawn: the resolution
        # is refused (nothing written); the page's link opens the queue again, then it resolves
        graded = next(g for g in course.formgrader(inst, "GET", "grades", params={
            "submission_id": scores[student]["id"]}).json() if g["name"] == task)
        course.formgrader(inst, "PUT", f"grade/{graded['id']}", json={"manual_score": before})
        reason = "Checked by hand: one case was right."
        for attempt in ("refused", "resolved"):
            card = page.locator("section.card", has_text=student).filter(has_text="open").first
            if attempt == "refused":
                card.get_by_label("New score").fill(str(before + 1))
                card.get_by_label("Your answer to the student").fill(reason)
            else:                       # the refusal's link gave back what was sent, filled in
                assert card.get_by_label("New score").input_value() == f"{before + 1:g}"
                assert card.get_by_label("Your answer to the student").input_value() == reason
            card.get_by_role("button", name="Resolve").click()
            page.wait_for_load_state("networkidle")
            if attempt == "refused":
                alert = page.get_by_role("alert").inner_text()
                assert "changed outside these pages (in formgrader" in alert, alert
                assert page.get_by_role("listitem").filter(has_text=reason).count() == 1
                page.get_by_role("link", name="Open the regrade requests again at this request").click()
                page.wait_for_load_state("networkidle")
        said = page.get_by_role("status").inner_text()
        assert f"{before:g} -> {before + 1:g}" in said and "feedback generated and released again" in said, said
        page.screenshot(path=str(shots / "hub-regrade-resolved.png"), full_page=True)
        assert axe_violations(page, axe_script) == []
    finally:
        context.close()
    assert manual_or_auto(course, inst, scores[student]["id"], task) == before + 1

    # the student reads the answer and the new feedback
    mine = course.api(student, "GET", REGRADES).json()["requests"]
    assert [(r["task"], r["status"]) for r in mine] == [(task, "resolved")]
    assert mine[0]["history"][-1]["reason"] == reason
    page_text = course.api(student, "GET", f"/user/{student}/course-regrade").text
    assert reason in page_text and "resolved" in page_text
    fetched = course.nbgrader_action(student, "fetch_feedback", "lab8")
    assert fetched["success"], fetched
    assert feedback.read_text() != first_feedback               # the same submission's, made again


def axe_violations(page, axe_script) -> list:
    """axe-core's WCAG 2.1 A and AA findings on the open page (as the grading pages' own test)."""
    page.add_script_tag(path=str(axe_script))
    found = page.evaluate("(only) => axe.run(document, {runOnly: only})",
                          {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]})
    return [(v["id"], len(v["nodes"])) for v in found["violations"]]


def manual_score(hub, inst, submission_id, grade_id):
    grades = hub.formgrader(inst, "GET", "grades", params={"submission_id": submission_id}).json()
    return next(g for g in grades if g["name"] == grade_id)["manual_score"]


def manual_or_auto(hub, inst, submission_id, grade_id) -> float:
    grades = hub.formgrader(inst, "GET", "grades", params={"submission_id": submission_id}).json()
    grade = next(g for g in grades if g["name"] == grade_id)
    return grade["manual_score"] if grade["manual_score"] is not None else grade["auto_score"]
