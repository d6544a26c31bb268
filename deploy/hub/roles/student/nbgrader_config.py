"""nbgrader in a student's server: the course and its exchange, from the hub's environment.

Also installed by binder/postBuild, where there is no hub: then the course id is the course's and the
exchange a private folder, so that no server start logs an unwritable system exchange."""
import os

c = get_config()  # noqa: F821  (provided by nbgrader)
c.CourseDirectory.course_id = os.environ.get("COURSE_ID", "attention-and-transformers")
c.Exchange.root = os.environ.get("COURSE_EXCHANGE",
                                 os.path.expanduser("~/.local/share/nbgrader/exchange"))
# on the hub, Submit sends the assignment to the course's submission service (deploy/hub/submit_client.py,
# installed beside these settings), which records when it arrived; no folder of the exchange is
# written by students
if os.environ.get("COURSE_SUBMISSIONS_URL"):
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hub"))
    c.ExchangeFactory.submit = "submit_client.ServiceSubmit"
