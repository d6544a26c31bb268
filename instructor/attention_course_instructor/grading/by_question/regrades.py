"""Regrade requests, from the instructor's side: the class's queue as the course's submission
service keeps it (``deploy/hub/submissions.py``, ``regrades/<course>``), and an answer to one.

Resolving a request (:func:`resolve`) writes the new score into the gradebook (or keeps the old
one), records the answer with the service (the student sees it on their regrade page), generates
and releases that student's feedback again, and -- where the course sends grades to its LMS
(``COURSE_LMS_PLATFORM``: the platform file of ``grading.lti_ags``) -- sends the lab's new total.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tornado import httpclient


def service_url(course_id: str) -> str:
    """The queue's address, beside the submission API the hub gives servers."""
    api = os.environ.get("COURSE_SUBMISSIONS_URL", "")
    if not api:
        raise RuntimeError("no submission service here (COURSE_SUBMISSIONS_URL is not set): "
                           "regrade requests need the course hub")
    return api.rstrip("/").removesuffix("/api") + f"/regrades/{course_id}"


async def _call(method: str, url: str, body: dict | None = None) -> dict:
    request = httpclient.HTTPRequest(
        url, method=method, body=None if body is None else json.dumps(body), request_timeout=60,
        headers={"Authorization": f"token {os.environ.get('JUPYTERHUB_API_TOKEN', '')}",
                 "Content-Type": "application/json"})
    try:
        answer = await httpclient.AsyncHTTPClient().fetch(request)
    except httpclient.HTTPClientError as exc:
        why = exc.response.body.decode(errors="replace")[:500] if exc.response is not None else str(exc)
        raise RuntimeError(f"the submission service refused ({exc.code}): {why}") from None
    return json.loads(answer.body)


async def requests(course_id: str) -> list[dict]:
    """Every regrade request of the course, oldest first."""
    return (await _call("GET", service_url(course_id)))["requests"]


async def record_answer(course_id: str, request_id: str, reason: str, before, after) -> dict:
    return await _call("POST", f"{service_url(course_id)}/{request_id}",
                       {"reason": reason, "score_before": before, "score_after": after})


def refresh_feedback(root: Path, assignment: str, student: str) -> str:
    """The student's feedback generated and released again ("" when done, else what failed)."""
    for step in (["generate_feedback", "--force"], ["release_feedback"]):
        done = subprocess.run([sys.executable, "-m", "nbgrader", step[0], assignment, "--student", student,
                               *step[1:]],
                              cwd=root, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return f"nbgrader {step[0]} failed: {(done.stdout + done.stderr)[-800:]}"
    return ""


def send_to_lms(db_url: str, assignment: str, student: str) -> tuple[str, bool]:
    """The lab's new total for one student to the LMS, where the course has one: a sentence, and
    whether that step is finished (False: the LMS did not take the score -- it refused it, the
    gradebook cannot say whose it is, or the LMS could not be reached -- and the grade is in the
    gradebook only). Never raises: the score is written by then."""
    platform = os.environ.get("COURSE_LMS_PLATFORM", "")
    if not platform:
        return "no LMS is set for this course (COURSE_LMS_PLATFORM): send grades as the guide says", True
    from attention_course_instructor.grading.lti_ags import AgsClient, Platform, passback_student

    try:
        row = passback_student(db_url, assignment, student, AgsClient(Platform.from_file(Path(platform))))
    except Exception as exc:                       # unreachable, a broken platform file, ...
        return f"LMS: not sent ({type(exc).__name__}: {str(exc)[:300]})", False
    said = f"LMS: {row.outcome}" + (f", {row.score}" if row.score else "") + (f" ({row.detail})" if row.detail else "")
    return said, row.outcome == "sent"
