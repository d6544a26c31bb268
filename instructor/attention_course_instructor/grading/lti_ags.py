"""Grades back to the LMS by LTI Advantage's Assignment and Grade Services (AGS 2.0).

    python -m attention_course_instructor.grading.lti_ags --platform platform.json lab8 lab12

For each lab, the course's line item in the LMS gradebook (found by the lab's name as its
``resourceId`` in the course's whole listing, page after page; else created with the lab's
maximum score), then one score per student whose lab is graded in full: the lab's total as the
LMS exports hold it (:func:`~attention_course_instructor.grading.lms_export.lab_result`: automatic
plus manual, less the late penalty), as ``FullyGraded``. A lab whose written answers still wait
for a grader is never sent as a grade: it is listed, or with ``--send-pending`` sent as
``PendingManual`` with no score (Canvas and Moodle then show it handed in and not yet graded). A
student is named to the LMS by nbgrader's ``lms_user_id``; one without it, or who submitted
nothing, is listed and skipped. Sending the same lab again updates its scores; it never adds a
second column.

Every request is tried again when the LMS is briefly unavailable (HTTP 429, 502, 503, 504, or no
connection), four tries in all, waiting as the LMS asks (``Retry-After``); an access token the LMS
has ended is replaced once. A score the LMS refuses (a user who is not a learner of the course,
say) is reported and the others are still sent; anything else it refuses ends the run with its
answer. Each run writes what it did for every student and lab to a CSV report
(``reports/lms/passback-<time>.csv`` in the course folder, or ``--report``); the command exits 3
when the LMS refused a score, 1 when the run could not finish.

The tool (this course) signs in with OAuth 2.0 client credentials, a JWT signed with its own RSA
key (LTI's security framework); ``platform.json`` holds the platform's values, as the LMS shows
them when the tool is registered:

    {"issuer": "https://canvas.instructure.com", "client_id": "10000000000042",
     "deployment_id": "1:abc", "token_url": "https://sso.canvaslms.com/login/oauth2/token",
     "lineitems": "https://school.instructure.com/api/lti/courses/7/line_items",
     "private_key": "tool-key.pem", "key_id": "course-tool-1"}

``lineitems`` is the course's line-item container exactly as the AGS claim of a launch from the
course gives it (Moodle's ends in ``?type_id=N``, which every request keeps); ``private_key`` is
the tool's key, whose public half the LMS was given (a path relative to the file).
"""
from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
import uuid
from dataclasses import asdict, dataclass, fields
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests

SCOPES = ("https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
          "https://purl.imsglobal.org/spec/lti-ags/scope/score")
LINE_ITEM = "application/vnd.ims.lis.v2.lineitem+json"
LINE_ITEMS = "application/vnd.ims.lis.v2.lineitemcontainer+json"
SCORE = "application/vnd.ims.lis.v1.score+json"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TIMEOUT = 30
TRIES = 4                                  # tries of one request in all
TRANSIENT = {429, 502, 503, 504}           # answers that say "try again later"
LONGEST_WAIT = 30.0                        # seconds, whatever Retry-After asks
REFUSED_SCORE = {400, 409, 422}            # a refusal of one score, not of the run
PLATFORM_KEYS = ("issuer", "client_id", "deployment_id", "token_url", "lineitems", "private_key",
                 "key_id")


class PassbackError(RuntimeError):
    """The run cannot go on; the message says which request and what the LMS answered."""


class LmsRefused(PassbackError):
    """The LMS answered a request with an error status."""

    def __init__(self, what: str, answer: requests.Response):
        self.status = answer.status_code
        super().__init__(f"the LMS refused {what}: HTTP {answer.status_code}: {answer.text[:300]}")


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
class Outcome:
    """What a run did with one student's lab: a row of the report."""

    lab: str
    student: str
    lms_user_id: str
    outcome: str                       # "sent", "not sent" or "refused"
    score: str = ""
    maximum: str = ""
    grading_progress: str = ""
    detail: str = ""
    line_item: str = ""
    time: str = ""


def scores_url(line_item: str) -> str:
    """The scores endpoint of a line item (AGS 2.0): its URL's path with ``/scores`` added, the
    query kept (Moodle's ``?type_id=N``)."""
    parts = urlsplit(line_item)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def next_page(link: str) -> str | None:
    """The ``rel="next"`` address of a ``Link`` header (Moodle writes the quotes as “ ”), or None."""
    for part in link.split(","):
        match = re.fullmatch(r'\s*<([^>]*)>\s*;(?:.*;)?\s*rel\s*=\s*["“”]?next["“”]?\s*(?:;.*)?', part)
        if match:
            return match[1]
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class AgsClient:
    """One session with the platform's AGS endpoints."""

    def __init__(self, platform: Platform, session: requests.Session | None = None, sleep=time.sleep):
        self.platform, self.http, self.sleep = platform, session or requests.Session(), sleep
        self._token: str | None = None
        self._token_ends = 0.0
        self._items: list | None = None

    # -- requests -----------------------------------------------------------------------------
    def exchange(self, what: str, method: str, url: str, authorised: bool = True,
                 headers: dict | None = None, **options) -> requests.Response:
        """One request, tried again while the LMS is briefly unavailable; with ``authorised``, the
        access token is sent and, should the LMS have ended it, replaced once. Raises
        :class:`LmsRefused` for an error answer, :class:`PassbackError` when all tries failed."""
        renewed, last = False, ""
        tries = 0
        while tries < TRIES:
            tries += 1
            sent = dict(headers or {})
            if authorised:
                sent["Authorization"] = f"Bearer {self.token()}"
            try:
                answer = self.http.request(method, url, headers=sent, timeout=TIMEOUT, **options)
            except (requests.ConnectionError, requests.Timeout) as error:
                last = f"could not reach the LMS at {url} ({type(error).__name__})"
                self._wait(tries, None)
                continue
            if answer.status_code == 401 and authorised and not renewed:
                renewed, tries = True, tries - 1       # the token was ended: a new one, same try
                self._token = None
                continue
            if answer.status_code in TRANSIENT:
                last = f"HTTP {answer.status_code}: {answer.text[:200]}"
                self._wait(tries, answer.headers.get("Retry-After"))
                continue
            if answer.status_code >= 300:
                raise LmsRefused(what, answer)
            return answer
        raise PassbackError(f"the LMS did not answer {what} after {TRIES} tries: {last}")

    def _wait(self, tries: int, retry_after: str | None) -> None:
        if tries >= TRIES:
            return
        try:
            seconds = float(retry_after) if retry_after is not None else 2.0 ** (tries - 1)
        except ValueError:                               # an HTTP date: the default wait
            seconds = 2.0 ** (tries - 1)
        self.sleep(min(max(seconds, 0.0), LONGEST_WAIT))

    def token(self) -> str:
        """An access token for the AGS scopes, by the client-credentials grant with a signed JWT;
        a new one a minute before the last one ends."""
        import jwt

        if self._token is None or time.time() > self._token_ends - 60:
            now = int(time.time())
            assertion = jwt.encode(
                {"iss": self.platform.client_id, "sub": self.platform.client_id,
                 "aud": self.platform.token_url, "iat": now, "exp": now + 300,
                 "jti": uuid.uuid4().hex},
                self.platform.private_key, algorithm="RS256", headers={"kid": self.platform.key_id})
            answer = self.exchange("the access token", "POST", self.platform.token_url, authorised=False,
                                   data={"grant_type": "client_credentials",
                                         "client_assertion_type": ASSERTION_TYPE,
                                         "client_assertion": assertion, "scope": " ".join(SCOPES)})
            granted = answer.json()
            self._token = granted["access_token"]
            self._token_ends = time.time() + float(granted.get("expires_in", 3600))
        return self._token

    # -- line items and scores -------------------------------------------------------------------
    def line_items(self) -> list[dict]:
        """Every line item of the course, following the listing's pages (read once a run)."""
        if self._items is None:
            items, url, seen = [], self.platform.lineitems, set()
            while url:
                if url in seen:
                    raise PassbackError(f"the LMS's listing of line items leads back to {url}")
                seen.add(url)
                answer = self.exchange("the course's line items", "GET", url, headers={"Accept": LINE_ITEMS})
                items += answer.json()
                url = next_page(answer.headers.get("Link", ""))
            self._items = items
        return self._items

    def line_item(self, lab: str, label: str, maximum: float) -> str:
        """The URL of the lab's line item (``resourceId`` = the lab), created if missing; its
        maximum and label are updated if they changed. Two items for one lab are refused."""
        found = [item for item in self.line_items() if item.get("resourceId") == lab]
        if len(found) > 1:
            raise PassbackError(f"the LMS has {len(found)} line items for {lab}: "
                                f"{', '.join(i['id'] for i in found)}; delete all but one in its gradebook")
        body = {"label": label, "scoreMaximum": maximum, "resourceId": lab, "tag": "nbgrader"}
        kinds = {"Accept": LINE_ITEM, "Content-Type": LINE_ITEM}
        if found:
            item = found[0]
            if item.get("scoreMaximum") != maximum or item.get("label") != label:
                self.exchange(f"the line item of {lab}", "PUT", item["id"], headers=kinds, json={**item, **body})
            return item["id"]
        created = self.exchange(f"a new line item for {lab}", "POST", self.platform.lineitems,
                                headers=kinds, json=body).json()
        self._items.append(created)
        return created["id"]

    def score(self, line_item: str, user: str, given: float | None, maximum: float) -> str:
        """Publish one student's result on a line item: ``given`` as a grade in full, or, when it
        is None, the work as handed in and waiting for a grader (no score). Returns the
        ``gradingProgress`` sent."""
        body = {"userId": user, "timestamp": _now()}
        if given is None:
            body |= {"activityProgress": "Submitted", "gradingProgress": "PendingManual"}
        else:
            body |= {"scoreGiven": given, "scoreMaximum": maximum, "activityProgress": "Completed",
                     "gradingProgress": "FullyGraded"}
        self.exchange(f"the score of {user}", "POST", scores_url(line_item),
                      headers={"Accept": "application/json", "Content-Type": SCORE}, json=body)
        return body["gradingProgress"]


def passback(db_url: str, labs: list[str], client: AgsClient, titles: dict | None = None,
             send_pending: bool = False, done: list | None = None) -> list[Outcome]:
    """Send every lab in ``labs`` (all of the gradebook's when empty) to the LMS; returns what was
    done for every student and lab, also appended to ``done`` as it goes (so that a run that
    stops part way still says what it sent)."""
    from nbgrader.api import Gradebook

    from attention_course_instructor.grading.lms_export import lab_result

    done = [] if done is None else done
    with Gradebook(db_url) as gb:
        chosen = [a for a in gb.assignments if not labs or a.name in labs]
        unknown = set(labs) - {a.name for a in chosen}
        if unknown:
            raise ValueError(f"not in the gradebook: {', '.join(sorted(unknown))}")
        for lab in chosen:
            item = client.line_item(lab.name, (titles or {}).get(lab.name, lab.name), lab.max_score)
            for student in sorted(gb.students, key=lambda s: s.id):
                result = lab_result(gb, lab.name, student.id)
                done.append(_send_one(client, item, lab, student, result, send_pending))
    return done


def passback_student(db_url: str, lab: str, student_id: str, client: AgsClient) -> Outcome:
    """One student's total of one lab to the LMS (after a regrade): as :func:`passback` sends it."""
    from nbgrader.api import Gradebook

    from attention_course_instructor.grading.lms_export import lab_result

    with Gradebook(db_url) as gb:
        assignment, student = gb.find_assignment(lab), gb.find_student(student_id)
        item = client.line_item(assignment.name, assignment.name, assignment.max_score)
        return _send_one(client, item, assignment, student, lab_result(gb, lab, student_id), False)


def _send_one(client: AgsClient, item: str, lab, student, result, send_pending: bool) -> Outcome:
    row = Outcome(lab.name, student.id, student.lms_user_id or "", "not sent", line_item=item, time=_now())
    if result.score is None:
        return _with(row, detail="nothing submitted")
    if not student.lms_user_id:
        return _with(row, detail="no LMS user id in the gradebook")
    if result.pending and not send_pending:
        return _with(row, detail=f"written answers still to be graded: {', '.join(result.pending)}")
    given = result.score if result.final else None
    try:
        progress = client.score(item, student.lms_user_id, given, lab.max_score)
    except LmsRefused as refusal:
        if refusal.status not in REFUSED_SCORE:
            raise
        return _with(row, outcome="refused", detail=str(refusal).replace(f"the score of {student.lms_user_id}",
                                                                         "it", 1))
    sent = _with(row, outcome="sent", maximum=f"{lab.max_score:g}", grading_progress=progress)
    if given is None:
        return _with(sent, detail=f"pending: written answers still to be graded: {', '.join(result.pending)}")
    return _with(sent, score=f"{given:g}")


def _with(row: Outcome, **changes) -> Outcome:
    return Outcome(**(asdict(row) | changes))


def write_report(path: Path, done: list[Outcome]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[f.name for f in fields(Outcome)])
        writer.writeheader()
        writer.writerows(asdict(row) for row in done)


def summary(done: list[Outcome]) -> list[str]:
    """The lines the command prints: per lab, what was sent, then each student not sent."""
    lines = []
    for lab in dict.fromkeys(row.lab for row in done):
        rows = [row for row in done if row.lab == lab]
        sent = [row for row in rows if row.outcome == "sent"]
        lines.append(f"{lab}: {len(sent)} result(s) sent to {rows[0].line_item}")
        for row in rows:
            if row.outcome == "refused":
                lines.append(f"  {row.student}: refused by the LMS: {row.detail.removeprefix('the LMS refused it: ')}")
            elif row.outcome == "not sent":
                lines.append(f"  {row.student}: not sent ({row.detail})")
            elif row.grading_progress != "FullyGraded":
                lines.append(f"  {row.student}: sent as {row.grading_progress}, no score ({row.detail})")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labs", nargs="*", help="the labs to send (default: every lab)")
    parser.add_argument("--platform", type=Path, required=True, help="the platform's values (JSON)")
    parser.add_argument("--course", type=Path, default=Path.cwd(), help="the course directory")
    parser.add_argument("--send-pending", action="store_true",
                        help="send a lab whose written answers wait for a grader as PendingManual, "
                             "with no score (default: leave it out)")
    parser.add_argument("--report", type=Path, default=None,
                        help="the CSV of what was done (default: reports/lms/passback-<time>.csv)")
    args = parser.parse_args(argv)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    report = args.report or args.course / "reports" / "lms" / f"passback-{stamp}.csv"
    done: list[Outcome] = []
    try:
        client = AgsClient(Platform.from_file(args.platform))
        passback(f"sqlite:///{args.course / 'gradebook.db'}", args.labs, client,
                 send_pending=args.send_pending, done=done)
    except (ValueError, OSError, PassbackError) as error:
        if done:
            write_report(report, done)
            print("\n".join(summary(done)))
            print(f"what was done before it stopped: {report}")
        sys.exit(str(error))
    write_report(report, done)
    print("\n".join(summary(done)))
    print(f"report: {report}")
    if any(row.outcome == "refused" for row in done):
        sys.exit(3)


if __name__ == "__main__":
    main()
