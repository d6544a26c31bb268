"""Collecting submissions: nbgrader's ``collect``, trusting nothing a student wrote.

nbgrader's own collect takes, for each student, the newest folder of the exchange's ``inbound``
by the time *in its name*, copies it with ``shutil.copytree`` (which follows symbolic links) and
keeps the student's ``timestamp.txt`` as the time of submission. A student writes all three: a
link to the instructor's source notebook was collected as their submission, a backdated time was
recorded as on time, and a folder named for another student was collected as theirs. The course's
:class:`CourseCollect` (``ExchangeFactory.collect`` in ``nbgrader_config.py``) collects from one of
two places, and in both the time comes from something the student cannot write:

- **the course's submission service** (the hub's, ``deploy/hub/submissions.py``; set
  ``CourseCollect.service_url``, as the hub's instructor settings do): each submission is a copy
  the service kept when it arrived, with the time it arrived by the hub's clock and the SHA-256 of
  each file, which are checked again here;
- **the inbound folder** (nbgrader's own exchange, without a service): only a folder that is the
  named student's own (not a link, owned by their account) is collected; inside it only regular
  files they own are copied, never through a link (a hard link to someone else's file is owned by
  that someone, so it is refused too); the time is the latest *change time* (``ctime``) of the
  folder and of what was copied, which the operating system sets and no user can set back.

Either way ``submitted/<student>/<lab>/timestamp.txt`` holds that time (nbgrader's late penalty,
formgrader and the hardened grader all read it), and ``exchange-record.json`` beside it keeps what
the student's own clock said, every file refused with the reason, and a flag where the two times
disagree; the hardened grader's report lists them. Every refusal is also in collect's log, which
formgrader shows.
"""
from __future__ import annotations

import base64
import datetime
import fnmatch
import glob
import hashlib
import json
import os
import pwd
import shutil
import stat
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.utils import parse_utc
from traitlets import Float, Unicode

RECORD = "exchange-record.json"          # written by collect beside each collected submission
TIMESTAMP = "timestamp.txt"
RESERVED = {RECORD, TIMESTAMP}            # names a student's files never take
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"


@dataclass
class ExchangeRecord:
    """What collect knows of one collected submission (``exchange-record.json``)."""

    student: str
    assignment: str
    source: str                           # "submission service" | "inbound folder"
    received: str                         # the trusted time (nbgrader's format, UTC)
    student_timestamp: str = ""           # what the student's own clock or folder said
    files: list = field(default_factory=list)
    refused: list = field(default_factory=list)     # [name, reason]
    flags: list = field(default_factory=list)

    @classmethod
    def read(cls, folder: Path) -> "ExchangeRecord | None":
        try:
            return cls(**json.loads((Path(folder) / RECORD).read_text()))
        except (OSError, ValueError, TypeError):
            return None


def utc_text(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime(TIMESTAMP_FORMAT)


def compare_times(record: ExchangeRecord, tolerance_seconds: float) -> None:
    """Flag a student's own time that is not a time, or that disagrees with the trusted one."""
    claim = record.student_timestamp.strip()
    if not claim:
        return
    try:
        said = parse_utc(claim)
    except (ValueError, OverflowError, TypeError):
        record.flags.append(f"the submission's own timestamp is not a time ({claim[:40]!r}); "
                            f"the exchange's {record.received} is used")
        return
    gap = (parse_utc(record.received) - said).total_seconds()
    if abs(gap) > tolerance_seconds:
        record.flags.append(f"the submission says {claim[:40]}, the exchange recorded {record.received} "
                            f"({abs(gap) / 3600:.1f} hours {'later' if gap > 0 else 'earlier'}): "
                            "the exchange's time is used")


# --- copying a student's folder without following anything --------------------------------------

@dataclass
class CopyRules:
    """nbgrader's rules for what a submission holds (``CourseDirectory``)."""
    ignore: list
    include: list
    max_file_bytes: int
    max_total_bytes: int


def copy_owned_tree(source: str, dest: Path, owner: int, rules: CopyRules,
                    refused: list, copied: list) -> float:
    """Copy the regular files of ``source`` that ``owner`` owns into ``dest``, opening every
    folder and file relative to its parent's descriptor with ``O_NOFOLLOW``, so that nothing is
    reached through a link, even one swapped in while copying. Returns the latest change time seen
    (the folder's and each copied file's); appends ``[name, reason]`` to ``refused``."""
    latest, total = 0.0, [0]
    root = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        latest = _copy_dir(root, "", dest, owner, rules, refused, copied, total)
    finally:
        os.close(root)
    return latest


def _copy_dir(fd: int, rel: str, dest: Path, owner: int, rules: CopyRules, refused, copied, total) -> float:
    info = os.fstat(fd)
    latest = info.st_ctime
    dest.mkdir(parents=True, exist_ok=True)
    for name in sorted(os.listdir(fd)):
        path = f"{rel}{name}"
        if any(fnmatch.fnmatch(name, p) for p in rules.ignore) or path == TIMESTAMP:
            continue                                  # the student's own time is read apart
        entry = os.stat(name, dir_fd=fd, follow_symlinks=False)
        why = ""
        if stat.S_ISLNK(entry.st_mode):
            why = "a symbolic link: never followed"
        elif entry.st_uid != owner:
            why = f"not the student's own file (owned by {_user(entry.st_uid)})"
        elif not (stat.S_ISREG(entry.st_mode) or stat.S_ISDIR(entry.st_mode)):
            why = "not a regular file"
        elif rel == "" and name in RESERVED:
            why = "a name the exchange keeps for its own record"
        if why:
            refused.append([path, why])
            continue
        if stat.S_ISDIR(entry.st_mode):
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                latest = max(latest, _copy_dir(sub, path + "/", dest / name, owner, rules, refused, copied, total))
            finally:
                os.close(sub)
            continue
        if not any(fnmatch.fnmatch(name, p) for p in rules.include):
            continue
        if entry.st_size > rules.max_file_bytes:
            refused.append([path, f"larger than {rules.max_file_bytes // 1000} KB"])
            continue
        if total[0] + entry.st_size > rules.max_total_bytes:
            refused.append([path, f"the submission is over {rules.max_total_bytes // 1000} KB in all"])
            continue
        src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
        try:
            opened = os.fstat(src)
            if (opened.st_ino, opened.st_dev) != (entry.st_ino, entry.st_dev) or not stat.S_ISREG(opened.st_mode):
                refused.append([path, "changed while it was being collected"])
                continue
            with os.fdopen(os.dup(src), "rb") as handle, open(dest / name, "wb") as out:
                shutil.copyfileobj(handle, out)
            latest = max(latest, os.fstat(src).st_ctime)
            total[0] += opened.st_size
            copied.append(path)
        finally:
            os.close(src)
    return latest


def _user(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


# --- the collect command ------------------------------------------------------------------------

class CourseCollect(ExchangeCollect):
    """``nbgrader collect`` from the submission service, or from the inbound folder (see above)."""

    service_url = Unicode("", help="the course's submission service API (the hub's "
                                   "COURSE_SUBMISSIONS_URL); empty: collect from the inbound folder"
                          ).tag(config=True)
    time_tolerance = Float(300.0, help="seconds a student's own timestamp may differ from the "
                                       "exchange's before it is flagged").tag(config=True)

    # -- where the submissions are -------------------------------------------------------------
    def init_src(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        self.refusals = []                          # (student or folder, reason), for the log
        candidates = self._service_candidates() if self.service_url else self._inbound_candidates()
        by_student = {}
        for candidate in candidates:
            by_student.setdefault(candidate["username"], []).append(candidate)
        self.duedate = self._duedate()
        self.src_records = [self._choose(v) for v in by_student.values()]

    def _duedate(self):
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.coursedir.db_url, self.coursedir.course_id) as gb:
            try:
                return gb.find_assignment(self.coursedir.assignment_id).duedate
            except MissingEntry:
                return None

    def _choose(self, records: list) -> dict:
        """Each student's newest submission by the trusted time (with --before-duedate, their
        newest on time, if any)."""
        records = sorted(records, key=lambda r: r["timestamp"], reverse=True)
        if self.duedate is not None and self.before_duedate:
            on_time = [r for r in records if r["timestamp"] <= self.duedate]
            return (on_time or records)[0]
        return records[0]

    def _refuse(self, what: str, reason: str) -> None:
        self.refusals.append((what, reason))
        self.log.error("not collected: %s: %s", what, reason)

    def _inbound_candidates(self) -> list:
        inbound = os.path.join(self.root, self.coursedir.course_id, "inbound")
        if not os.path.isdir(inbound):
            self.fail(f"Course not found: {inbound}")
        student = self.coursedir.student_id or "*"
        found = []
        for path in glob.glob(os.path.join(glob.escape(inbound), f"{student}+{self.coursedir.assignment_id}+*")):
            name = os.path.basename(path)
            parts = name.rsplit("+", 3)
            if len(parts) < 3:
                self._refuse(name, "not a submission folder's name")
                continue
            username, claim = parts[0], parts[2]
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
                self._refuse(name, "a link or not a folder: never followed")
                continue
            try:
                owner = pwd.getpwnam(username).pw_uid
            except KeyError:
                self._refuse(name, f"names {username}, who has no account here")
                continue
            if info.st_uid != owner:
                self._refuse(name, f"names {username} but was written by {_user(info.st_uid)}")
                continue
            found.append({"username": username, "filename": name, "path": path, "uid": owner,
                          "claim": claim, "timestamp": self._folder_time(path, owner)})
        return found

    @staticmethod
    def _folder_time(path: str, owner: int) -> datetime.datetime:
        """The latest change time of the folder and its own regular files: when the student last
        changed what would be collected (a lower bound no user can move earlier)."""
        latest = os.lstat(path).st_ctime
        for folder, dirs, names in os.walk(path, followlinks=False):
            for name in dirs + names:
                try:
                    info = os.lstat(os.path.join(folder, name))
                except OSError:
                    continue
                if info.st_uid == owner and not stat.S_ISLNK(info.st_mode):
                    latest = max(latest, info.st_ctime)
        return datetime.datetime.fromtimestamp(latest, datetime.timezone.utc).replace(tzinfo=None)

    def _service(self, path: str) -> dict:
        url = self.service_url.rstrip("/") + "/" + path
        request = urllib.request.Request(url, headers={
            "Authorization": f"token {os.environ.get('JUPYTERHUB_API_TOKEN', '')}"})
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            try:
                why = json.loads(exc.read()).get("error", exc.reason)
            except ValueError:
                why = exc.reason
            self.fail(f"the submission service refused: {why}")
        except (urllib.error.URLError, OSError) as exc:
            self.fail(f"the submission service at {self.service_url} did not answer ({exc})")

    def _service_candidates(self) -> list:
        listing = self._service(f"{self.coursedir.course_id}/{self.coursedir.assignment_id}")
        wanted = self.coursedir.student_id
        return [{"username": r["student"], "filename": r["id"], "receipt": r,
                 "claim": r.get("student_timestamp", ""), "timestamp": parse_utc(r["received"])}
                for r in listing.get("submissions", []) if not wanted or wanted in ("*", r["student"])]

    # -- copying ---------------------------------------------------------------------------------
    def init_dest(self):
        pass

    def copy_files(self):
        if not self.src_records:
            self.log.warning("No submissions of '%s' for course '%s' to collect",
                             self.coursedir.assignment_id, self.coursedir.course_id)
        for rec in self.src_records:
            student = rec["username"]
            dest = Path(self.coursedir.format_path(self.coursedir.submitted_directory, student,
                                                   self.coursedir.assignment_id))
            if dest.is_dir() and not self._replaces(dest, rec["timestamp"]):
                self.log.info("Submission already exists, use --update to update: %s %s", student,
                              self.coursedir.assignment_id)
                continue
            staging = dest.parent / f".{dest.name}.collecting"
            shutil.rmtree(staging, ignore_errors=True)
            try:
                record = self._collect_one(rec, staging)
            except Exception as exc:                   # one student's failure stops nobody else
                shutil.rmtree(staging, ignore_errors=True)
                self._refuse(f"{student} ({rec['filename']})", f"could not be collected: {exc}")
                continue
            if dest.exists():
                shutil.rmtree(dest)
                self.log.info("Updating submission: %s %s", student, self.coursedir.assignment_id)
            else:
                self.log.info("Collecting submission: %s %s", student, self.coursedir.assignment_id)
            staging.rename(dest)
            for name, why in record.refused:
                self.log.error("not collected: %s's %s: %s", student, name, why)
            for flag in record.flags:
                self.log.warning("%s: %s", student, flag)

    def _replaces(self, dest: Path, new: datetime.datetime) -> bool:
        """nbgrader's rule: with --update a newer submission replaces the collected one; with
        --before-duedate any other one does (times: the exchange's, never the student's)."""
        existing = ExchangeRecord.read(dest)
        try:
            old = parse_utc(existing.received) if existing else self.coursedir.get_existing_timestamp(str(dest))
        except (ValueError, OverflowError):          # a hand-made timestamp.txt that is no time
            old = None
        if self.update and (old is None or new > old):
            return True
        return bool(self.before_duedate and old != new)

    def _rules(self) -> CopyRules:
        return CopyRules(list(self.coursedir.ignore), list(self.coursedir.include),
                         self.coursedir.max_file_size * 1000, self.coursedir.max_dir_size * 1000)

    def _collect_one(self, rec: dict, staging: Path) -> ExchangeRecord:
        student, assignment = rec["username"], self.coursedir.assignment_id
        record = ExchangeRecord(student, assignment, "", "", student_timestamp=str(rec.get("claim", "")))
        if "receipt" in rec:
            record.source = "submission service"
            received = self._from_service(rec, staging, record)
        else:
            record.source = "inbound folder"
            latest = copy_owned_tree(rec["path"], staging, rec["uid"], self._rules(), record.refused,
                                     record.files)
            received = datetime.datetime.fromtimestamp(latest, datetime.timezone.utc)
            secret = os.path.join(rec["path"], "submission_secret.txt")
            record.student_timestamp = self._own_timestamp(rec["path"], rec["uid"]) or record.student_timestamp
            if "submission_secret.txt" not in record.files and os.path.lexists(secret):
                record.flags.append("submission_secret.txt was not collected: the student's feedback "
                                    "cannot be delivered through the exchange")
        record.received = utc_text(received)
        compare_times(record, self.time_tolerance)
        (staging / TIMESTAMP).write_text(record.received)
        (staging / RECORD).write_text(json.dumps(asdict(record), indent=1))
        return record

    @staticmethod
    def _own_timestamp(path: str, owner: int) -> str:
        """The student's own ``timestamp.txt`` (never through a link), kept only for comparison."""
        try:
            fd = os.open(os.path.join(path, TIMESTAMP), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != owner:
                return ""
            return os.read(fd, 256).decode("utf-8", "replace").strip()
        finally:
            os.close(fd)

    def _from_service(self, rec: dict, staging: Path, record: ExchangeRecord) -> datetime.datetime:
        kept = self._service(f"{self.coursedir.course_id}/{self.coursedir.assignment_id}/"
                             f"{rec['username']}/{rec['filename']}")
        receipt = kept["receipt"]
        staging.mkdir(parents=True)
        for name, digest in receipt["files"].items():
            data = base64.b64decode(kept["files"][name])
            if hashlib.sha256(data).hexdigest() != digest:
                record.refused.append([name, "does not match the service's receipt"])
                continue
            parts = Path(name).parts
            if name in RESERVED | {"submission_secret.txt"} or ".." in parts or Path(name).is_absolute():
                record.refused.append([name, "a name the exchange keeps for its own record"])
                continue
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
            record.files.append(name)
        if receipt.get("secret"):
            (staging / "submission_secret.txt").write_text(receipt["secret"])
        return datetime.datetime.strptime(receipt["received"].replace(" UTC", ""), "%Y-%m-%d %H:%M:%S.%f"
                                          ).replace(tzinfo=datetime.timezone.utc)

    def start(self):
        super().start()
        if self.refusals:
            self.log.error("%d submission folder(s) refused: see above", len(self.refusals))


class ServiceReleaseAssignment(ExchangeReleaseAssignment):
    """nbgrader's release, without the inbound folder it would make (mode 2733: every student may
    write into it): where submissions go to the submission service, nothing is collected from it.
    The hub's instructor settings select it."""

    def ensure_directory(self, path, mode):
        if os.path.abspath(path) == os.path.abspath(getattr(self, "inbound_path", "")):
            return
        super().ensure_directory(path, mode)


# the name this module had before it collected anything but the owner's folders
OwnerCheckedCollect = CourseCollect
