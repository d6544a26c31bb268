"""LTI 1.3 login for the course hub: students and staff arrive from the LMS, already signed in.

Selected with ``COURSE_HUB_AUTH=lti13``; ``COURSE_LTI_PLATFORM`` names one JSON file of the
platform's values, as the LMS shows them when the hub is registered as a tool:

    {"issuer": "https://canvas.instructure.com", "client_id": "10000000000042",
     "deployment_id": "1:abc", "authorize_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
     "jwks_endpoint": "https://sso.canvaslms.com/api/lti/security/jwks"}

(the same file :mod:`attention_course_instructor.grading.lti_ags` reads, where it also holds the
grade services' values). The OpenID Connect launch, the signature, the audience, the expiry and
the nonce are checked by ``jupyterhub-ltiauthenticator``; this module adds what the course needs:

- **the deployment**: a launch from another deployment of the tool is refused;
- **the role decides the group**: Instructor and TeachingAssistant (LTI's membership roles) join
  the formgrader group, Learner the students' group; a launch with no such role is refused;
- **a username that is stable and safe**: ``lti-`` and 16 hex digits of a digest of the
  platform's issuer and the user's ``sub`` (LTI's opaque, permanent user id), never a name or
  an e-mail address a person can change or choose. The LMS's own id stays in the hub's
  ``auth_state`` and is what the LMS exports name the student by;
- **a system account on first launch** (``LocalAuthenticator.create_system_users``), with a
  private home, as ``course.py`` makes them;
- **the class list the LMS gave**: every launch updates ``roster_file``, a CSV in the columns of
  ``nbgrader db student import`` (``id``, ``first_name``, ``last_name``, ``email``,
  ``lms_user_id``: the LTI ``sub``, which the grade passback names each student by).
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

from jupyterhub.auth import LocalAuthenticator
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import LoginError
from traitlets import Unicode

ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
TEACHING = {f"{MEMBERSHIP}#Instructor", f"{MEMBERSHIP}/Instructor#TeachingAssistant",
            f"{MEMBERSHIP}#TeachingAssistant"}
LEARNING = {f"{MEMBERSHIP}#Learner", f"{MEMBERSHIP}/Learner#Learner"}
LOGIN_KEYS = ("issuer", "client_id", "deployment_id", "authorize_url", "jwks_endpoint")
ROSTER_COLUMNS = ("id", "first_name", "last_name", "email", "lms_user_id")
_roster_lock = threading.Lock()


def platform_settings(path: Path) -> dict:
    """The platform's values for the login, from the JSON file; a missing one is named."""
    values = json.loads(Path(path).read_text())
    missing = [key for key in LOGIN_KEYS if not values.get(key)]
    if missing:
        raise ValueError(f"{path}: the LTI 1.3 login needs {', '.join(missing)}")
    return values


def username_for(issuer: str, subject: str) -> str:
    """The hub (and system) username of the platform's user ``subject``: stable, 20 characters,
    lower-case letters, digits and a hyphen."""
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()
    return f"lti-{digest[:16]}"


def course_role(roles) -> str:
    """"instructor" or "student" from a launch's LTI roles; LoginError when it has neither."""
    roles = set(roles or [])
    if roles & TEACHING:
        return "instructor"
    if roles & LEARNING:
        return "student"
    raise LoginError("this LMS role may not use the course hub: the launch must come from an "
                     "Instructor, TeachingAssistant or Learner of the course")


def record_person(roster: Path, name: str, claims: dict) -> None:
    """Add or update ``name``'s row of the roster CSV from a launch's claims (written whole, then
    renamed into place: a reader never sees half a file; readable by its owner and group only)."""
    row = {"id": name, "first_name": claims.get("given_name", ""),
           "last_name": claims.get("family_name", ""), "email": claims.get("email", ""),
           "lms_user_id": claims["sub"]}
    with _roster_lock:
        rows = {}
        if roster.exists():
            with open(roster, newline="") as handle:
                rows = {r["id"]: r for r in csv.DictReader(handle)}
        rows[name] = row
        roster.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile("w", newline="", dir=roster.parent, delete=False)
        with handle:
            writer = csv.DictWriter(handle, fieldnames=ROSTER_COLUMNS)
            writer.writeheader()
            writer.writerows(rows[key] for key in sorted(rows))
        os.chmod(handle.name, 0o640)
        os.replace(handle.name, roster)


class CourseLTI13Authenticator(LTI13Authenticator, LocalAuthenticator):
    """LTI 1.3 launches from one deployment, roles as groups, an account made on first launch."""

    deployment_id = Unicode(config=True, help="the tool's deployment id in the LMS")
    instructors_group = Unicode("formgrade", config=True)
    students_group = Unicode("nbgrader", config=True)
    roster_file = Unicode("", config=True, help="the CSV every launch updates (see the module)")

    async def authenticate(self, handler, data=None):
        data = data or {}
        if data.get(DEPLOYMENT) != self.deployment_id:
            raise LoginError(f"this launch is for deployment {data.get(DEPLOYMENT)!r}, not the "
                             "course hub's: register the hub in this course of the LMS first")
        if not data.get("sub"):
            raise LoginError("an anonymous launch (no 'sub' claim) cannot open a course server")
        role = course_role(data.get(ROLES))
        group = self.instructors_group if role == "instructor" else self.students_group
        name = username_for(data["iss"], data["sub"])
        if self.roster_file:
            record_person(Path(self.roster_file), name, data)
        return {"name": name, "groups": [group], "auth_state": data}
