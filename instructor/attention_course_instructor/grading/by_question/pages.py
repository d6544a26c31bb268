"""The grading pages an instructor's server serves beside formgrader, under ``<server>/course-grading``.

- ``/course-grading`` -- every question graded by hand (how many answers, how many graded) and
  the class's regrade requests, each with a form to answer it;
- ``/course-grading/<lab>/<notebook>/<grade_id>`` -- one question: its rubric, then every answer
  under a token, never a name, in the question's shuffled order, each with the rubric's items to
  tick, a note, and *Apply*;
- ``POST`` to a question's ``/<token>``: the items applied (score and comment into the gradebook),
  unless the answer's grade changed after the page was drawn (409: nothing written, the page
  says who changed it, repeats what was sent, and links back to the answer with it filled in:
  ``?resume=<token>&was=<state>&item=...&score=...&note=...``, read by the page, never written,
  and filled in only while the grade is still the one the refusal showed);
  ``POST`` to ``/course-grading/regrades/<id>``: a request answered (a new score refused the same
  way when the grade changed after the list was drawn; ``/course-grading?resume=<id>&...`` fills
  that request's form in again).

What a student wrote is shown as text (escaped, never as HTML); forms carry Jupyter's XSRF token.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlencode

import jinja2
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

from attention_course_instructor.grading.by_question import answers as A
from attention_course_instructor.grading.by_question import regrades as R
from attention_course_instructor.grading.rubric import RubricError

PREFIX = "course-grading"
TEMPLATES = Path(__file__).with_name("templates")
ENV = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)


class GradingPage(JupyterHandler):
    """What every page needs: the course folder formgrader uses, and the page's layout."""

    @property
    def coursedir(self):
        formgrader = self.settings.get("nbgrader_formgrader")
        if formgrader is None:
            raise web.HTTPError(503, "the grading pages need nbgrader's formgrader on this server")
        return formgrader.coursedir

    @property
    def db_url(self) -> str:
        return self.coursedir.db_url

    @property
    def home(self) -> str:
        return url_path_join(self.base_url, PREFIX)

    def apply(self, q: A.Question, student: str, score: float, comment: str | None, **how) -> None:
        """``score`` (and ``comment``) into the gradebook, then formgrader told (see
        :func:`formgrader_forgets_what_it_read`)."""
        A.apply(self.coursedir, self.db_url, q, student, score, comment, self.current_user.username,
                **how)
        formgrader_forgets_what_it_read(self.settings)

    def write_error(self, status_code: int, **kwargs) -> None:
        """A refusal says why, on a page of its own (nothing was written)."""
        exc = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(exc, "log_message", None) or self._reason
        self.show("problem.html", message=message)

    def sent_back(self, key: str) -> dict | None:
        """What a refused form sent, as its refusal's link gives it back (``resume`` names the
        answer's token or the request's id), to fill that one form in again; None without one.
        Only shown in the form (escaped) and sent again by the grader: nothing is written here."""
        resume = self.get_argument("resume", "")
        if not resume:
            return None
        score = self.get_argument("score", "").strip()
        try:
            score = f"{float(score):g}" if score else ""
        except ValueError:
            score = ""
        return {"id": resume, "was": self.get_argument("was", ""), "items": self.get_arguments("item"),
                "score": score, "text": self.get_argument(key, "")}

    async def index(self, done: str = "", unfinished: str = "", resume: dict | None = None) -> None:
        """The questions and the queue; ``done``: what this request did, ``unfinished``: what it
        could not (never read from the URL); ``resume``: a refused resolution's form, given back."""
        found = A.questions(self.coursedir, self.db_url)
        counts = {q.path: A.progress(self.db_url, q) for q in found}
        queue, trouble = [], ""
        try:
            queue = await R.requests(self.coursedir.course_id)
        except RuntimeError as exc:
            trouble = str(exc)
        every = {(q.assignment, q.grade_id): q for q in A.questions(self.coursedir, self.db_url, by_hand=False)}
        tasks = {r["id"]: every.get((r["assignment"], r["task"])) for r in queue}
        now = {r["id"]: A.grade_now(self.db_url, tasks[r["id"]], r["student"]) for r in queue
               if r["status"] == "open" and tasks[r["id"]] is not None}
        self.show("questions.html", questions=found, counts=counts, queue=queue, tasks=tasks,
                  now=now, trouble=trouble, done=done, unfinished=unfinished, resume=resume)

    def refuse(self, exc: Exception, again: str, sent: list[str], again_text: str = "") -> None:
        """A form refused because the grade changed after it was drawn: 409, the reason, what was
        sent (none of it written) and a link back to the form with it filled in."""
        self.set_status(409)
        self.show("problem.html", message=str(exc), again=again, sent=sent, again_text=again_text)

    def show(self, template: str, **context) -> None:
        # never kept by the browser: going Back shows the grades as they are now, not a page
        # that says a grade is current after it changed (or that an Apply is still to do)
        self.set_header("Cache-Control", "no-store")
        self.finish(ENV.get_template(template).render(
            home=self.home, formgrader=url_path_join(self.base_url, "formgrader"),
            xsrf=self.xsrf_form_html(), **context))


def applied_items(root: Path, q: A.Question, given: list[A.Answer]) -> dict[str, dict]:
    """student -> the log's last line for their answer to ``q`` (its rubric items and note), where
    that line still describes the grade (a later edit in formgrader leaves it out: its items would
    be ticked against another score). A line written before the log held states counts."""
    states = {a.student: a.state for a in given}
    return {student: entry for student, entry in A.last_lines(root, q).items()
            if entry.get("state", states.get(student)) == states.get(student)}


# the longest query a refusal's link carries: a longer one (a very long note) could pass the
# proxy's limit on a request's headers (configurable-http-proxy's Node: 16 KB, cookies included)
LINK_QUERY_CHARS = 6000


def what_was_sent(q: A.Question, items: tuple[str, ...], score: str, text: tuple[str, str],
                  gave: float, carried: bool = True) -> list[str]:
    """A refused form's entries, in words: the rubric items ticked, the score typed, the text
    written (``text``: its label and value; ``carried``: whether the link fills it in) and the
    score they give (``gave``)."""
    sent = []
    if items and q.rubric is not None:
        known = {item.id: item for item in q.rubric.items}
        sent.append("items ticked: " + "; ".join(f"“{known[i].comment}” ({known[i].points:+g})"
                                                for i in items if i in known))
    if score.strip():
        sent.append(f"score: {score.strip()}")
    if text[1].strip():
        sent.append(f"{text[0]}: “{text[1].strip()}”" + ("" if carried else
                    " (too long for the link to fill in: copy it from here)"))
    if not items and q.rubric is not None and not score.strip():
        sent.append(f"no item ticked ({q.rubric.grading} grading)")
    return sent + [f"the score it gives: {gave:g} of {q.max_points:g}"]


def resume_link(page: str, resume: str, was: str, anchor: str, items: tuple[str, ...], score: str,
                text: tuple[str, str]) -> tuple[str, bool]:
    """``page`` with a refused form's entries in its query (see :meth:`GradingPage.sent_back`),
    and whether the text is among them: one too long for :data:`LINK_QUERY_CHARS` is left out.
    ``was``: the grade's state the refusal showed (once it changes, nothing is filled in)."""
    query = [("resume", resume), ("was", was), *[("item", item) for item in items],
             ("score", score.strip())]
    carried = len(urlencode(query + [text])) <= LINK_QUERY_CHARS
    return f"{page}?{urlencode(query + [text] if carried else query)}#{anchor}", carried


class Questions(GradingPage):

    @web.authenticated
    async def get(self):
        await self.index(resume=self.sent_back("reason"))


class OneQuestion(GradingPage):

    def find(self, assignment: str, notebook: str, grade_id: str) -> A.Question:
        try:
            return A.question(self.coursedir, self.db_url, assignment, notebook, grade_id)
        except KeyError as exc:
            raise web.HTTPError(404, str(exc)) from None

    @web.authenticated
    def get(self, assignment: str, notebook: str, grade_id: str, token: str | None = None):
        q = self.find(assignment, notebook, grade_id)
        given = A.answers(self.coursedir, self.db_url, q)
        applied = applied_items(Path(self.coursedir.root), q, given)
        self.show("question.html", q=q, answers=given, applied=applied,
                  action=url_path_join(self.home, q.path), resume=self.sent_back("note"),
                  applied_now=self.get_argument("applied", ""))

    @web.authenticated
    def post(self, assignment: str, notebook: str, grade_id: str, token: str | None = None):
        q = self.find(assignment, notebook, grade_id)
        answer = next((a for a in A.answers(self.coursedir, self.db_url, q) if a.token == token), None)
        if answer is None:
            raise web.HTTPError(404, f"no answer {token} to {q.grade_id}")
        chosen = tuple(self.get_arguments("item"))
        note, typed = self.get_argument("note", ""), self.get_argument("score", "")
        seen = self.get_argument("seen", "")
        page = url_path_join(self.home, q.path)
        if not seen:
            raise web.HTTPError(400, "the form does not say which grade it was filled in against "
                                     "(the question's page sends it): open the question again")
        try:
            score, comment = chosen_score(q, chosen, note, typed)
        except (RubricError, ValueError) as exc:
            raise web.HTTPError(400, str(exc)) from None
        try:
            self.apply(q, answer.student, score, comment, items=chosen, seen=seen, note=note.strip())
        except A.GradedMeanwhile as exc:
            link, carried = resume_link(page, token, answer.state, f"answer-{token}", chosen, typed,
                                        ("note", note))
            self.refuse(exc, link, what_was_sent(q, chosen, typed, ("note", note), score, carried))
            return
        self.redirect(f"{page}?applied={token}#answer-{token}")


def chosen_score(q: A.Question, chosen: tuple[str, ...], note: str, typed: str) -> tuple[float, str]:
    """The score and comment a form gives: the rubric's, where items are ticked; else the typed
    score, with the note as the comment."""
    if chosen:
        if q.rubric is None:
            raise ValueError(f"{q.grade_id} has no rubric")
        return q.rubric.score(chosen), q.rubric.comment(chosen, note)
    if typed.strip():
        return float(typed), note.strip()
    if q.rubric is not None and q.rubric.grading == "negative":
        return q.max_points, note.strip()             # nothing taken off: full marks
    raise ValueError(f"tick the rubric's items or type a score from 0 to {q.max_points:g}"
                     if q.rubric is not None else f"type a score from 0 to {q.max_points:g}")


class AnswerRegrade(GradingPage):

    @web.authenticated
    async def post(self, request_id: str):
        course = self.coursedir.course_id
        request = next((r for r in await R.requests(course) if r["id"] == request_id), None)
        if request is None:
            raise web.HTTPError(404, f"no regrade request {request_id}")
        try:
            q = A.question(self.coursedir, self.db_url, request["assignment"], None, request["task"],
                           by_hand=False)
        except KeyError:
            q = None                       # a task the lab does not have: it can only be answered
        reason = self.get_argument("reason", "").strip()
        if not reason:
            raise web.HTTPError(400, "say why: the student reads the reason with the answer")
        chosen, typed = tuple(self.get_arguments("item")), self.get_argument("score", "")
        if q is None:
            if chosen or typed.strip():
                raise web.HTTPError(400, f"{request['assignment']} has no graded task {request['task']}: "
                                         "answer it without a score")
            await R.record_answer(course, request_id, reason, None, None)
            await self.index(done=f"answered {request['student']}")
            return
        now = A.grade_now(self.db_url, q, request["student"])
        if now is None:
            raise web.HTTPError(400, f"{request['student']} has no grade for {q.grade_id} in the "
                                     "gradebook: grade their submission first")
        before = now[0]
        after = before
        if chosen or typed.strip():
            try:
                after, comment = chosen_score(q, chosen, "", typed)
            except (RubricError, ValueError) as exc:
                raise web.HTTPError(400, str(exc)) from None
            try:
                self.apply(q, request["student"], after, comment if chosen else None,
                           why=f"regrade {request_id}: {reason}", items=chosen,
                           seen=self.get_argument("seen", "") or None)
            except A.GradedMeanwhile as exc:
                link, carried = resume_link(self.home, request_id, now[1], f"req-{request_id}", chosen,
                                            typed, ("reason", reason))
                self.refuse(exc, link, what_was_sent(q, chosen, typed, ("your answer to the student", reason),
                                                     after, carried),
                            again_text="Open the regrade requests again at this request")
                return
        await R.record_answer(course, request_id, reason, before, after)
        loop = asyncio.get_running_loop()
        steps, unfinished = [f"{request['student']}'s {q.name}: {before:g} -> {after:g}"], []
        if after != before:
            problem = await loop.run_in_executor(None, R.refresh_feedback, Path(self.coursedir.root),
                                                 q.assignment, request["student"])
            (unfinished if problem else steps).append(problem or "feedback generated and released again")
            said, sent = await loop.run_in_executor(None, R.send_to_lms, self.db_url, q.assignment,
                                                    request["student"])
            (steps if sent else unfinished).append(said)
        await self.index(done=" · ".join(steps), unfinished=" · ".join(unfinished))


def formgrader_forgets_what_it_read(settings: dict) -> None:
    """Formgrader keeps one gradebook session for the server's life (``nbgrader_gradebook``),
    and SQLAlchemy answers a query with the rows that session already holds: a score these pages
    write through their own connection would show its old value in formgrader (and the API's
    grades) for as long as Python keeps those rows, until its next garbage collection. Expiring
    them makes formgrader read the gradebook again; nothing formgrader holds is unwritten (it
    commits each change as it makes it)."""
    gradebook = settings.get("nbgrader_gradebook")
    if gradebook is not None:
        gradebook.db.expire_all()


def handlers(base_url: str) -> list[tuple]:
    part = r"([^/]+)"
    home = url_path_join(base_url, PREFIX)
    return [
        (home + "/?", Questions),
        (url_path_join(home, "regrades", part) + "/?", AnswerRegrade),
        (url_path_join(home, part, part, part) + "/?", OneQuestion),
        (url_path_join(home, part, part, part, part) + "/?", OneQuestion),
    ]
