"""LTI 1.3 login on the course hub, end to end (``deploy/hub/lti13_login.py``).

A real hub (``COURSE_HUB_AUTH=lti13``, with its proxy, on 127.0.0.1) and a real LTI 1.3 platform
process (``tests/lti_platform.py``: its own RSA key, a JWKS endpoint, the OpenID Connect
third-party initiated login and the signed ``id_token`` post). An instructor and two students
launch from the platform in Chromium and land in their own servers, made on that first launch,
with their role's tools. Launches that are wrong in one way each are refused with a message and
make no account. Every account and process made here is removed.
"""
from __future__ import annotations

import csv
import json
import os
import pwd
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

import hub_helpers
from attention_course_instructor.grading.nbgrader_cli import run_nbgrader
from test_lti_grade_passback import key_pair

pytestmark = [pytest.mark.slow, pytest.mark.browser]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(hub_helpers.HUB))
from lti13_login import username_for  # noqa: E402

account_exists = hub_helpers.account_exists

CLIENT_ID = "course-hub"
PEOPLE = {"instructor": ("teacher-7", "Instructor"), "ana": ("student-7a", "Learner"),
          "ben": ("student-7b", "Learner")}
EXTRA = {"ana": "&canvas_id=4321", "ben": "&given=%3DHYPERLINK(%22http://x.example%22)"}
# fault -> what the refusal says
FAULTS = {"expired": "expired", "wrong-key": "Signature verification failed",
          "wrong-client": "audience", "wrong-deployment": "is for deployment",
          "no-roles": "roles", "mentor": "this LMS role may not use the course hub",
          "other-course": "comes from the LMS course 'course-2'",
          "azp": "is not the course hub's client id",
          "elsewhere": "not the course hub at"}


@pytest.fixture(scope="module")
def lti_hub(tmp_path_factory):
    missing = hub_helpers.missing_requirements()
    if missing:
        pytest.skip(missing)
    hub_helpers.prepare()
    folder = tmp_path_factory.mktemp("lti")
    key_pair(folder, "tool-key")
    hub = hub_helpers.Hub([], [], setup=False)
    platform = subprocess.Popen([sys.executable, str(HERE / "lti_platform.py"), "--port", "0",
                                 "--tool-key", str(folder / "tool-key-public.pem"),
                                 "--client-id", CLIENT_ID, "--tool-url", hub.url],
                                stdout=subprocess.PIPE, text=True)
    base = platform.stdout.readline().strip()
    names = {who: username_for(base, sub) for who, (sub, _) in PEOPLE.items()}
    names |= {fault: username_for(base, f"fault-{fault}") for fault in [*FAULTS, "replay", "other-issuer"]}
    names |= {"demoted": username_for(base, "teacher-8"), "slow": username_for(base, "student-slow"),
              "framed": username_for(base, "student-framed"),      # every launch's account: removed
              "again": username_for(base, "student-ana-again")}   # at the end (one was left before)
    settings = folder / "platform.json"
    settings.write_text(json.dumps({"issuer": base, "client_id": CLIENT_ID, "deployment_id": "deployment-1",
                                    "authorize_url": f"{base}/auth", "jwks_endpoint": f"{base}/jwks",
                                    "context_id": "course-1", "key_refetch_seconds": 1,
                                    "frame_origin": base.replace("127.0.0.1", "localhost")}))
    hub.env |= {"COURSE_HUB_AUTH": "lti13", "COURSE_LTI_PLATFORM": str(settings)}
    hub.instructors, hub.students = [names["instructor"]], [names["ana"], names["ben"]]
    try:
        with hub:
            yield hub, base, names
    finally:
        platform.terminate()
        platform.wait(timeout=10)
        for name in names.values():                       # accounts the hub made on first launch
            subprocess.run(["pkill", "-KILL", "-u", name], check=False, capture_output=True)
            if account_exists(name):
                subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)


def launch(browser, base: str, user: str, role: str, fault: str = "", extra: str = "", context=None):
    context = context or browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/launch?user={user}&role={role}" + (f"&fault={fault}" if fault else "") + extra)
    return context, page




def test_each_person_lands_in_their_own_server_with_their_roles_tools(lti_hub, browser, tmp_path):
    hub, base, names = lti_hub
    assert not any(account_exists(names[who]) for who in PEOPLE), "accounts existed before launch"
    for who, (sub, role) in PEOPLE.items():
        context, page = launch(browser, base, sub, role, extra=EXTRA.get(who, ""))
        try:
            page.wait_for_url(re.compile(rf"/user/{names[who]}/"), timeout=180_000)
            page.wait_for_load_state("networkidle")
            assert account_exists(names[who])                        # made on this first launch
            if who == "instructor":
                assert not hub_helpers.disabled_extensions(page) & hub_helpers.FORMGRADER
                assert page.goto(f"{hub.url}/user/{names[who]}/formgrader").status == 200
            else:
                assert hub_helpers.FORMGRADER <= hub_helpers.disabled_extensions(page)
                assert page.goto(f"{hub.url}/user/{names[who]}/formgrader").status == 404
        finally:
            context.close()
        home = pwd.getpwnam(names[who]).pw_dir                        # private, as course.py's
        assert oct(os.stat(home).st_mode & 0o777) == "0o700", (who, oct(os.stat(home).st_mode))
    # every Learner's launch updated the hub's class list, which nbgrader imports as it stands:
    # Canvas's own user id where the launch carried it, else the LTI sub; no instructor on it; a
    # name a spreadsheet would run as a formula written with a leading apostrophe
    roster = hub.tmp / "state" / "lms-roster.csv"
    rows = {r["id"]: r for r in csv.DictReader(roster.open())}
    assert {name: row["lms_user_id"] for name, row in rows.items()} == {names["ana"]: "4321",
                                                                        names["ben"]: "student-7b"}
    assert rows[names["ben"]]["first_name"] == "'=HYPERLINK(\"http://x.example\")"
    assert f"{names['ben']}: the LMS sent a first_name beginning like a spreadsheet formula" in \
        hub.hub_log.read_text()
    assert oct(roster.stat().st_mode & 0o777) == "0o640"
    run_nbgrader(tmp_path, "db", "student", "import", str(roster))
    listed = run_nbgrader(tmp_path, "db", "student", "list").stdout
    assert "4321" in listed and "student-7b" in listed and names["instructor"] not in listed, listed


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_wrong_launch_is_refused_and_makes_no_account(lti_hub, browser, fault):
    hub, base, names = lti_hub
    role, fault_sent = ("Mentor", "") if fault == "mentor" else ("Learner", fault)
    context, page = launch(browser, base, f"fault-{fault}", role, fault_sent)
    try:
        page.wait_for_url(re.compile(r"/hub/lti13/oauth_callback"), timeout=60_000)
        text = page.inner_text("body")
        assert re.search(r"\b40[013]\b", text), text[:500]
        assert FAULTS[fault].lower() in text.lower(), text[:500]
        assert not account_exists(names[fault])
    finally:
        context.close()


def test_a_login_started_by_another_issuer_is_refused(lti_hub, browser):
    hub, base, names = lti_hub
    context, page = launch(browser, base, "fault-other-issuer", "Learner", "other-issuer")
    try:
        page.wait_for_url(re.compile(r"/hub/lti13/oauth_login"), timeout=60_000)
        text = page.inner_text("body")
        assert "400" in text and "not at the course's platform" in text, text[:500]
        assert not account_exists(names["other-issuer"])
    finally:
        context.close()


def test_a_replayed_launch_is_refused(lti_hub, browser):
    """The same token and state posted again from a browser without the login's cookies: the
    state check refuses it."""
    hub, base, names = lti_hub
    context, page = launch(browser, base, "fault-replay", "Learner")
    try:
        page.wait_for_url(re.compile(rf"/user/{names['replay']}/|/hub/"), timeout=180_000)
    finally:
        context.close()
    other = browser.new_context()
    try:
        page = other.new_page()
        page.goto(f"{base}/replay")
        page.wait_for_url(re.compile(r"/hub/lti13/oauth_callback"), timeout=60_000)
        text = page.inner_text("body")
        assert "400" in text and "state" in text.lower(), text[:500]
    finally:
        other.close()


def test_a_launch_posted_again_with_its_cookies_is_refused(lti_hub, browser):
    """The launch's own request -- token, state and the login's cookies -- captured and posted
    again within the token's ten minutes: accepted twice before; now its nonce is remembered."""
    hub, base, names = lti_hub
    captured = []
    context = browser.new_context()
    page = context.new_page()
    page.on("request", lambda r: captured.append((r.url, r.post_data, r.all_headers()))
            if "oauth_callback" in r.url and r.method == "POST" else None)
    try:
        page.goto(f"{base}/launch?user=student-ana-again&role=Learner")
        page.wait_for_url(re.compile(r"/user/"), timeout=180_000)
    finally:
        context.close()
    (url, body, headers), = captured[:1]
    again = requests.post(url, data=body, allow_redirects=False, timeout=60, headers={
        "Cookie": headers["cookie"], "Content-Type": "application/x-www-form-urlencoded"})
    assert again.status_code == 400 and "used already" in again.text, (again.status_code, again.text[:300])


def test_a_slow_key_set_does_not_stall_the_hub(lti_hub, browser):
    """A launch signed with a key the hub has not seen makes it fetch the platform's keys, which
    answer after 4 s; meanwhile the hub answers everyone else at once (it fetched them in its own
    event loop before), and the launch still succeeds."""
    hub, base, names = lti_hub
    time.sleep(1.5)                    # past the key client's least time between fetches (1 s here)
    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{base}/launch?user=student-slow&role=Learner&fault=slow-keys", wait_until="commit")
        answers = []
        for _ in range(6):                                 # while the hub waits for the keys
            time.sleep(0.5)
            started = time.monotonic()
            requests.get(f"{hub.url}/hub/api/", timeout=30).raise_for_status()
            answers.append(time.monotonic() - started)
        page.wait_for_url(re.compile(rf"/user/{names['slow']}/"), timeout=180_000)
    finally:
        context.close()
    assert requests.get(f"{base}/received", timeout=10).json()["slow_key_sets_served"] == 1
    assert max(answers) < 2, answers


def test_a_demoted_instructor_loses_the_instructors_server(lti_hub, browser):
    """The same person launches as Instructor, then (the LMS changed their role) as Learner: the
    server started with formgrader and the grader on its path is stopped and started again as a
    student's."""
    hub, base, names = lti_hub
    name = names["demoted"]
    for role, formgrader in (("Instructor", 200), ("Learner", 404)):
        context, page = launch(browser, base, "teacher-8", role)
        try:
            page.wait_for_url(re.compile(rf"/user/{name}/lab"), timeout=180_000)
            page.wait_for_load_state("networkidle")
            assert page.goto(f"{hub.url}/user/{name}/formgrader").status == formgrader, role
        finally:
            context.close()
    running = subprocess.run(["pgrep", "-u", name, "-f", "jupyterhub-singleuser"], capture_output=True,
                             text=True).stdout.split()
    assert len(running) == 1, running                          # one server: the restarted one
    environ = dict(item.split("=", 1) for item in Path(f"/proc/{running[0]}/environ").read_bytes()
                   .decode().split("\0") if "=" in item)
    assert environ["JUPYTER_CONFIG_PATH"].endswith("/roles/student") and "PYTHONPATH" not in environ


def test_a_launch_inside_the_lms_page_lands_in_the_server_there(lti_hub, browser):
    """The LMS shows the tool in an iframe of its own page, another site than the hub's (here the
    platform's page as ``localhost``, the hub as ``127.0.0.1``). The login's cookies must cross
    that frame (SameSite=None; Secure; Partitioned: before, "OAuth state missing from cookies")
    and the hub's and the server's pages must let the LMS frame them.

    What this proves: the login and the server's page load inside the frame. What it does not:
    that JupyterLab draws there -- in headless Chromium it stays on its splash screen inside a
    frame of another site, with no error logged; the guide names the new tab as the placement."""
    hub, base, names = lti_hub
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    served = []
    page.on("response", lambda r: served.append((r.status, r.url)))
    try:
        lms = base.replace("127.0.0.1", "localhost")
        page.goto(f"{lms}/framed?user=student-framed&role=Learner")
        server = f"/user/{names['framed']}/lab"
        deadline = time.monotonic() + 180
        while not any(server in f.url for f in page.frames) and time.monotonic() < deadline:
            page.wait_for_timeout(500)
        assert any(server in f.url for f in page.frames), [f.url for f in page.frames]
        assert any(status == 200 and server in url for status, url in served), served
        assert not any(status == 403 for status, _ in served), served
    finally:
        context.close()
