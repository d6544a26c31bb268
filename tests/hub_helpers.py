"""A real course hub for the tests: system accounts, JupyterHub + configurable-http-proxy on 127.0.0.1.

Everything a test starts here it stops: the hub process group (proxy and users' servers included),
the accounts (``userdel --remove``) and the exchange folder.
"""
from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

REPO = Path(__file__).resolve().parents[1]
HUB = REPO / "deploy" / "hub"
PREFIX = Path(os.environ.get("COURSE_HUB_PREFIX", "/opt/attention-course"))
USER_ENV = PREFIX / "env"
COURSE_ID = "attention-and-transformers"


def _course_script():
    """``deploy/hub/course.py``, the hub's command, imported (it does no work at import)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("course_hub_command", HUB / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CREATED_MARK = _course_script().CREATED_MARK        # the mark on the accounts course.py makes
STOP_SECONDS = 90                                  # course.py gives the hub 60 s, then kills it


def account_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def missing_requirements() -> str:
    """Why a hub cannot be started here ("" when it can)."""
    if os.geteuid() != 0:
        return "the hub tests make system accounts: run them as root"
    for tool in ("useradd", "userdel", "runuser", "npm"):
        if shutil.which(tool) is None:
            return f"{tool} is missing"
    return ""


def prepare() -> None:
    """The users' environment (``make hub-env``) and the pinned proxy (``npm ci``), once. The hub's
    test files run side by side under ``make test`` and both prepare: one at a time (two ``npm ci``
    in one folder at once fail, and two builds of one prefix would write over each other)."""
    with open(f"{PREFIX}.prepare-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([sys.executable, str(HUB / "user_env.py"), "--prefix", str(PREFIX)],
                       check=True, stdout=subprocess.DEVNULL)
        if not (HUB / "node_modules" / ".bin" / "configurable-http-proxy").exists():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=HUB, check=True,
                           stdout=subprocess.DEVNULL)


def user_env_module():
    """``deploy/hub/user_env.py``, imported (it is a script, not in a package)."""
    spec = importlib.util.spec_from_file_location("user_env", HUB / "user_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_ports(n: int = 4) -> int:
    """A first port p with p .. p + n - 1 all free on 127.0.0.1 (proxy, hub, proxy API, the
    submission service)."""
    for _ in range(200):
        base = 20000 + secrets.randbelow(30000)
        try:
            for p in range(base, base + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError("no free ports")


class Hub:
    """One running hub and its roster. Use as a context manager."""

    def __init__(self, instructors: list[str], students: list[str], setup: bool = True):
        """``setup``: make the roster's accounts and the exchange first (``course.py setup``);
        without it (the LTI login's hub) accounts are made at first login."""
        self.instructors, self.students, self.setup = instructors, students, setup
        self.password = secrets.token_urlsafe(12)
        self.tmp = Path(tempfile.mkdtemp(prefix="course-hub-"))
        self.tmp.chmod(0o755)
        self.exchange = self.tmp / "exchange"
        self.submissions = self.tmp / "submissions"
        self.exchange_user = f"tx{secrets.token_hex(3)}"      # the submission service's account
        (self.tmp / "roster.json").write_text(json.dumps({"instructors": instructors, "students": students}))
        self.roster = instructors + students      # the accounts course.py removes (an LTI hub's come later)
        self.port = free_ports()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "COURSE_ID": COURSE_ID, "COURSE_ROSTER": str(self.tmp / "roster.json"),
                    "COURSE_EXCHANGE": str(self.exchange), "COURSE_USER_ENV": str(USER_ENV),
                    "COURSE_SUBMISSIONS": str(self.submissions), "COURSE_EXCHANGE_USER": self.exchange_user,
                    "COURSE_HUB_STATE": str(self.tmp / "state"), "COURSE_HUB_PORT": str(self.port),
                    "COURSE_HUB_AUTH": "shared-password", "COURSE_HUB_PASSWORD": self.password}
        self.process = None
        self.tokens: dict[str, str] = {}

    # --- life cycle --------------------------------------------------------------------------
    def __enter__(self):
        """Start the hub as ``make hub`` does (``course.py start``: set-up, then the hub)."""
        try:
            self.log = open(self.tmp / "start.log", "w")
            self.process = subprocess.Popen(
                [sys.executable, str(HUB / "course.py"), "start", *(["--create-users"] if self.setup else [])],
                cwd=self.tmp, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
            self._wait_until_up()
        except BaseException:
            self.__exit__(*sys.exc_info())                    # the start's error is the one raised
            raise
        return self

    def _wait_until_up(self, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the hub exited ({self.process.returncode}):\n{self.log_text()}")
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=5).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the hub did not come up:\n{self.log_text()}")

    @property
    def hub_log(self) -> Path:
        """JupyterHub's own log (``course.py start`` writes it into the hub's state)."""
        return self.tmp / "state" / "hub.log"

    def log_text(self) -> str:
        start = (self.tmp / "start.log").read_text() if (self.tmp / "start.log").exists() else ""
        hub = self.hub_log.read_text() if self.hub_log.exists() else ""
        return (start[-3000:] + "\n" + hub[-6000:]).strip()

    def __exit__(self, *exc):
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)       # course.py stops the hub, which stops
                                                              # users' servers and the proxy
            try:                                              # course.py kills a hub that has not
                self.process.wait(timeout=STOP_SECONDS)       # stopped within its own 60 s
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._kill_what_runs_in(self.tmp / "state")           # a hub course.py left running (it did:
                                                              # its accounts could not be removed)
        for name in self.instructors + self.students + [self.exchange_user]:   # own sessions
            subprocess.run(["pkill", "-KILL", "-u", name], check=False)
        removed = subprocess.run([sys.executable, str(HUB / "course.py"), "remove-users"], env=self.env,
                                 check=False, capture_output=True, text=True)
        shutil.rmtree(self.tmp, ignore_errors=True)
        left = [name for name in self.roster + [self.exchange_user]     # what course.py was told
                if account_exists(name) and pwd.getpwnam(name).pw_gecos == CREATED_MARK]
        if left and exc == (None, None, None):
            raise RuntimeError(f"the hub's accounts outlived it: {left}\n{removed.stdout}{removed.stderr}")

    @staticmethod
    def _kill_what_runs_in(folder: Path) -> None:
        """SIGKILL every process (and its group) whose working folder is ``folder``."""
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if Path(os.readlink(proc / "cwd")).resolve() == folder.resolve():
                    os.killpg(os.getpgid(int(proc.name)), signal.SIGKILL)
            except (OSError, ValueError):
                continue

    # --- a user's view ---------------------------------------------------------------------------
    def login(self, name: str) -> requests.Session:
        """Log in through the hub's form, as a browser would; the session holds the cookies."""
        s = requests.Session()
        s.get(f"{self.url}/hub/login", timeout=30).raise_for_status()
        r = s.post(f"{self.url}/hub/login", timeout=30, allow_redirects=False,
                   data={"username": name, "password": self.password, "_xsrf": s.cookies.get("_xsrf")})
        if r.status_code != 302:
            raise RuntimeError(f"login of {name} refused ({r.status_code})")
        return s

    def token(self, name: str) -> str:
        """An API token the user made for themself through the hub's REST API."""
        if name not in self.tokens:
            s = self.login(name)
            r = s.post(f"{self.url}/hub/api/users/{name}/tokens", json={"note": "course tests"},
                       headers={"X-XSRFToken": s.cookies.get("_xsrf")}, timeout=30)
            r.raise_for_status()
            self.tokens[name] = r.json()["token"]
        return self.tokens[name]

    def api(self, name: str, method: str, path: str, **kw) -> requests.Response:
        """A request as ``name`` to the hub (``/hub/...``) or a server (``/user/...``)."""
        headers = {"Authorization": f"token {self.token(name)}", **kw.pop("headers", {})}
        return requests.request(method, f"{self.url}{path}", headers=headers, timeout=kw.pop("timeout", 120),
                                **kw)

    def start_server(self, name: str) -> None:
        r = self.api(name, "POST", f"/hub/api/users/{name}/server")
        if r.status_code not in (201, 202):
            raise RuntimeError(f"spawn of {name}: {r.status_code} {r.text}")

    def wait_ready(self, name: str, timeout: float = 180) -> float:
        """Seconds until the user's server answers through the proxy."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            info = self.api(name, "GET", f"/hub/api/users/{name}").json()
            server = (info.get("servers") or {}).get("")
            if server and server.get("ready"):
                if self.api(name, "GET", f"/user/{name}/api/status").status_code == 200:
                    return time.monotonic() - start
            time.sleep(0.5)
        raise RuntimeError(f"the server of {name} did not start:\n{self.log_text()}")

    def nbgrader_action(self, name: str, action: str, assignment: str) -> dict:
        """A student's Assignments-tab button: fetch, submit or fetch_feedback."""
        r = self.api(name, "POST", f"/user/{name}/assignments/{action}",
                     data={"course_id": COURSE_ID, "assignment_id": assignment})
        r.raise_for_status()
        return r.json()

    def formgrader(self, name: str, method: str, path: str, **kw) -> requests.Response:
        r = self.api(name, method, f"/user/{name}/formgrader/api/{path}", **kw)
        r.raise_for_status()
        return r

    def save_notebook(self, name: str, path: str, nb: dict) -> None:
        """Save a notebook into the user's files, as the editor does (the contents API)."""
        r = self.api(name, "PUT", f"/user/{name}/api/contents/{path}",
                     json={"type": "notebook", "format": "json", "content": nb})
        r.raise_for_status()

    def as_user(self, name: str, *cmd: str, cwd: str | None = None, check: bool = False,
                timeout: float = 600) -> subprocess.CompletedProcess:
        """A command as that account, with the environment its server has (its terminal)."""
        home = os.path.expanduser(f"~{name}")
        env = ["env", "-i", f"HOME={home}", f"USER={name}", f"PATH={USER_ENV / 'bin'}:/usr/bin:/bin",
               f"COURSE_ID={COURSE_ID}", f"COURSE_EXCHANGE={self.exchange}",
               f"COURSE_SUBMISSIONS_URL=http://127.0.0.1:{self.port + 3}/services/course-submissions/api/",
               f"JUPYTER_CONFIG_PATH={USER_ENV / 'share' / 'attention-course' / 'roles' / self.role(name)}"]
        if self.role(name) == "instructor":              # as jupyterhub_config.role_environment
            env.append(f"PYTHONPATH={USER_ENV / 'instructor'}")
        return subprocess.run(["runuser", "-u", name, "--", *env, *cmd], cwd=cwd or home, check=check,
                              capture_output=True, text=True, timeout=timeout)

    def terminal(self, name: str) -> "Terminal":
        """A new JupyterLab terminal of ``name``'s server (see :class:`Terminal`)."""
        return Terminal(self, name)

    def role(self, name: str) -> str:
        return "instructor" if name in self.instructors else "student"


# the front-end extensions only instructors' servers load
FORMGRADER = {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"}


def disabled_extensions(page) -> set[str]:
    """The front-end extensions a user's server told this (Playwright) page not to load."""
    config = page.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent)")
    return set(config.get("disabledExtensions") or [])


class Terminal:
    """A terminal of a user's server: the one *File > New > Terminal* opens in JupyterLab (the
    server's terminal manager starts the same login shell), driven through the websocket that
    JupyterLab's xterm.js uses, with the user's token. Commands are typed as a person types them."""

    def __init__(self, hub: Hub, name: str):
        import websocket

        made = hub.api(name, "POST", f"/user/{name}/api/terminals")
        made.raise_for_status()
        self.hub, self.name, self.term = hub, name, made.json()["name"]
        url = hub.url.replace("http://", "ws://") + f"/user/{name}/terminals/websocket/{self.term}"
        self.ws = websocket.create_connection(url, header=[f"Authorization: token {hub.token(name)}"],
                                              timeout=30)
        self.transcript = ""

    def run(self, command: str, timeout: float = 900) -> tuple[int, str]:
        """Type ``command`` and Enter; wait for it to finish. Returns its exit status and what the
        terminal showed meanwhile."""
        import re

        marker = secrets.token_hex(4)
        self.ws.send(json.dumps(["stdin", f"{command}; echo __done_{marker}_$?__\r"]))
        shown, deadline = "", time.monotonic() + timeout
        pattern = re.compile(rf"__done_{marker}_(\d+)__")
        while time.monotonic() < deadline:
            try:
                kind, *data = json.loads(self.ws.recv())
            except Exception:                       # the socket's own timeout: keep waiting
                continue
            if kind == "stdout":
                shown += data[0]
                found = pattern.search(shown)
                if found:
                    self.transcript += shown
                    return int(found.group(1)), shown
        self.transcript += shown
        raise TimeoutError(f"{command!r} did not finish in {timeout} s:\n{shown[-3000:]}")

    def close(self) -> None:
        self.ws.close()
        self.hub.api(self.name, "DELETE", f"/user/{self.name}/api/terminals/{self.term}")
