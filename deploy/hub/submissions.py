"""The course's submission service: it receives each submission, keeps it where no student can
write, and records when it arrived by this machine's clock.

Why. nbgrader's own exchange has every student write their submission into a shared folder, with
the time of submission as a file and a folder name *they* write: a student could backdate it, link
it to a file that is not theirs, or (on a cluster where the exchange is a shared volume) reach
into another student's. Here a student's server sends the files of the assignment over HTTP, with
its JupyterHub token; this service, running as an account of its own, asks the hub who the token
belongs to, stamps the submission with the time it arrived, keeps a copy and the SHA-256 of every
file in a folder only it can read (``COURSE_SUBMISSIONS``), and answers with that receipt. The
instructor's ``nbgrader collect`` fetches the copies and the times from it (the instructor
package's ``CourseCollect``); what the student's clock said is kept, for display and comparison.

Run by the hub as a managed service (``jupyterhub_config.py``), as the system account
``COURSE_EXCHANGE_USER`` that ``course.py setup`` makes. Its API, under
``/services/course-submissions/api/``:

    POST <course>/<assignment>              a member of the course's students' or instructors' group
         {"files": {"lab8.ipynb": base64, ...}, "secret": "...", "student_timestamp": "..."}
         -> 201 {"id", "student", "received", "files": {"lab8.ipynb": sha256, ...}}
    GET  <course>/<assignment>              instructors: every submission's receipt; others: their own
    GET  <course>/<assignment>/<student>/<id>   instructors: {"receipt": ..., "files": {name: base64}}

It also keeps the class's regrade requests, under ``/services/course-submissions/regrades/``: a
student asks from their feedback (the student page ``regrade_requests.py``), an instructor answers
from the grading page (the instructor package's ``grading.by_question``). Every step is kept with
the time this service received it and who sent it:

    POST <course>                 a student: {"assignment", "task", "reason"} -> 201 the request
    GET  <course>                 instructors: every request; students: their own
    POST <course>/<id>            instructors: {"reason", "score_before", "score_after"} -> the
                                  request, resolved (a later answer is kept too, as a new step)
"""
from __future__ import annotations

import base64
import binascii
import datetime
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import sys
import unicodedata
from pathlib import Path

from jupyterhub.services.auth import HubAuth, check_scopes
from jupyterhub.utils import url_path_join
from tornado import httpclient, ioloop, web

COURSE_ID = os.environ.get("COURSE_ID", "attention-and-transformers")
STORE = Path(os.environ.get("COURSE_SUBMISSIONS", "/srv/nbgrader/submissions"))
MAX_BYTES = int(os.environ.get("COURSE_SUBMISSION_MAX_MB", "64")) * 2 ** 20   # one submission
MAX_FILES = 200
MAX_REASON = 2000                                    # characters of a regrade request's reason
MAX_REQUESTS = 30                                    # regrade requests per student and course
INSTRUCTORS_GROUP = f"formgrade-{COURSE_ID}"
STUDENTS_GROUP = f"nbgrader-{COURSE_ID}"
TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f %Z"               # nbgrader's own format
NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,128}$")        # an assignment or a hub user name


class Refused(web.HTTPError):
    """A request refused, with the reason in the answer's body."""

    def __init__(self, status: int, reason: str):
        super().__init__(status, reason)
        self.why = reason


def safe_relative_path(name: str) -> str:
    """``name`` as a relative path inside a submission, or :class:`Refused` saying why not."""
    parts = name.split("/")
    if not name or len(name) > 512 or len(parts) > 8:
        raise Refused(400, f"a file name must be a relative path of up to 8 parts, not {name[:80]!r}")
    for part in parts:
        if part in ("", ".", "..") or len(part.encode()) > 255:
            raise Refused(400, f"a file name may not hold an empty, '.' or '..' part: {name[:80]!r}")
        if any(unicodedata.category(ch)[0] in "CZ" and ch != " " for ch in part):
            raise Refused(400, f"a file name may not hold control or invisible characters: {name[:80]!r}")
    return name


def receipt_time() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class Handler(web.RequestHandler):
    """Who is asking (from their hub token) and what they may do."""

    def initialize(self, hub_auth: HubAuth):
        self.hub_auth = hub_auth

    def write_error(self, status_code, **kwargs):
        exc = kwargs.get("exc_info", (None, None))[1]
        self.finish({"error": getattr(exc, "why", self._reason)})

    async def person(self) -> tuple[str, str]:
        """(name, role) of the token's owner: role is "instructor" or "student"."""
        header = self.request.headers.get("Authorization", "")
        token = header.split(None, 1)[1] if header.lower().startswith(("token ", "bearer ")) else ""
        if not token:
            raise Refused(401, "no JupyterHub token: submit from your course server")
        model = await self.hub_auth.user_for_token(token, sync=False)
        if not model or model.get("kind", "user") != "user":
            raise Refused(403, "this token is not a course member's")
        if not check_scopes(self.hub_auth.access_scopes, set(model.get("scopes", []))):
            raise Refused(403, "this token may not use the submission service")
        groups = await self.groups_of(model["name"])
        if INSTRUCTORS_GROUP in groups:
            return model["name"], "instructor"
        if STUDENTS_GROUP in groups:
            return model["name"], "student"
        raise Refused(403, f"{model['name']} is not in this course's groups")

    async def groups_of(self, name: str) -> set[str]:
        """The user's groups, asked of the hub with the service's own token (read:users:groups)."""
        url = url_path_join(self.hub_auth.api_url, "users", name)
        request = httpclient.HTTPRequest(url, headers={"Authorization": f"token {self.hub_auth.api_token}"},
                                         request_timeout=30)
        try:
            answer = await httpclient.AsyncHTTPClient().fetch(request)
        except httpclient.HTTPClientError as exc:
            raise Refused(503, f"the hub did not say who {name} is ({exc.code})") from None
        return set(json.loads(answer.body).get("groups") or [])

    def course_and_assignment(self, course: str, assignment: str) -> Path:
        if course != COURSE_ID:
            raise Refused(404, f"this service serves the course {COURSE_ID}, not {course[:80]!r}")
        if not NAME.match(assignment):
            raise Refused(400, f"not an assignment name: {assignment[:80]!r}")
        return STORE / course / assignment


class Submissions(Handler):

    async def post(self, course: str, assignment: str):
        folder = self.course_and_assignment(course, assignment)
        student, _ = await self.person()
        try:
            body = json.loads(self.request.body)
            files = dict(body["files"])
        except (ValueError, KeyError, TypeError):
            raise Refused(400, 'expected JSON {"files": {"name": base64, ...}, "secret": ..., '
                               '"student_timestamp": ...}') from None
        if not files or len(files) > MAX_FILES:
            raise Refused(400, f"a submission holds 1 to {MAX_FILES} files, not {len(files)}")
        decoded, total = {}, 0
        for name, data in files.items():
            name = safe_relative_path(str(name))
            try:
                decoded[name] = base64.b64decode(str(data), validate=True)
            except (binascii.Error, ValueError):
                raise Refused(400, f"{name}: not base64") from None
            total += len(decoded[name])
        if total > MAX_BYTES:
            raise Refused(413, f"a submission may hold {MAX_BYTES // 2 ** 20} MB, not {total / 2 ** 20:.1f} MB")
        received = receipt_time()
        receipt = {
            "id": received.strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(4),
            "course": course, "assignment": assignment, "student": student,
            "received": received.strftime(TIMESTAMP),
            "student_timestamp": str(body.get("student_timestamp", ""))[:64],
            "secret": str(body.get("secret", ""))[:256],
            "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(decoded.items())},
        }
        self.keep(folder / student, receipt, decoded)
        self.set_status(201)
        self.finish({k: receipt[k] for k in ("id", "student", "received", "files")})

    @staticmethod
    def keep(folder: Path, receipt: dict, files: dict[str, bytes]) -> None:
        """Write the copy beside its receipt, whole or not at all (a staging folder renamed)."""
        staging = folder / f".{receipt['id']}.partial"
        try:
            for name, data in files.items():
                target = staging / "files" / name
                target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                target.write_bytes(data)
            (staging / "receipt.json").write_text(json.dumps(receipt, indent=1))
            staging.rename(folder / receipt["id"])
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise

    async def get(self, course: str, assignment: str):
        folder = self.course_and_assignment(course, assignment)
        name, role = await self.person()
        receipts = []
        for student in sorted(folder.iterdir()) if folder.is_dir() else []:
            if role != "instructor" and student.name != name:
                continue
            for kept in sorted(student.iterdir()):
                if not kept.name.startswith("."):
                    receipt = json.loads((kept / "receipt.json").read_text())
                    receipt.pop("secret", None)
                    receipts.append(receipt)
        self.finish({"submissions": receipts})


class Submission(Handler):

    async def get(self, course: str, assignment: str, student: str, receipt_id: str):
        folder = self.course_and_assignment(course, assignment)
        _, role = await self.person()
        if role != "instructor":
            raise Refused(403, "only the course's instructors fetch submissions")
        if not (NAME.match(student) and re.fullmatch(r"[0-9TZ]+-[0-9a-f]{8}", receipt_id)):
            raise Refused(400, "not a submission's name")
        kept = folder / student / receipt_id
        if not kept.is_dir():
            raise Refused(404, f"no submission {receipt_id} of {student}")
        receipt = json.loads((kept / "receipt.json").read_text())
        files = {name: base64.b64encode((kept / "files" / name).read_bytes()).decode()
                 for name in receipt["files"]}
        self.finish({"receipt": receipt, "files": files})


class RegradeStore(Handler):
    """Where the course's regrade requests are kept: one JSON file each, only this service's."""

    def folder(self, course: str) -> Path:
        if course != COURSE_ID:
            raise Refused(404, f"this service serves the course {COURSE_ID}, not {course[:80]!r}")
        return STORE / ".regrades" / course

    @staticmethod
    def requests(folder: Path) -> list[dict]:
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    @staticmethod
    def keep(folder: Path, request: dict) -> None:
        """Write the request whole or not at all (a file renamed over the last)."""
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        staging = folder / f".{request['id']}.partial"
        staging.write_text(json.dumps(request, indent=1))
        staging.rename(folder / f"{request['id']}.json")


class RegradeRequests(RegradeStore):
    """A student's regrade requests: made with a reason, listed with every step since."""

    async def post(self, course: str):
        folder = self.folder(course)
        student, role = await self.person()
        if role != "student":
            raise Refused(403, "regrades are asked for by the course's students")
        try:
            body = json.loads(self.request.body)
            assignment, task, reason = (str(body[k]) for k in ("assignment", "task", "reason"))
        except (ValueError, KeyError, TypeError):
            raise Refused(400, 'expected JSON {"assignment": ..., "task": ..., "reason": ...}') from None
        if not (NAME.match(assignment) and NAME.match(task)):
            raise Refused(400, "assignment and task are names of letters, digits, '_', '.', '@', '-'")
        if not 1 <= len(reason.strip()) <= MAX_REASON:
            raise Refused(400, f"the reason is 1 to {MAX_REASON} characters, not {len(reason.strip())}")
        mine = [r for r in self.requests(folder) if r["student"] == student]
        if len(mine) >= MAX_REQUESTS:
            raise Refused(429, f"{MAX_REQUESTS} regrade requests is the most one student may make")
        if any(r["assignment"] == assignment and r["task"] == task and r["status"] == "open" for r in mine):
            raise Refused(409, f"your request about {task} of {assignment} is still open")
        now = receipt_time()
        request = {"id": now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(4),
                   "course": course, "assignment": assignment, "task": task, "student": student,
                   "status": "open", "reason": reason.strip(),
                   "history": [{"at": now.strftime(TIMESTAMP), "by": student, "what": "asked",
                                "reason": reason.strip()}]}
        self.keep(folder, request)
        self.set_status(201)
        self.finish(request)

    async def get(self, course: str):
        folder = self.folder(course)
        name, role = await self.person()
        self.finish({"requests": [r for r in self.requests(folder)
                                  if role == "instructor" or r["student"] == name]})


class RegradeRequest(RegradeStore):
    """An instructor's answer to one request."""

    async def post(self, course: str, request_id: str):
        folder = self.folder(course)
        instructor, role = await self.person()
        if role != "instructor":
            raise Refused(403, "only the course's instructors answer regrade requests")
        if not re.fullmatch(r"[0-9TZ]+-[0-9a-f]{8}", request_id) or not (folder / f"{request_id}.json").is_file():
            raise Refused(404, f"no regrade request {request_id[:40]!r}")
        try:
            body = json.loads(self.request.body)
            reason = str(body["reason"]).strip()
            before, after = (None if body.get(k) is None else float(body[k])
                             for k in ("score_before", "score_after"))
        except (ValueError, KeyError, TypeError):
            raise Refused(400, 'expected JSON {"reason": ..., "score_before": number, '
                               '"score_after": number}') from None
        if not 1 <= len(reason) <= MAX_REASON:
            raise Refused(400, f"the answer's reason is 1 to {MAX_REASON} characters, not {len(reason)}")
        request = json.loads((folder / f"{request_id}.json").read_text())
        request["status"] = "resolved"
        request["history"].append({"at": receipt_time().strftime(TIMESTAMP), "by": instructor,
                                   "what": "resolved", "reason": reason,
                                   "score_before": before, "score_after": after})
        self.keep(folder, request)
        self.finish(request)


def make_app() -> web.Application:
    hub_auth = HubAuth()
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "/services/course-submissions/")
    part = r"([^/]+)"
    return web.Application([
        (url_path_join(prefix, "api", part, part) + "/?", Submissions, {"hub_auth": hub_auth}),
        (url_path_join(prefix, "api", part, part, part, part) + "/?", Submission, {"hub_auth": hub_auth}),
        (url_path_join(prefix, "regrades", part) + "/?", RegradeRequests, {"hub_auth": hub_auth}),
        (url_path_join(prefix, "regrades", part, part) + "/?", RegradeRequest, {"hub_auth": hub_auth}),
    ], max_body_size=MAX_BYTES * 4 // 3 + 2 ** 20)


def main() -> int:
    os.umask(0o077)                                # nothing it writes is anyone else's to read
    STORE.mkdir(parents=True, exist_ok=True, mode=0o700)
    url = os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:8004")
    host, port = url.split("://", 1)[1].rstrip("/").rsplit(":", 1)
    make_app().listen(int(port), address=host, max_body_size=MAX_BYTES * 4 // 3 + 2 ** 20)
    print(f"course submissions: {STORE}, listening on {url}", file=sys.stderr, flush=True)
    loop = ioloop.IOLoop.current()
    # the hub stops a service with SIGINT, then SIGTERM; a process started in the background has
    # SIGINT ignored, and waiting out both timeouts made every hub's stop 20-30 s longer. asyncio's
    # own handler wakes the loop: a plain signal handler's add_callback, run on the loop's thread,
    # queued the stop without waking it, and the service slept on until the hub killed it (18 s)
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.asyncio_loop.add_signal_handler(number, loop.stop)
    loop.start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
