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
import pwd
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hub_helpers
from attention_course_instructor.grading.nbgrader_cli import run_nbgrader
from test_lti_grade_passback import key_pair

pytestmark = [pytest.mark.slow, pytest.mark.browser]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(hub_helpers.HUB))
from lti13_login import username_for  # noqa: E402

CLIENT_ID = "course-hub"
PEOPLE = {"instructor": ("teacher-7", "Instructor"), "ana": ("student-7a", "Learner"),
          "ben": ("student-7b", "Learner")}
# fault -> what the refusal says
FAULTS = {"expired": "expired", "wrong-key": "Signature verification failed",
          "wrong-client": "audience", "wrong-deployment": "is for deployment",
          "no-roles": "roles", "mentor": "this LMS role may not use the course hub"}


def account_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


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
    names |= {fault: username_for(base, f"fault-{fault}") for fault in [*FAULTS, "replay"]}
    settings = folder / "platform.json"
    settings.write_text(json.dumps({"issuer": base, "client_id": CLIENT_ID, "deployment_id": "deployment-1",
                                    "authorize_url": f"{base}/auth", "jwks_endpoint": f"{base}/jwks"}))
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


def launch(browser, base: str, user: str, role: str, fault: str = ""):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{base}/launch?user={user}&role={role}" + (f"&fault={fault}" if fault else ""))
    return context, page




def test_each_person_lands_in_their_own_server_with_their_roles_tools(lti_hub, browser, tmp_path):
    hub, base, names = lti_hub
    assert not any(account_exists(names[who]) for who in PEOPLE), "accounts existed before launch"
    for who, (sub, role) in PEOPLE.items():
        context, page = launch(browser, base, sub, role)
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
    # every launch updated the hub's class list, which nbgrader imports as it stands
    roster = hub.tmp / "state" / "lms-roster.csv"
    rows = {r["id"]: r for r in csv.DictReader(roster.open())}
    assert {names[who]: rows[names[who]]["lms_user_id"] for who in PEOPLE} == \
        {names[who]: sub for who, (sub, _) in PEOPLE.items()}
    assert oct(roster.stat().st_mode & 0o777) == "0o640"
    run_nbgrader(tmp_path, "db", "student", "import", str(roster))
    listed = run_nbgrader(tmp_path, "db", "student", "list").stdout
    assert all(sub in listed for sub, _ in PEOPLE.values()), listed


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


def test_a_replayed_launch_is_refused(lti_hub, browser):
    hub, base, names = lti_hub
    context, page = launch(browser, base, "fault-replay", "Learner")
    try:
        page.wait_for_url(re.compile(rf"/user/{names['replay']}/|/hub/"), timeout=180_000)
    finally:
        context.close()
    other = browser.new_context()                         # the same token and state, posted again
    try:
        page = other.new_page()
        page.goto(f"{base}/replay")
        page.wait_for_url(re.compile(r"/hub/lti13/oauth_callback"), timeout=60_000)
        text = page.inner_text("body")
        assert "400" in text and ("state" in text.lower() or "nonce" in text.lower()), text[:500]
    finally:
        other.close()
