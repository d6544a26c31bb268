"""Set the course up on the hub machine (run as root): accounts, exchange, the instructor's folder.

    python deploy/hub/course.py setup [--create-users]     # make hub does this
    python deploy/hub/course.py remove-users               # the accounts --create-users made

Reads the same environment as ``jupyterhub_config.py`` (COURSE_ID, COURSE_ROSTER, COURSE_EXCHANGE).

- Every account on the roster gets a private home (0700): nobody reads another's work.
- The exchange root is world-writable and sticky (1777), as nbgrader needs, and the course's own
  folder in it is made now, owned by the first instructor, with nbgrader's modes: ``outbound`` 0755
  (students read releases), ``inbound`` 2733 (students drop submissions, nobody lists them),
  ``feedback`` 0711. Made in advance, no student can claim the course's name first.
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
        "course_id": os.environ.get("COURSE_ID", "attention-and-transformers"),
        "exchange": Path(os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")),
        "instructors": list(roster["instructors"]),
        "students": list(roster["students"]),
    }


def account(name: str, create: bool) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        if not create:
            sys.exit(f"there is no system account {name!r}: create it or pass --create-users")
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--comment", CREATED_MARK, name],
                   check=True)
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
    for name, mode in (("outbound", 0o755), ("inbound", 0o2733), ("feedback", 0o711)):
        (course / name).mkdir(exist_ok=True)
        own(course / name, owner, mode)


def make_course_folder(course_id: str, owner: pwd.struct_passwd) -> Path:
    """The instructor's course: config and sources, copied once (their later edits are theirs)."""
    folder = Path(owner.pw_dir) / course_id
    if not folder.exists():
        folder.mkdir()
        shutil.copy2(REPO / "nbgrader_config.py", folder / "nbgrader_config.py")
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
    folder = make_course_folder(s["course_id"], owner)
    print(f"course {s['course_id']}: exchange {s['exchange']}, instructor folder {folder}, "
          f"{len(s['students'])} students")


def remove_users() -> None:
    s = settings()
    for name in s["instructors"] + s["students"]:
        try:
            if pwd.getpwnam(name).pw_gecos == CREATED_MARK:
                subprocess.run(["userdel", "--remove", name], check=False, stderr=subprocess.DEVNULL)
        except KeyError:
            pass


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup").add_argument("--create-users", action="store_true")
    sub.add_parser("remove-users")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("run it as root: it makes accounts and the exchange")
    if args.command == "setup":
        setup(args.create_users)
    else:
        remove_users()
    return 0


if __name__ == "__main__":
    sys.exit(main())
