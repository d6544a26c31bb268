"""A student's regrade requests, on the course hub: a page of their server, ``<server>/course-regrade``.

The feedback page links each task to it (``grading/feedback.py``: "Ask for a regrade of this
task", through the hub's ``/hub/user-redirect/``, so the link reaches the reader's own server).
The page lists the student's requests with every answer, and sends a new one -- an assignment, a
task and a reason -- to the course's submission service (``submissions.py``, ``regrades/``) with
the server's own JupyterHub token: the service, not this page, decides who is asking and when.

A Jupyter server extension, installed beside the submission client (``user_env.py``) and enabled
in the student settings (``roles/student``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
from jinja2 import Environment
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from nbgrader import utils as nbgrader_utils
from tornado import httpclient, web

PAGE = Environment(autoescape=True).from_string("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Regrade requests</title>
<style>
 body { font: 16px/1.5 system-ui, sans-serif; color: #1a1a1a; max-width: 48rem; margin: 0 auto;
        padding: 1rem; }
 label { display: block; margin: 0.5rem 0; }
 select, textarea { font: inherit; width: 100%; }
 textarea { min-height: 6rem; }
 .text { white-space: pre-wrap; overflow-wrap: anywhere; background: #f4f4f4; padding: 0.5rem; }
 .done { background: #e6f4ea; border: 1px solid #2e7d32; padding: 0.5rem; }
 .problem { background: #fdecea; border: 1px solid #b3261e; padding: 0.5rem; }
 section { border: 1px solid #999; border-radius: 6px; padding: 0.5rem 1rem; margin: 1rem 0; }
 button { font: inherit; padding: 0.3rem 1rem; }
</style></head>
<body><main>
<h1>Regrade requests</h1>
{% if said %}<p class="done" role="status">{{ said }}</p>{% endif %}
{% if trouble %}<p class="problem" role="alert">{{ trouble }}</p>{% endif %}
<h2>Ask for a regrade</h2>
<p>Say which task, and why you think its grade is wrong: your instructors read it with your
answer, and you will find their reply here.</p>
<form method="post">
{{ xsrf|safe }}
<label>Task <select name="which" required>
{% for a, items in tasks.items() %}{% for id, name in items %}
<option value="{{ a }}/{{ id }}" {% if a == chosen_lab and id == chosen_task %}selected{% endif %}>{{ a }}: {{ name }}</option>
{% endfor %}{% endfor %}
</select></label>
<label>Why (required)<textarea name="reason" required maxlength="2000"></textarea></label>
<button type="submit">Send the request</button>
</form>
<h2>Your requests</h2>
{% if not requests %}<p>None yet.</p>{% endif %}
{% for r in requests|reverse %}
<section><h3>{{ r.assignment }}: {{ names.get((r.assignment, r.task), r.task) }} · {{ r.status }}</h3>
{% for step in r.history %}
<p>{{ step.at }} · {% if step.what == "asked" %}you asked:{% else %}your instructor answered
{%- if step.score_after is not none %} (score {{ "%g"|format(step.score_before) }} → {{ "%g"|format(step.score_after) }}){% endif %}:{% endif %}</p>
<div class="text">{{ step.reason }}</div>
{% endfor %}</section>
{% endfor %}
</main></body></html>""")


def service_url() -> str:
    api = os.environ.get("COURSE_SUBMISSIONS_URL", "")
    if not api:
        raise web.HTTPError(503, "regrade requests need the course hub's submission service")
    return api.rstrip("/").removesuffix("/api") + f"/regrades/{os.environ['COURSE_ID']}"


def graded_tasks(home: Path) -> dict[str, list[tuple[str, str]]]:
    """lab -> [(grade_id, name)] of the graded cells of each notebook the student fetched, each
    named by the heading above it (``~/<lab>/<lab>.ipynb``)."""
    found = {}
    for folder in sorted(p for p in home.iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebook = folder / f"{folder.name}.ipynb"
        try:
            nb = nbformat.read(notebook, as_version=4) if notebook.is_file() else None
        except Exception:               # noqa: BLE001  (a student's own file: whatever it holds)
            nb = None
        if nb is None:
            continue
        heading, items = "", []
        for cell in nb.cells:
            if cell.cell_type == "markdown" and cell.source.lstrip().startswith("#"):
                heading = cell.source.lstrip().splitlines()[0].lstrip("#").strip()
            if nbgrader_utils.is_grade(cell):
                grade_id = cell.metadata["nbgrader"].get("grade_id", "")
                items.append((grade_id, f"{heading} ({grade_id})" if heading else grade_id))
        if items:
            found[folder.name] = items
    return found


class RegradePage(JupyterHandler):

    async def call(self, method: str, body: dict | None = None) -> dict:
        request = httpclient.HTTPRequest(
            service_url(), method=method, body=None if body is None else json.dumps(body),
            headers={"Authorization": f"token {os.environ.get('JUPYTERHUB_API_TOKEN', '')}",
                     "Content-Type": "application/json"}, request_timeout=60)
        try:
            return json.loads((await httpclient.AsyncHTTPClient().fetch(request)).body)
        except httpclient.HTTPClientError as exc:
            body = exc.response.body if exc.response is not None else b"{}"
            try:
                why = json.loads(body).get("error", "")
            except ValueError:
                why = ""
            raise RuntimeError(why or f"the course's service did not answer ({exc.code})") from None

    async def show(self, said: str = "", trouble: str = "") -> None:
        """The page; what was just done (or refused) comes from this request, never the URL."""
        tasks = graded_tasks(Path(self.settings["server_root_dir"]).expanduser())
        requests = []
        try:
            requests = (await self.call("GET"))["requests"]
        except RuntimeError as exc:
            trouble = trouble or str(exc)
        names = {(lab, grade_id): name for lab, items in tasks.items() for grade_id, name in items}
        self.finish(PAGE.render(tasks=tasks, requests=requests, names=names, trouble=trouble, said=said,
                                xsrf=self.xsrf_form_html(), chosen_lab=self.get_argument("assignment", ""),
                                chosen_task=self.get_argument("task", "")))

    @web.authenticated
    async def get(self):
        await self.show()

    @web.authenticated
    async def post(self):
        lab, _, task = self.get_argument("which", "").partition("/")
        body = {"assignment": lab, "task": task, "reason": self.get_argument("reason", "")}
        try:
            await self.call("POST", body)
        except RuntimeError as exc:
            await self.show(trouble=f"Not sent: {exc}")
            return
        name = dict(graded_tasks(Path(self.settings["server_root_dir"]).expanduser()).get(lab, []))
        await self.show(said=f"Sent: your request about {lab}: {name.get(task, task)}.")


def _jupyter_server_extension_points():
    return [{"module": "regrade_requests"}]


def _load_jupyter_server_extension(serverapp):
    route = url_path_join(serverapp.web_app.settings["base_url"], "course-regrade") + "/?"
    serverapp.web_app.add_handlers(".*$", [(route, RegradePage)])
