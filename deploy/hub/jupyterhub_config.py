"""The course hub: JupyterHub on one machine, system users, nbgrader's exchange (the TLJH model).

Start it with ``make hub`` (see ``deploy/hub/README.md``). Every setting an institution changes is an
environment variable read here, so the tests, ``make hub`` and a production machine run this same
file:

    COURSE_ID              nbgrader course id                 (attention-and-transformers)
    COURSE_ROSTER          JSON {"instructors": [...], "students": [...]}   (deploy/hub/roster.json)
    COURSE_EXCHANGE        nbgrader's exchange root            (/srv/nbgrader/exchange)
    COURSE_SUBMISSIONS     where the submission service keeps submissions (/srv/nbgrader/submissions)
    COURSE_EXCHANGE_USER   the system account it runs as        (course-exchange)
    COURSE_USER_ENV        the environment users' servers run  (/opt/attention-course/env)
    COURSE_HUB_STATE       the hub's database, cookie secret   (/srv/attention-course-hub)
    COURSE_HUB_IP / _PORT  where the proxy listens              (127.0.0.1 / 8000)
    COURSE_HUB_AUTH        pam (system passwords; production) | shared-password (trying it out,
                           tests: COURSE_HUB_PASSWORD) | native (jupyterhub-nativeauthenticator)
                           | lti13 (from the LMS: COURSE_LTI_PLATFORM, see lti13_login.py;
                           COURSE_LTI_ROSTER: the class list it keeps, <state>/lms-roster.csv)
    COURSE_LMS_PLATFORM    the grade passback's platform file (grading.lti_ags), for the grading
                           page's regrades (instructors' servers; unset: grades are sent by hand)

Submissions do not go through a folder of the exchange that students write: each user's server
sends them to the course's submission service (``submissions.py``, a JupyterHub service run as
its own account), which keeps a copy and the time it arrived; instructors collect from it.

Instructors' servers may be framed by pages of the hub's own origin (``frame-ancestors 'self'``,
``roles/instructor/jupyter_server_config.py``), so that *Nbgrader > Formgrader* opens inside
JupyterLab; JupyterHub's default (``'none'``) stays on students' servers. On this one-origin hub
the only pages an instructor's browser loads from the origin are the hub's, their own and their
co-instructors' servers (students' servers are not theirs to open), and files a server serves
are sandboxed by Jupyter, so no student-written page can frame formgrader.

Instructors (group ``formgrade-<course>``) get formgrader and create-assignment; students (group
``nbgrader-<course>``) get only the Assignments tab and validation. Which one a server is decides
the Jupyter config folder it starts with (``roles/instructor`` or ``roles/student``, installed
into the user environment by ``user_env.py``); the exchange
root and the course id reach both through the environment, so nobody passes them by hand.
Instructors' servers also find the instructor package (``<env>/instructor``, the grader); students'
servers do not have it on their path.
"""
import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
COURSE_ID = os.environ.get("COURSE_ID", "attention-and-transformers")
ROSTER = Path(os.environ.get("COURSE_ROSTER", HERE / "roster.json"))
EXCHANGE = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
USER_ENV = Path(os.environ.get("COURSE_USER_ENV", "/opt/attention-course/env"))
STATE = Path(os.environ.get("COURSE_HUB_STATE", "/srv/attention-course-hub"))
IP = os.environ.get("COURSE_HUB_IP", "127.0.0.1")
PORT = int(os.environ.get("COURSE_HUB_PORT", "8000"))
AUTH = os.environ.get("COURSE_HUB_AUTH", "pam")
SUBMISSIONS = os.environ.get("COURSE_SUBMISSIONS", "/srv/nbgrader/submissions")
EXCHANGE_USER = os.environ.get("COURSE_EXCHANGE_USER", "course-exchange")
SUBMISSIONS_SERVICE = "course-submissions"
SUBMISSIONS_URL = f"http://127.0.0.1:{PORT + 3}"

INSTRUCTORS_GROUP = f"formgrade-{COURSE_ID}"
STUDENTS_GROUP = f"nbgrader-{COURSE_ID}"
roster = json.loads(ROSTER.read_text())
instructors, students = list(roster["instructors"]), list(roster["students"])

c = get_config()  # noqa: F821  (provided by JupyterHub)

# --- where the hub listens and keeps its state ------------------------------------------------
STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
c.JupyterHub.ip = IP
c.JupyterHub.port = PORT
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{PORT + 1}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PORT + 2}"
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")

# --- who may log in -------------------------------------------------------------------------------
if AUTH == "pam":                       # the machine's own accounts and passwords
    c.JupyterHub.authenticator_class = "pam"
elif AUTH == "shared-password":         # one password for everyone on the roster: trying it out
    c.JupyterHub.authenticator_class = "shared-password"
    c.SharedPasswordAuthenticator.user_password = os.environ["COURSE_HUB_PASSWORD"]
elif AUTH == "native":                  # sign-up with passwords kept by the hub (pip install
    c.JupyterHub.authenticator_class = "native"   # jupyterhub-nativeauthenticator)
    c.NativeAuthenticator.open_signup = False
elif AUTH == "lti13":                   # launches from the LMS (lti13_login.py): whoever the LMS
    import sys                          # sends with a course role; groups from the LTI roles

    sys.path.insert(0, str(HERE))
    from lti13_login import CourseLTI13Authenticator, platform_settings

    platform = platform_settings(Path(os.environ["COURSE_LTI_PLATFORM"]))
    c.JupyterHub.authenticator_class = CourseLTI13Authenticator
    c.CourseLTI13Authenticator.issuer = platform["issuer"]
    c.CourseLTI13Authenticator.client_id = {platform["client_id"]}
    c.CourseLTI13Authenticator.deployment_id = platform["deployment_id"]
    c.CourseLTI13Authenticator.context_id = platform.get("context_id", "")
    c.CourseLTI13Authenticator.hub_url = os.environ.get("COURSE_HUB_PUBLIC_URL", f"http://{IP}:{PORT}")
    c.CourseLTI13Authenticator.authorize_url = platform["authorize_url"]
    c.CourseLTI13Authenticator.jwks_endpoint = platform["jwks_endpoint"]
    c.CourseLTI13Authenticator.key_refetch_seconds = float(platform.get("key_refetch_seconds", 10))
    c.CourseLTI13Authenticator.instructors_group = INSTRUCTORS_GROUP
    c.CourseLTI13Authenticator.students_group = STUDENTS_GROUP
    # who has launched, for `nbgrader db student import` (the LMS's ids for the grade passback)
    c.CourseLTI13Authenticator.roster_file = os.environ.get("COURSE_LTI_ROSTER", str(STATE / "lms-roster.csv"))
    c.CourseLTI13Authenticator.manage_groups = True
    c.CourseLTI13Authenticator.allow_all = True
    c.CourseLTI13Authenticator.create_system_users = True
    c.CourseLTI13Authenticator.add_user_cmd = ["useradd", "--create-home", "-K", "HOME_MODE=0700",
                                               "--shell", "/bin/bash", "--comment", "attention-course hub account"]
    # the launch's claims, encrypted, where the hub has a key (course.py start makes one)
    c.CourseLTI13Authenticator.enable_auth_state = bool(os.environ.get("JUPYTERHUB_CRYPT_KEY"))
    if platform.get("frame_origin"):    # the LMS shows the hub inside its page: allow that frame,
        frame = f"frame-ancestors 'self' {platform['frame_origin']}"     # and cookies across it
        # A cookie set inside another site's frame is a third-party cookie, which browsers now
        # block; a *partitioned* one (CHIPS) is kept for that frame of that site, which is all the
        # login and the session inside the LMS page need. Python's cookies learn the attribute
        # in 3.14; until then it is added here (and in the servers' settings, roles/).
        import http.cookies

        http.cookies.Morsel._reserved.setdefault("partitioned", "Partitioned")
        http.cookies.Morsel._flags.add("partitioned")
        c.JupyterHub.tornado_settings = {
            "headers": {"Content-Security-Policy": frame},
            "cookie_options": {"SameSite": "None", "Secure": True, "Partitioned": True}}
        FRAME_ORIGIN = platform["frame_origin"]         # the servers' settings read it (roles/)
else:
    raise ValueError(f"COURSE_HUB_AUTH must be pam, shared-password, native or lti13, not {AUTH!r}")
if AUTH != "lti13":                     # the roster decides who may log in, and each one's group
    c.Authenticator.allowed_users = set(instructors + students)
    c.JupyterHub.load_groups = {
        INSTRUCTORS_GROUP: {"users": instructors},
        STUDENTS_GROUP: {"users": students},
    }
# nobody is a hub admin by default: an admin could open every student's server, and nbgrader needs
# no admin rights (give the machine's operator admin_users in a config of their own)
c.JupyterHub.load_roles = [
    # instructors may open each other's servers (co-teaching, grading together)
    {"name": "course-instructors", "groups": [INSTRUCTORS_GROUP],
     "scopes": [f"access:servers!group={INSTRUCTORS_GROUP}", f"read:users!group={STUDENTS_GROUP}"]},
    # everyone in the course may use the submission service (their servers' tokens included)...
    {"name": "course-members", "groups": [INSTRUCTORS_GROUP, STUDENTS_GROUP],
     "scopes": [f"access:services!service={SUBMISSIONS_SERVICE}"]},
    # ...which asks the hub which group a token's owner is in
    {"name": "course-submissions-service", "services": [SUBMISSIONS_SERVICE],
     "scopes": ["read:users:name", "read:users:groups"]},
]

# --- the submission service: it keeps each submission and the time it arrived (submissions.py) ---
SHARED = USER_ENV / "share" / "attention-course"          # installed by user_env.py, readable by all
c.JupyterHub.services = [{
    "name": SUBMISSIONS_SERVICE, "url": SUBMISSIONS_URL, "display": False, "user": EXCHANGE_USER,
    "command": [str(USER_ENV / "bin" / "python"), "-P", str(SHARED / "hub" / "submissions.py")],
    "cwd": "/", "environment": {"COURSE_ID": COURSE_ID, "COURSE_SUBMISSIONS": SUBMISSIONS},
}]

# --- every user's server: a process as that system user, in the course environment -------------
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(USER_ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120           # ten students starting at once on two cores
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    "PATH": f"{USER_ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
    "COURSE_ID": COURSE_ID,
    "COURSE_EXCHANGE": EXCHANGE,
    "COURSE_SUBMISSIONS_URL": f"{SUBMISSIONS_URL}/services/{SUBMISSIONS_SERVICE}/api/",
    # terminals are login shells, whose /etc/profile sets PATH afresh: /etc/profile.d/
    # attention-course.sh (course.py) puts this environment first again
    "COURSE_USER_ENV": str(USER_ENV),
}
if AUTH == "lti13" and platform.get("frame_origin"):        # roles/*/jupyter_server_config.py
    c.Spawner.environment["COURSE_FRAME_ORIGIN"] = FRAME_ORIGIN
# a server's own token ($JUPYTERHUB_API_TOKEN): the default scopes, and the submission service
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server",
                                 f"access:services!service={SUBMISSIONS_SERVICE}"]


def role_of(spawner) -> str:
    groups = {g.name for g in spawner.user.groups}
    return "instructor" if INSTRUCTORS_GROUP in groups else "student"


def choose_role_config(spawner) -> None:
    """An instructor's server loads formgrader; a student's does not (roles/<role>/). Each gets,
    once, a START-HERE.md in their home that says where things are."""
    roles = USER_ENV / "share" / "attention-course" / "roles"     # deploy/hub/roles, installed
    # a new dict: the configured one may be shared by every spawner, and spawns run concurrently
    role = role_of(spawner)
    spawner.environment = {**spawner.environment, **role_environment(role),
                           "JUPYTER_CONFIG_PATH": str(roles / role)}
    welcome(spawner.user.name, roles / role / "START-HERE.md")


def welcome(name: str, text: Path) -> None:
    """Put the role's START-HERE.md into the account's home, once (theirs to edit or delete)."""
    import pwd

    try:
        account = pwd.getpwnam(name)
    except KeyError:
        return
    home = Path(account.pw_dir)
    target, mark = home / "START-HERE.md", home / ".attention-course-welcomed"
    if not home.is_dir() or mark.exists() or os.path.lexists(target) or not text.exists():
        return
    for path, data in ((target, text.read_bytes()), (mark, b"")):
        try:                                     # never through a link the account made: a new
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except OSError:                          # file, owned through its descriptor, or nothing
            return
        with os.fdopen(fd, "wb") as handle:
            os.fchown(handle.fileno(), account.pw_uid, account.pw_gid)
            handle.write(data)


def role_environment(role: str) -> dict:
    """What a role's server adds to its environment: instructors import the instructor package
    (the grader, the course's nbgrader preprocessors), installed apart from the student package
    by ``user_env.py``, and where the course sends grades to its LMS (``COURSE_LMS_PLATFORM``, the
    platform file of ``grading.lti_ags``), the grading page sends a regraded student's new total;
    a student's server has only the student package."""
    if role != "instructor":
        return {}
    lms = os.environ.get("COURSE_LMS_PLATFORM", "")
    return {"PYTHONPATH": str(USER_ENV / "instructor"), **({"COURSE_LMS_PLATFORM": lms} if lms else {})}


c.Spawner.pre_spawn_hook = choose_role_config
