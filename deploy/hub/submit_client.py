"""nbgrader's Submit, on the course hub: the assignment's files go to the course's submission
service (``submissions.py``), not into a folder of the exchange that students write.

Selected in the users' nbgrader settings (``roles/*/nbgrader_config.py``) when the hub sets
``COURSE_SUBMISSIONS_URL``; the *Assignment List*'s Submit button and ``nbgrader submit`` in a
terminal both use it. What it sends is what nbgrader's own submit would copy -- the files of the
fetched assignment folder, by nbgrader's ``CourseDirectory.ignore``, ``include`` and
``max_file_size`` -- but only regular files: a link (to someone else's notebook, say) is never
followed, and named in the log instead. The service stamps the submission with the time it arrived;
that time, not this machine's clock, is the one written into nbgrader's local record of the
submission (the *Assignment List* shows it) and the one the instructor grades by.
"""
from __future__ import annotations

import base64
import fnmatch
import json
import os
import secrets
import stat
import urllib.error
import urllib.request

from nbgrader.exchange.default.submit import ExchangeSubmit
from traitlets import Unicode

TIMEOUT = 120


class ServiceSubmit(ExchangeSubmit):
    """Submit through the course's submission service (no inbound folder is needed)."""

    service_url = Unicode(os.environ.get("COURSE_SUBMISSIONS_URL", ""),
                          help="the submission service's API, e.g. http://127.0.0.1:8004/"
                               "services/course-submissions/api/").tag(config=True)

    def init_dest(self):
        if self.coursedir.course_id == "":
            self.fail("No course id specified. Re-run with --course flag.")
        if not self.service_url:
            self.fail("The course's submission service is not configured (COURSE_SUBMISSIONS_URL).")
        self.cache_path = os.path.join(self.cache, self.coursedir.course_id)

    def files_to_send(self) -> dict[str, bytes]:
        """The assignment folder's regular files, as nbgrader's rules select them; links and
        other special files are left out, and said so."""
        ignore, include = self.coursedir.ignore, self.coursedir.include
        limit, files = self.coursedir.max_file_size * 1000, {}
        for folder, dirs, names in os.walk(self.src_path, followlinks=False):
            rel_folder = os.path.relpath(folder, self.src_path)
            for name in list(dirs):
                if os.path.islink(os.path.join(folder, name)) or any(fnmatch.fnmatch(name, p) for p in ignore):
                    dirs.remove(name)
                    if os.path.islink(os.path.join(folder, name)):
                        self.log.warning("Not submitted: %s is a link", os.path.join(rel_folder, name))
            for name in names:
                rel = os.path.normpath(os.path.join(rel_folder, name))
                if any(fnmatch.fnmatch(name, p) for p in ignore) or not any(fnmatch.fnmatch(name, p) for p in include):
                    continue
                info = os.lstat(os.path.join(folder, name))
                if not stat.S_ISREG(info.st_mode):
                    self.log.warning("Not submitted: %s is a link or not a regular file", rel)
                    continue
                if info.st_size > limit:
                    self.log.warning("Not submitted: %s is larger than %d KB", rel, self.coursedir.max_file_size)
                    continue
                fd = os.open(os.path.join(folder, name), os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as handle:
                    files[rel] = handle.read()
        return files

    def send(self, files: dict[str, bytes], secret: str) -> dict:
        token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
        url = self.service_url.rstrip("/") + f"/{self.coursedir.course_id}/{self.coursedir.assignment_id}"
        body = json.dumps({"files": {k: base64.b64encode(v).decode() for k, v in files.items()},
                           "secret": secret, "student_timestamp": self.timestamp}).encode()
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Authorization": f"token {token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            try:
                why = json.loads(exc.read()).get("error", exc.reason)
            except ValueError:
                why = exc.reason
            self.fail(f"Submission refused by the course's submission service: {why}")
        except (urllib.error.URLError, OSError) as exc:
            self.fail(f"The course's submission service did not answer ({exc}); your work is saved "
                      "in your folder: try Submit again in a minute, or tell your instructor.")

    def copy_files(self):
        self.init_release()
        self.check_filename_diff()
        files = self.files_to_send()
        if not files:
            self.fail(f"Nothing to submit in {self.src_path}")
        secret = secrets.token_hex(64)
        receipt = self.send(files, secret)
        received = receipt["received"]
        # nbgrader's local record of the submission (the Assignment List reads it), named and
        # stamped with the time the service recorded
        cache_path = os.path.join(self.cache_path, f"{receipt['student']}+{self.coursedir.assignment_id}+{received}")
        os.makedirs(cache_path, exist_ok=True)
        for name, data in files.items():
            target = os.path.join(cache_path, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(data)
        with open(os.path.join(cache_path, "timestamp.txt"), "w") as handle:
            handle.write(received)
        with open(os.path.join(cache_path, "submission_secret.txt"), "w") as handle:
            handle.write(secret)
        self.log.info("Submitted as: %s %s %s (receipt %s; %d files)", self.coursedir.course_id,
                      self.coursedir.assignment_id, received, receipt["id"], len(files))
