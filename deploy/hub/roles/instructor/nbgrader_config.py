"""nbgrader in an instructor's server on the course hub: the course folder ~/<course id> (made by
``deploy/hub/course.py setup``; its own nbgrader_config.py holds the course's preprocessors), and the
exchange, both from the hub."""
import os

c = get_config()  # noqa: F821  (provided by nbgrader)
c.CourseDirectory.course_id = os.environ["COURSE_ID"]
c.CourseDirectory.root = os.path.expanduser(os.path.join("~", os.environ["COURSE_ID"]))
c.Exchange.root = os.environ["COURSE_EXCHANGE"]
