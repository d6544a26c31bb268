"""nbgrader in an instructor's server on the course hub: the course folder ~/<course id> (made by
``deploy/hub/course.py setup``; its own nbgrader_config.py holds the course's preprocessors), and the
exchange, both from the hub."""
import os

c = get_config()  # noqa: F821  (provided by nbgrader)
c.CourseDirectory.course_id = os.environ["COURSE_ID"]
c.CourseDirectory.root = os.path.expanduser(os.path.join("~", os.environ["COURSE_ID"]))
c.Exchange.root = os.environ["COURSE_EXCHANGE"]
# submissions come from the course's submission service (the course folder's own nbgrader_config.py
# selects CourseCollect); an instructor's own test submission goes there too
if os.environ.get("COURSE_SUBMISSIONS_URL"):
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hub"))
    c.ExchangeFactory.submit = "submit_client.ServiceSubmit"
    c.CourseCollect.service_url = os.environ["COURSE_SUBMISSIONS_URL"]
    # and no release makes nbgrader's inbound folder, which every student could write into
    c.ExchangeFactory.release_assignment = (
        "attention_course_instructor.grading.exchange.ServiceReleaseAssignment")
