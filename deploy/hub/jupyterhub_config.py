"""The course hub: JupyterHub on one machine, system users, nbgrader's exchange (the TLJH model).

Start it with ``make hub`` (see ``deploy/hub/README.md``). Every setting an institution changes is an
environment variable read here, so the tests, ``make hub`` and a production machine run this same
file:

    COURSE_ID              nbgrader course id                 (attention-and-transformers)
    COURSE_ROSTER          JSON {"instructors": [...], "students": [...]}   (deploy/hub/roster.json)
    COURSE_EXCHANGE        nbgrader's exchange root            (/srv/nbgrader/exchange)
    COURSE_USER_ENV        the environment users' servers run  (/opt/attention-course/env)
    COURSE_HUB_STATE       the hub's database, cookie secret   (/srv/attention-course-hub)
    COURSE_HUB_IP / _PORT  where the proxy listens              (127.0.0.1 / 8000)
    COURSE_HUB_AUTH        pam (system passwords; production) | shared-password (trying it out,
                           tests: COURSE_HUB_PASSWORD) | native (jupyterhub-nativeauthenticator)
                           | lti13 (from the LMS: COURSE_LTI_PLATFORM, see lti13_login.py;
                           COURSE_LTI_ROSTER: the class list it keeps, <state>/lms-roster.csv)

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
    c.CourseLTI13Authenticator.authorize_url = platform["authorize_url"]
    c.CourseLTI13Authenticator.jwks_endpoint = platform["jwks_endpoint"]
    c.CourseLTI13Authenticator.instructors_group = INSTRUCTORS_GROUP
    c.CourseLTI13Authenticator.students_group = STUDENTS_GROUP
    # who has launched, for `nbgrader db student import` (the LMS's ids for the grade passback)
    c.CourseLTI13Authenticator.roster_file = os.environ.get("COURSE_LTI_ROSTER", str(STATE / "lms-roster.csv"))
    c.CourseLTI13Authenticator.manage_groups = True
    c.CourseLTI13Authenticator.allow_all = True
    c.CourseLTI13Authenticator.create_system_users = True
    c.CourseLTI13Authenticator.add_user_cmd = ["useradd", "--create-home", "--shell", "/bin/bash",
                                               "--comment", "attention-course hub account"]
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
]

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
}


def role_of(spawner) -> str:
    groups = {g.name for g in spawner.user.groups}
    return "instructor" if INSTRUCTORS_GROUP in groups else "student"


def choose_role_config(spawner) -> None:
    """An instructor's server loads formgrader; a student's does not (roles/<role>/)."""
    roles = USER_ENV / "share" / "attention-course" / "roles"     # deploy/hub/roles, installed
    # a new dict: the configured one may be shared by every spawner, and spawns run concurrently
    role = role_of(spawner)
    spawner.environment = {**spawner.environment, **role_environment(role),
                           "JUPYTER_CONFIG_PATH": str(roles / role)}


def role_environment(role: str) -> dict:
    """What a role's server adds to its environment: instructors import the instructor package
    (the grader, the course's nbgrader preprocessors), installed apart from the student package
    by ``user_env.py``; a student's server has only the student package."""
    return {"PYTHONPATH": str(USER_ENV / "instructor")} if role == "instructor" else {}


c.Spawner.pre_spawn_hook = choose_role_config
