"""Grades back to the LMS by LTI Advantage's Assignment and Grade Services (AGS 2.0).

    python -m attention_course_instructor.grading.lti_ags --platform platform.json lab8 lab12

For each lab, the course's line item in the LMS gradebook (found by the lab's name as its
``resourceId``, else created with the lab's maximum score), then one score per student: the
lab's total as the LMS exports hold it (:func:`~attention_course_instructor.grading.lms_export.lab_total`:
automatic plus manual, less the late penalty). A student is named to the LMS by nbgrader's
``lms_user_id`` (the LTI ``sub`` of that student); one without it, or who submitted nothing, is
listed and skipped. Sending the same lab again updates its scores; it never adds a second column.

The tool (this course) signs in with OAuth 2.0 client credentials, a JWT signed with its own RSA
key (LTI's security framework); ``platform.json`` holds the platform's values, as the LMS shows
them when the tool is registered:

    {"issuer": "https://canvas.instructure.com", "client_id": "10000000000042",
     "deployment_id": "1:abc", "token_url": "https://sso.canvaslms.com/login/oauth2/token",
     "lineitems": "https://school.instructure.com/api/lti/courses/7/line_items",
     "private_key": "tool-key.pem", "key_id": "course-tool-1"}

``lineitems`` is the course's line-item container (the AGS claim of any launch from the course);
``private_key`` is the tool's key, whose public half the LMS was given (a path relative to the file).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import requests

SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score")
LINE_ITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINE_ITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TIMEOUT = 30
PLATFORM_KEYS = ("issuer", "client_id", "deployment_id", "token_url", "lineitems", "private_key",
                 "key_id")


class PassbackError(RuntimeError):
    """The LMS refused a request; the message says which and what it answered."""


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    deployment_id: str
    token_url: str
    lineitems: str
    private_key: str                   # PEM text
    key_id: str

    @classmethod
    def from_file(cls, path: Path) -> "Platform":
        values = json.loads(Path(path).read_text())
        missing = [key for key in PLATFORM_KEYS if not values.get(key)]
        if missing:
            raise ValueError(f"{path}: the platform's values need {', '.join(missing)} "
                             f"(expected keys: {', '.join(PLATFORM_KEYS)})")
        key = Path(values["private_key"])
        key = key if key.is_absolute() else Path(path).parent / key
        return cls(**{**{k: values[k] for k in PLATFORM_KEYS}, "private_key": key.read_text()})


@dataclass(frozen=True)
class Sent:
    lab: str
    line_item: str
    scored: dict                       # student -> score sent
    skipped: dict                      # student -> why not


class AgsClient:
    """One session with the platform's AGS endpoints."""

    def __init__(self, platform: Platform, session: requests.Session | None = None):
        self.platform, self.http = platform, session or requests.Session()
        self._token = None

    def token(self) -> str:
        """An access token for the AGS scopes, by the client-credentials grant with a signed JWT."""
        import jwt

        if self._token is None:
            now = int(time.time())
            assertion = jwt.encode(
                {"iss": self.platform.client_id, "sub": self.platform.client_id,
                 "aud": self.platform.token_url, "iat": now, "exp": now + 300,
                 "jti": uuid.uuid4().hex},
                self.platform.private_key, algorithm="RS256", headers={"kid": self.platform.key_id})
            answer = self.http.post(self.platform.token_url, timeout=TIMEOUT, data={
                "grant_type": "client_credentials", "client_assertion_type": ASSERTION_TYPE,
                "client_assertion": assertion, "scope": " ".join(SCOPES)})
            self._check(answer, "the access token")
            self._token = answer.json()["access_token"]
        return self._token

    def _headers(self, accept: str, content: str | None = None) -> dict:
        headers = {"Authorization": f"Bearer {self.token()}", "Accept": accept}
        return headers | ({"Content-Type": content} if content else {})

    @staticmethod
    def _check(answer: requests.Response, what: str) -> None:
        if answer.status_code >= 300:
            raise PassbackError(f"the LMS refused {what}: HTTP {answer.status_code}: "
                                f"{answer.text[:300]}")

    def line_item(self, lab: str, label: str, maximum: float) -> str:
        """The URL of the lab's line item (``resourceId`` = the lab), created if missing; its
        maximum and label are updated if they changed."""
        answer = self.http.get(self.platform.lineitems, params={"resource_id": lab},
                               headers=self._headers(LINE_ITEMS), timeout=TIMEOUT)
        self._check(answer, f"the line items of {lab}")
        found = [item for item in answer.json() if item.get("resourceId") == lab]
        body = {"label": label, "scoreMaximum": maximum, "resourceId": lab, "tag": "nbgrader"}
        if found:
            item = found[0]
            if item.get("scoreMaximum") != maximum or item.get("label") != label:
                update = self.http.put(item["id"], json={**item, **body}, timeout=TIMEOUT,
                                       headers=self._headers(LINE_ITEM, LINE_ITEM))
                self._check(update, f"the line item of {lab}")
            return item["id"]
        created = self.http.post(self.platform.lineitems, json=body, timeout=TIMEOUT,
                                 headers=self._headers(LINE_ITEM, LINE_ITEM))
        self._check(created, f"a new line item for {lab}")
        return created.json()["id"]

    def score(self, line_item: str, user: str, given: float, maximum: float) -> None:
        """Publish one student's score on a line item (graded in full)."""
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        answer = self.http.post(line_item.split("?")[0].rstrip("/") + "/scores", timeout=TIMEOUT,
                                headers=self._headers("application/json", SCORE),
                                json={"userId": user, "scoreGiven": given, "scoreMaximum": maximum,
                                      "activityProgress": "Completed",
                                      "gradingProgress": "FullyGraded", "timestamp": stamp})
        self._check(answer, f"the score of {user}")


def passback(db_url: str, labs: list[str], client: AgsClient, titles: dict | None = None) -> list[Sent]:
    """Send every lab in ``labs`` (all of the gradebook's when empty) to the LMS."""
    from nbgrader.api import Gradebook

    from attention_course_instructor.grading.lms_export import lab_total

    sent = []
    with Gradebook(db_url) as gb:
        chosen = [a for a in gb.assignments if not labs or a.name in labs]
        unknown = set(labs) - {a.name for a in chosen}
        if unknown:
            raise ValueError(f"not in the gradebook: {', '.join(sorted(unknown))}")
        for lab in chosen:
            item = client.line_item(lab.name, (titles or {}).get(lab.name, lab.name), lab.max_score)
            scored, skipped = {}, {}
            for student in sorted(gb.students, key=lambda s: s.id):
                total = lab_total(gb, lab.name, student.id)
                if total is None:
                    skipped[student.id] = "nothing submitted"
                elif not student.lms_user_id:
                    skipped[student.id] = "no LMS user id in the gradebook"
                else:
                    client.score(item, student.lms_user_id, total, lab.max_score)
                    scored[student.id] = total
            sent.append(Sent(lab.name, item, scored, skipped))
    return sent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labs", nargs="*", help="the labs to send (default: every lab)")
    parser.add_argument("--platform", type=Path, required=True, help="the platform's values (JSON)")
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the course directory")
    args = parser.parse_args(argv)
    try:
        client = AgsClient(Platform.from_file(args.platform))
        sent = passback(f"sqlite:///{args.course / 'gradebook.db'}", args.labs, client)
    except (ValueError, FileNotFoundError, PassbackError) as error:
        sys.exit(str(error))
    for lab in sent:
        print(f"{lab.lab}: {len(lab.scored)} score(s) sent to {lab.line_item}")
        for student, why in lab.skipped.items():
            print(f"  {student}: not sent ({why})")


if __name__ == "__main__":
    main()
