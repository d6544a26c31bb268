"""Set the course up on the hub machine (run as root): accounts, exchange, the instructor's folder.

    python deploy/hub/course.py start [--create-users]     # make hub: set up, start, say how to log in
    python deploy/hub/course.py setup [--create-users]     # only the set-up (start does it first)
    python deploy/hub/course.py service                    # only the submission service's account
    python deploy/hub/course.py remove-users [--data]      # make hub-remove-demo: the accounts
                                                           # --create-users made (and the hub's data)

Reads the same environment as ``jupyterhub_config.py`` (COURSE_ID, COURSE_ROSTER, COURSE_EXCHANGE).

- Every account on the roster gets a private home (0700): nobody reads another's work.
- The exchange root is world-writable and sticky (1777), as nbgrader needs, and the course's own
  folder in it is made now, owned by the first instructor, with nbgrader's modes: ``outbound`` 0755
  (students read releases) and ``feedback`` 0711. Made in advance, no student can claim the
  course's name first. There is no ``inbound`` folder: submissions go to the submission service.
- The submission service's account (``COURSE_EXCHANGE_USER``: a system account, no home, no
  login) and its store (``COURSE_SUBMISSIONS``, 0700, that account's alone).
- ``/etc/profile.d/attention-course.sh``: JupyterLab's terminals are login shells, whose
  ``/etc/profile`` sets ``PATH`` afresh; this puts the course environment first again.
- The first instructor gets ``~/<course id>/``: the course's ``nbgrader_config.py`` and ``source/``
  (each lab's notebook and checks), never copied anywhere a student can read.
"""
from __future__ import annotations

import argparse
import json
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CREATED_MARK = "attention-course hub account"      # the GECOS field of accounts this script made


def settings() -> dict:
    roster = json.loads(Path(os.environ.get("COURSE_ROSTER", HERE / "roster.json")).read_text())
    return {
        "state": Path(os.environ.get("COURSE_HUB_STATE", "/srv/attention-course-hub")),
        "url": f"http://{os.environ.get('COURSE_HUB_IP', '127.0.0.1')}:{os.environ.get('COURSE_HUB_PORT', '8000')}",
        "course_id": os.environ.get("COURSE_ID", "attention-and-transformers"),
        "exchange": Path(os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")),
        "submissions": Path(os.environ.get("COURSE_SUBMISSIONS", "/srv/nbgrader/submissions")),
        "exchange_user": os.environ.get("COURSE_EXCHANGE_USER", "course-exchange"),
        "instructors": list(roster["instructors"]),
        "students": list(roster["students"]),
    }


def account(name: str, create: bool) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        if not create:
            sys.exit(f"there is no system account {name!r}: create it or pass --create-users")
    subprocess.run(["useradd", "--create-home", "-K", "HOME_MODE=0700", "--shell", "/bin/bash",
                    "--comment", CREATED_MARK, name], check=True)
    return pwd.getpwnam(name)


def own(path: Path, user: pwd.struct_passwd, mode: int) -> None:
    os.chown(path, user.pw_uid, user.pw_gid)
    path.chmod(mode)


def make_exchange(root: Path, course_id: str, owner: pwd.struct_passwd) -> None:
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o1777)
    course = root / course_id
    course.mkdir(exist_ok=True)
    own(course, owner, 0o755)
    for name, mode in (("outbound", 0o755), ("feedback", 0o711)):
        (course / name).mkdir(exist_ok=True)
        own(course / name, owner, mode)


def service_account(name: str) -> pwd.struct_passwd:
    """The submission service's system account (made once; no home, no login shell)."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent",
                        "--shell", "/usr/sbin/nologin", "--comment", CREATED_MARK, name], check=True)
        return pwd.getpwnam(name)


def make_store(store: Path, account: pwd.struct_passwd) -> None:
    """The submission service's store: that account's alone."""
    store.mkdir(parents=True, exist_ok=True)
    own(store, account, 0o700)


def make_course_folder(course_id: str, owner: pwd.struct_passwd) -> Path:
    """The instructor's course: config and sources, copied once (their later edits are theirs)."""
    folder = Path(owner.pw_dir) / course_id
    if not folder.exists():
        folder.mkdir()
        shutil.copy2(REPO / "nbgrader_config.py", folder / "nbgrader_config.py")
        shutil.copy2(REPO / "edition.yml", folder / "edition.yml")      # the student site (releases)
        shutil.copytree(REPO / "source", folder / "source",
                        ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        for path in [folder, *folder.rglob("*")]:
            os.chown(path, owner.pw_uid, owner.pw_gid)
    folder.chmod(0o700)
    return folder


def setup(create_users: bool) -> None:
    s = settings()
    if not s["instructors"]:
        sys.exit("the roster names no instructor")
    users = {name: account(name, create_users) for name in s["instructors"] + s["students"]}
    for user in users.values():
        Path(user.pw_dir).chmod(0o700)
    owner = users[s["instructors"][0]]
    make_exchange(s["exchange"], s["course_id"], owner)
    setup_service()
    folder = make_course_folder(s["course_id"], owner)
    print(f"course {s['course_id']}: exchange {s['exchange']}, instructor folder {folder}, "
          f"{len(s['students'])} students")


PROFILE = Path(os.environ.get("COURSE_PROFILE_SCRIPT", "/etc/profile.d/attention-course.sh"))
PROFILE_TEXT = """\
# The course hub's environment in login shells (written by deploy/hub/course.py). A JupyterLab
# terminal is a login shell, and /etc/profile sets PATH afresh: put the course environment, which
# the hub names in COURSE_USER_ENV, first again, so that python and nbgrader are the course's.
if [ -n "${COURSE_USER_ENV:-}" ] && [ -d "$COURSE_USER_ENV/bin" ]; then
    case ":$PATH:" in
        *":$COURSE_USER_ENV/bin:"*) ;;
        *) PATH="$COURSE_USER_ENV/bin:$PATH"; export PATH ;;
    esac
fi
"""


def write_profile() -> None:
    """The login shells' fix-up of PATH (the same text every time: several hubs may write it)."""
    if not PROFILE.exists() or PROFILE.read_text() != PROFILE_TEXT:
        PROFILE.parent.mkdir(parents=True, exist_ok=True)
        staging = PROFILE.with_name(f".{PROFILE.name}.{os.getpid()}")
        staging.write_text(PROFILE_TEXT)
        staging.chmod(0o644)
        staging.replace(PROFILE)


def setup_service() -> None:
    """What the hub needs before it starts, even before any instructor exists (an LTI hub):
    the submission service's account and store, and the login shells' PATH."""
    s = settings()
    make_store(s["submissions"], service_account(s["exchange_user"]))
    write_profile()


def hub_answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/hub/api/", timeout=3) as answer:
            return answer.status == 200
    except OSError:
        return False


def secret_in(path: Path, hex_bytes: int = 0) -> str:
    """A secret made once and kept in ``path`` (0600), the same across restarts: ``hex_bytes``
    random bytes in hex, or a short password."""
    import secrets

    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(hex_bytes) if hex_bytes else secrets.token_urlsafe(9))
    return path.read_text().strip()


def demo_password(state: Path) -> str:
    """The shared password of a try-out hub, kept in the hub's state."""
    return secret_in(state / "demo-password")


def start(create_users: bool) -> int:
    """Set the course up, start the hub in the background of this command, wait until it answers,
    say where and how to log in; Ctrl-C (or SIGTERM) stops it with every user's server."""
    import signal
    import time

    s = settings()
    if hub_answers(s["url"]):
        sys.exit(f"a hub already answers at {s['url']}: stop it first, or set COURSE_HUB_PORT")
    print("[1/3] setting up the course (accounts, exchange, submission service) ...", flush=True)
    if s["instructors"]:
        setup(create_users)
    else:                                    # an LTI hub before its instructor's first launch
        setup_service()
        print("      the roster names no instructor yet: after your first launch from the LMS, put "
              "your lti-... name in its instructors and run this again")
    state = s["state"]
    state.mkdir(parents=True, exist_ok=True, mode=0o700)
    env = dict(os.environ)
    env.setdefault("JUPYTERHUB_CRYPT_KEY", secret_in(state / "crypt-key", 32))   # for auth_state
    auth = env.setdefault("COURSE_HUB_AUTH", "pam")
    if auth == "shared-password":
        env.setdefault("COURSE_HUB_PASSWORD", demo_password(state))
    log = state / "hub.log"
    print(f"[2/3] starting JupyterHub (its log: {log}) ...", flush=True)
    with open(log, "a") as out:
        hub = subprocess.Popen([str(Path(sys.executable).with_name("jupyterhub")), "-f",
                                str(HERE / "jupyterhub_config.py")], cwd=state, env=env, stdout=out,
                               stderr=subprocess.STDOUT, start_new_session=True)

    asked_to_stop = []                                    # when Ctrl-C or SIGTERM came

    def stop(*_):
        # only ask here; the loop at the end waits. (Waiting in this handler, which runs inside
        # the main thread's own wait for the hub, could never reap the hub: that wait holds the
        # process's lock, so every stop took the whole 60 s and then killed a hub long gone.)
        if not asked_to_stop:
            asked_to_stop.append(time.monotonic())
            try:
                os.killpg(hub.pid, signal.SIGTERM)        # the hub stops the servers and proxy
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    deadline = time.monotonic() + 180
    while not asked_to_stop and not hub_answers(s["url"]):
        if hub.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text()[-3000:]
            stop_now = hub.poll() is None
            if stop_now:
                os.killpg(hub.pid, signal.SIGTERM)
            sys.exit(f"the hub did not start; the end of its log ({log}):\n{tail}")
        time.sleep(0.5)
    if not asked_to_stop:
        say_it_is_up(s, state, env, auth)
    while hub.poll() is None:
        if asked_to_stop and time.monotonic() > asked_to_stop[0] + 60:
            os.killpg(hub.pid, signal.SIGKILL)            # not stopped within 60 s
            hub.wait()
        time.sleep(0.2)
    if asked_to_stop:
        print("the hub has stopped (its data is kept: start it again with `make hub`)", flush=True)
        return 0
    print(f"the hub exited on its own ({hub.returncode}); see {log}", file=sys.stderr)
    return 1


def say_it_is_up(s: dict, state: Path, env: dict, auth: str) -> None:
    people = ", ".join(s["instructors"] + s["students"]) or "(accounts made at each first launch)"
    print(f"[3/3] the course hub is up: {s['url']}\n"
          f"      log in as: {people}" + (f"\n      password (the same for everyone; kept in "
                                        f"{state / 'demo-password'}): {env['COURSE_HUB_PASSWORD']}"
                                        if auth == "shared-password" else
                                        f"\n      with: {auth} (see the guide)") +
          "\n      stop it with Ctrl-C; remove the demo with `make hub-remove-demo`", flush=True)


def stop_processes(name: str, seconds: float = 10) -> None:
    """End the account's processes (a kernel left running, say): asked first, then killed."""
    import time

    subprocess.run(["pkill", "-TERM", "-u", name], check=False)
    deadline = time.monotonic() + seconds
    while subprocess.run(["pgrep", "-u", name], capture_output=True).returncode == 0:
        if time.monotonic() > deadline:
            subprocess.run(["pkill", "-KILL", "-u", name], check=False)
            time.sleep(0.5)
            break
        time.sleep(0.2)


def remove_users(data: bool) -> int:
    """Remove the accounts ``--create-users`` made (and with ``data`` the hub's state, the
    exchange and the submission store, whose files would otherwise belong to whoever gets those
    uids next); says what it did, and exits non-zero when anything could not be removed."""
    s = settings()
    if hub_answers(s["url"]):
        sys.exit(f"the hub still answers at {s['url']}: stop it first (Ctrl-C where it runs)")
    failed = []
    for name in s["instructors"] + s["students"] + [s["exchange_user"]]:
        try:
            if pwd.getpwnam(name).pw_gecos != CREATED_MARK:
                print(f"kept {name}: not made by this script")
                continue
        except KeyError:
            continue
        stop_processes(name)
        done = subprocess.run(["userdel", "--remove", name], capture_output=True, text=True)
        if done.returncode not in (0, 12):              # 12: the home could not be removed
            failed.append(f"{name}: {done.stderr.strip() or f'userdel exited {done.returncode}'}")
        else:
            print(f"removed the account {name} and its home")
    if data:
        for path in (s["state"], s["exchange"] / s["course_id"], s["submissions"]):
            if path.exists():
                shutil.rmtree(path)
                print(f"removed {path}")
        # the folders setup made above them (/srv/nbgrader/exchange, /srv/nbgrader), where
        # nothing else (another course's exchange) is left in them
        for folder in dict.fromkeys([s["exchange"], s["exchange"].parent, s["submissions"].parent]):
            try:
                folder.rmdir()
                print(f"removed {folder} (empty)")
            except OSError:
                pass
    if failed:
        print("could not remove:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("start").add_argument("--create-users", action="store_true")
    sub.add_parser("setup").add_argument("--create-users", action="store_true")
    sub.add_parser("service")
    sub.add_parser("remove-users").add_argument("--data", action="store_true")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("run it as root: it makes accounts and the exchange")
    if args.command == "start":
        return start(args.create_users)
    if args.command == "setup":
        setup(args.create_users)
    elif args.command == "service":
        setup_service()
    else:
        return remove_users(args.data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
