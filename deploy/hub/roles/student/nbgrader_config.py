"""nbgrader in a student's server: the course and its exchange, from the hub's environment.

Also installed by binder/postBuild, where there is no hub: then the course id is the course's and the
exchange a private folder, so that no server start logs an unwritable system exchange."""
import os

c = get_config()  # noqa: F821  (provided by nbgrader)
c.CourseDirectory.course_id = os.environ.get("COURSE_ID", "attention-and-transformers")
c.Exchange.root = os.environ.get("COURSE_EXCHANGE",
                                 os.path.expanduser("~/.local/share/nbgrader/exchange"))
