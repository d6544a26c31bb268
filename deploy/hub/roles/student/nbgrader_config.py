"""nbgrader in a student's server on the course hub: the course and its exchange, from the hub."""
import os

c = get_config()  # noqa: F821  (provided by nbgrader)
c.CourseDirectory.course_id = os.environ["COURSE_ID"]
c.Exchange.root = os.environ["COURSE_EXCHANGE"]
