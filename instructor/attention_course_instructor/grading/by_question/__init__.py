"""Grading by question: a Jupyter server extension beside formgrader, on instructors' servers.

- :mod:`.answers` -- one question across the class: answers anonymised and shuffled; scores and
  comments written to nbgrader's gradebook; the grading log;
- :mod:`.regrades` -- the class's regrade requests (kept by the hub's submission service) and
  what answering one does: gradebook, the student's feedback, the LMS;
- :mod:`.pages` -- the pages, at ``<server>/course-grading`` (templates in ``templates/``).

The rubrics come from the source notebooks (:mod:`~attention_course_instructor.grading.rubric`).
Enabled in the hub's instructor settings (``deploy/hub/roles/instructor``); it needs formgrader on
the same server (it grades formgrader's course folder).
"""


def _jupyter_server_extension_points():
    return [{"module": "attention_course_instructor.grading.by_question"}]


def _load_jupyter_server_extension(serverapp):
    from attention_course_instructor.grading.by_question.pages import handlers

    serverapp.web_app.add_handlers(".*$", handlers(serverapp.web_app.settings["base_url"]))
    serverapp.log.info("grading by question at %scourse-grading", serverapp.web_app.settings["base_url"])
