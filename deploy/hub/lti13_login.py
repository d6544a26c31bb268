"""LTI 1.3 login for the course hub: students and staff arrive from the LMS, already signed in.

Selected with ``COURSE_HUB_AUTH=lti13``; ``COURSE_LTI_PLATFORM`` names one JSON file of the
platform's values, as the LMS shows them when the hub is registered as a tool:

    {"issuer": "https://canvas.instructure.com", "client_id": "10000000000042",
     "deployment_id": "1:abc", "authorize_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
     "jwks_endpoint": "https://sso.canvaslms.com/api/lti/security/jwks",
     "context_id": "4dde05e8ca1973bcca9bffc13e1548820eee93a3",
     "frame_origin": "https://school.instructure.com"}

(the same file :mod:`attention_course_instructor.grading.lti_ags` reads, where it also holds the
grade services' values). ``jupyterhub-ltiauthenticator`` runs the OpenID Connect flow and checks
the signature, audience, expiry and the state and nonce cookies; this module adds what a course
needs, and closes what that package leaves open:

- **one course**: a launch from another deployment of the tool, or from another course of the
  same deployment (``context_id``: Canvas installs a tool for a whole account under one
  deployment), is refused; until ``context_id`` is set every launch is refused with the launch's
  own context id in the message, so an administrator learns it from a first launch;
- **the launch checked whole**: the login start must come from the configured issuer and client;
  an ``azp`` claim must be this tool's client id even with a single audience; the
  ``target_link_uri`` must be this hub; each ``id_token`` is accepted **once** (its nonce is
  remembered until it expires: the same token, state and cookies posted again are a replay);
- **the platform's keys fetched off the hub's event loop and cached** (five minutes, and again
  when a token names a key not yet seen, at most every 10 s, ``key_refetch_seconds`` of the
  platform file): a slow key endpoint no longer stalls every user;
- **the role decides the group**: Instructor and TeachingAssistant join the formgrader group,
  Learner the students' group, anything else is refused; someone whose role changed has their
  running server stopped, so that it starts again with the new role's tools and path;
- **a username that is stable and safe**: ``lti-`` and 16 hex digits of a digest of the issuer and
  the user's ``sub`` (LTI's opaque, permanent user id), never a name or an e-mail address;
- **a system account on first launch**, its home private (0700: ``useradd -K HOME_MODE=0700``,
  and set again at each launch of an account this hub made);
- **the class list**: every Learner's launch updates ``roster_file``, a CSV in the columns of
  ``nbgrader db student import``; ``lms_user_id`` is the LMS's own user id where the launch
  carries it (Canvas: the custom field ``canvas_user_id=$Canvas.user.id``, which Canvas's
  gradebook import matches), else the LTI ``sub``. A name beginning with ``=``, ``+``, ``-`` or
  ``@`` is written with a leading apostrophe (a spreadsheet would run it as a formula), and the
  hub's log says so. Instructors and TAs are not written: they are not students;
- **inside the LMS page** (``frame_origin``): the hub's and the servers' pages may be framed by
  that origin, and the hub's cookies are sent as ``SameSite=None; Secure``, which a browser
  needs to keep the login's state across the frame.

``auth_state`` (the launch's claims, encrypted) is kept where the hub has a key
(``JUPYTERHUB_CRYPT_KEY``; ``course.py start`` makes one in the hub's state).
"""
from __future__ import annotations

import asyncio
import csv
import hashlib
import json
import os
import pwd
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

import jwt
from jupyterhub.auth import LocalAuthenticator
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.error import LoginError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler, LTI13LoginInitHandler
from ltiauthenticator.lti13.validator import LTI13LaunchValidator
from tornado.web import HTTPError
from traitlets import Float, Unicode

CLAIM = "https://purl.imsglobal.org/spec/lti/claim"
ROLES, DEPLOYMENT, CONTEXT, CUSTOM = f"{CLAIM}/roles", f"{CLAIM}/deployment_id", f"{CLAIM}/context", f"{CLAIM}/custom"
TARGET = f"{CLAIM}/target_link_uri"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
TEACHING = {f"{MEMBERSHIP}#Instructor", f"{MEMBERSHIP}/Instructor#TeachingAssistant",
            f"{MEMBERSHIP}#TeachingAssistant"}
LEARNING = {f"{MEMBERSHIP}#Learner", f"{MEMBERSHIP}/Learner#Learner"}
LOGIN_KEYS = ("issuer", "client_id", "deployment_id", "authorize_url", "jwks_endpoint")
ROSTER_COLUMNS = ("id", "first_name", "last_name", "email", "lms_user_id")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")     # a spreadsheet runs a cell starting so
ACCOUNT_MARK = "attention-course hub account"          # the GECOS of accounts the hub makes
_roster_lock = threading.Lock()


def platform_settings(path: Path) -> dict:
    """The platform's values for the login, from the JSON file; a missing one is named."""
    values = json.loads(Path(path).read_text())
    missing = [key for key in LOGIN_KEYS if not values.get(key)]
    if missing:
        raise ValueError(f"{path}: the LTI 1.3 login needs {', '.join(missing)}")
    return values


def username_for(issuer: str, subject: str) -> str:
    """The hub (and system) username of the platform's user ``subject``: stable, 20 characters,
    lower-case letters, digits and a hyphen."""
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()
    return f"lti-{digest[:16]}"


def course_role(roles) -> str:
    """"instructor" or "student" from a launch's LTI roles; LoginError when it has neither."""
    roles = set(roles or [])
    if roles & TEACHING:
        return "instructor"
    if roles & LEARNING:
        return "student"
    raise LoginError("this LMS role may not use the course hub: the launch must come from an "
                     "Instructor, TeachingAssistant or Learner of the course")


def lms_user_id(claims: dict) -> str:
    """What the LMS's own gradebook knows the person by: Canvas's numeric user id when the tool's
    custom field ``canvas_user_id=$Canvas.user.id`` came with the launch (Canvas's gradebook
    import matches it), else the LTI ``sub`` (what LTI Advantage's grade services name them by)."""
    canvas = str((claims.get(CUSTOM) or {}).get("canvas_user_id", "")).strip()
    return canvas if canvas.isdigit() else claims["sub"]


def spreadsheet_safe(text: str) -> tuple[str, bool]:
    """``text`` as a CSV cell no spreadsheet runs as a formula, and whether it had to change."""
    text = str(text)
    return ("'" + text, True) if text.startswith(FORMULA_START) else (text, False)


def record_person(roster: Path, name: str, claims: dict, log=None) -> None:
    """Add or update ``name``'s row of the roster CSV from a launch's claims (written whole, then
    renamed into place: a reader never sees half a file; readable by its owner and group only)."""
    row, changed = {"id": name, "lms_user_id": lms_user_id(claims)}, []
    for column, claim in (("first_name", "given_name"), ("last_name", "family_name"), ("email", "email")):
        row[column], was = spreadsheet_safe(claims.get(claim, ""))
        if was:
            changed.append(column)
    if changed and log is not None:
        log.warning("%s: the LMS sent a %s beginning like a spreadsheet formula; the roster writes "
                    "it with a leading apostrophe", name, " and ".join(changed))
    with _roster_lock:
        rows = {}
        if roster.exists():
            with open(roster, newline="") as handle:
                rows = {r["id"]: r for r in csv.DictReader(handle)}
        rows[name] = row
        roster.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile("w", newline="", dir=roster.parent, delete=False)
        with handle:
            writer = csv.DictWriter(handle, fieldnames=ROSTER_COLUMNS)
            writer.writeheader()
            writer.writerows(rows[key] for key in sorted(rows))
        os.chmod(handle.name, 0o640)
        os.replace(handle.name, roster)


def drop_from_roster(roster: Path, name: str) -> None:
    """Take ``name`` off the roster (someone who launched as a Learner and is now staff)."""
    with _roster_lock:
        if not roster.exists():
            return
        with open(roster, newline="") as handle:
            rows = [r for r in csv.DictReader(handle) if r["id"] != name]
        handle = tempfile.NamedTemporaryFile("w", newline="", dir=roster.parent, delete=False)
        with handle:
            writer = csv.DictWriter(handle, fieldnames=ROSTER_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        os.chmod(handle.name, 0o640)
        os.replace(handle.name, roster)


def same_origin(url: str, base: str) -> bool:
    a, b = urlparse(url), urlparse(base)
    return (a.scheme, a.netloc) == (b.scheme, b.netloc) and a.path.startswith(b.path.rstrip("/") + "/")


class CourseLoginInitHandler(LTI13LoginInitHandler):
    """The login start: only from the configured platform and client."""

    def post(self):
        issuer, client = self.get_argument("iss", ""), self.get_argument("client_id", "")
        if issuer != self.authenticator.issuer:
            raise HTTPError(400, f"this login starts at {issuer!r}, not at the course's platform")
        if client and client not in self.authenticator.client_id:
            raise HTTPError(400, f"this login is for client {client!r}, not the course hub's")
        return super().post()

    get = post


class CourseCallbackHandler(LTI13CallbackHandler):
    """The launch: the token decoded off the event loop with cached keys; checked whole."""

    async def post(self):
        loop = asyncio.get_running_loop()
        try:
            id_token = await loop.run_in_executor(None, self.decode_and_validate_launch_request)
        except HTTPError:
            raise
        except Exception as exc:                       # the package's ValidationErrors and others
            status = 401 if "audience" in type(exc).__name__.lower() else 400
            raise HTTPError(status, str(exc)) from None
        try:
            user = await self.login_user(id_token)
        except LoginError as exc:
            raise HTTPError(400, str(exc)) from None
        if user is None:
            raise HTTPError(403, "User missing or null")
        await self.redirect_to_next_url(user)

    def decode_and_validate_launch_request(self):
        auth = self.authenticator
        validator = LTI13LaunchValidator(parent=self.app)
        args = {k: v[0].decode() for k, v in self.request.arguments.items()}
        validator.validate_auth_response(args)
        self.check_state()
        try:
            key = auth.jwks_client.get_signing_key_from_jwt(args["id_token"]).key
            id_token = jwt.decode(args["id_token"], key, algorithms=auth.jwks_algorithms,
                                  audience=list(auth.client_id), issuer=auth.issuer,
                                  leeway=validator.time_leeway)
        except jwt.InvalidAudienceError as exc:
            raise HTTPError(401, f"Audience doesn't match: {exc}") from None
        except (jwt.PyJWTError, jwt.PyJWKClientError) as exc:
            raise HTTPError(400, str(exc)) from None
        validator.validate_id_token(id_token)
        validator.validate_azp_claim(id_token, auth.client_id)
        if "azp" in id_token and id_token["azp"] not in auth.client_id:       # one audience too
            raise HTTPError(401, f"the token's azp {id_token['azp']!r} is not the course hub's client id")
        target = id_token.get(TARGET, "")
        if auth.hub_url and not same_origin(target, auth.hub_url):
            raise HTTPError(400, f"this launch is for {target!r}, not the course hub at {auth.hub_url}")
        self.check_nonce(id_token)
        auth.use_nonce(id_token["nonce"], id_token["exp"])
        return id_token


class CourseLTI13Authenticator(LTI13Authenticator, LocalAuthenticator):
    """LTI 1.3 launches from one course of one deployment, roles as groups, an account made on
    first launch (see the module)."""

    login_handler = CourseLoginInitHandler
    callback_handler = CourseCallbackHandler

    deployment_id = Unicode(config=True, help="the tool's deployment id in the LMS")
    context_id = Unicode("", config=True, help="the LMS course's LTI context id (empty: every "
                                               "launch is refused, naming its own)")
    hub_url = Unicode("", config=True, help="the hub's public address, which a launch's "
                                            "target_link_uri must point into")
    instructors_group = Unicode("formgrade", config=True)
    students_group = Unicode("nbgrader", config=True)
    roster_file = Unicode("", config=True, help="the CSV every Learner's launch updates (see the module)")
    key_refetch_seconds = Float(10, config=True, help="the least time between two fetches of the "
                                                      "platform's keys for a key not yet seen")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._nonces: dict[str, float] = {}
        self._nonce_lock = threading.Lock()
        self._jwks = None

    @property
    def jwks_client(self) -> jwt.PyJWKClient:
        """One client for the hub's life: the key set cached for five minutes (fetched again when
        a token names an unknown key, at most every ``key_refetch_seconds``)."""
        if self._jwks is None:
            self._jwks = jwt.PyJWKClient(self.jwks_endpoint, cache_jwk_set=True, lifespan=300, timeout=15,
                                         cooldown_duration=self.key_refetch_seconds)
        return self._jwks

    def use_nonce(self, nonce: str, expires: float) -> None:
        """Accept each launch once: a nonce seen before its token expired is a replay."""
        now = time.time()
        with self._nonce_lock:
            self._nonces = {n: t for n, t in self._nonces.items() if t > now}
            if nonce in self._nonces:
                raise HTTPError(400, "this launch was used already (a replay): open the tool from "
                                     "the LMS again")
            self._nonces[nonce] = float(expires) + 60

    async def authenticate(self, handler, data=None):
        data = data or {}
        if data.get(DEPLOYMENT) != self.deployment_id:
            raise LoginError(f"this launch is for deployment {data.get(DEPLOYMENT)!r}, not the "
                             "course hub's: register the hub in this course of the LMS first")
        context = (data.get(CONTEXT) or {}).get("id", "")
        if not self.context_id or context != self.context_id:
            raise LoginError(f"this launch comes from the LMS course {context!r}, and the hub serves "
                             + (f"{self.context_id!r}" if self.context_id else
                                "no course yet: put this id as context_id in its platform file"))
        if not data.get("sub"):
            raise LoginError("an anonymous launch (no 'sub' claim) cannot open a course server")
        role = course_role(data.get(ROLES))
        group = self.instructors_group if role == "instructor" else self.students_group
        name = username_for(data["iss"], data["sub"])
        await self.stop_server_of_another_role(handler, name, group)
        if self.roster_file:
            if role == "student":
                record_person(Path(self.roster_file), name, data, self.log)
            else:
                drop_from_roster(Path(self.roster_file), name)
        self.keep_home_private(name)
        return {"name": name, "groups": [group], "auth_state": data}

    async def stop_server_of_another_role(self, handler, name: str, group: str) -> None:
        """A person whose role changed (an instructor demoted, say) keeps nothing of the old one:
        their running server, started with the old role's tools and path, is stopped."""
        user = handler.find_user(name)
        if user is None:
            return
        groups = {g.name for g in user.groups}
        if group not in groups and user.spawner.active:
            self.log.warning("%s now launches as %s: stopping the server started in their former "
                             "role", name, group)
            await handler.stop_single_user(user)

    def keep_home_private(self, name: str) -> None:
        """The home of an account this hub made stays 0700 (made so; older ones are put right)."""
        try:
            account = pwd.getpwnam(name)
        except KeyError:
            return                                     # made after this, by add_system_user
        if account.pw_gecos == ACCOUNT_MARK and os.path.isdir(account.pw_dir):
            os.chmod(account.pw_dir, 0o700)
