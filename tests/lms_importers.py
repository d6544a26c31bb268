"""How Canvas and Moodle read a grades CSV, restated from their own source for the tests.

No live Canvas or Moodle runs here. These functions restate, rule for rule, what each LMS's
importer does with a file, so that the course's exports are read the way the LMS reads them and
not the way their author expects:

- :func:`canvas_import`: Canvas's ``GradebookImporter`` (``app/models/gradebook_importer.rb``):
  the header must start ``Student``, ``ID``, then optionally ``SIS User ID``/``SIS Login ID``
  (and ``Integration ID``, ``Root Account``), with ``Section`` the last student column; a row
  whose first cell contains ``Points Possible`` gives the points; a student is found by ``ID``
  read as Ruby's ``to_i`` reads it, else by SIS user id, else by SIS login id, else by name; an
  assignment column ``Title (1234)`` updates assignment 1234, another creates one; columns of
  totals are skipped.
- :func:`moodle_import`: Moodle's ``gradeimport_csv_load_data`` (``grade/import/csv/classes/
  load_data.php``): every row as long as the header, or the file is refused; the column mapped
  to a user field finds the user (a value that finds nobody stops the whole import); an empty
  cell or ``-`` is no grade, anything else must be a number.
"""
from __future__ import annotations

import csv
import io
import re

TOTALS = ("Current Score", "Current Points", "Current Grade", "Final Score", "Final Points",
          "Final Grade", "Override Score", "Override Grade", "Override Status")


class ImportRefused(ValueError):
    """The LMS would refuse the file as a whole."""


def ruby_to_i(text: str) -> int:
    """Ruby's ``String#to_i``: the leading digits (after an optional sign), 0 if there are none."""
    match = re.match(r"\s*([-+]?\d+)", text.replace("_", ""))
    return int(match[1]) if match else 0


def canvas_course(export_text: str) -> dict:
    """A course as Canvas's own gradebook export shows it: its students (by Canvas id, with SIS
    ids and names) and assignments (by id, with titles)."""
    rows = list(csv.reader(io.StringIO(export_text)))
    header = rows[0]
    students = {int(r[1]): {"name": r[0], "sis_user_id": r[2], "sis_login_id": r[3]}
                for r in rows[1:] if "Points Possible" not in r[0]}
    assignments = {int(m[2]): m[1] for h in header if (m := re.fullmatch(r"(.*) \((\d+)\)", h))}
    return {"students": students, "assignments": assignments}


def canvas_import(text: str, course: dict) -> dict:
    """What Canvas's importer makes of ``text`` for ``course`` (:func:`canvas_course`): {"grades":
    {(Canvas user id, assignment id or "new: <title>"): grade}, "unmatched": [row names],
    "points": {assignment: points}}. Raises :class:`ImportRefused` for an invalid header."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    if not (len(header) > 3 and "Student" in header[0] and "ID" in header[1]):
        raise ImportRefused("Invalid header row")
    info = 3
    sis_user = sis_login = None
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        sis_login, info = 2, 4
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        extra = 1 if len(header) > 4 and re.search(r"Integration\s+ID", header[4]) else 0
        sis_user, sis_login, info = 2, 3, 5 + extra
    if "Section" not in header[info - 1]:
        raise ImportRefused("Invalid header row")
    columns = {}
    for index, title in enumerate(header[info:], start=info):
        if any(total in title for total in TOTALS):
            continue
        match = re.fullmatch(r"(.*) \((\d+)\)", title)
        number = int(match[2]) if match and int(match[2]) in course["assignments"] else None
        columns[index] = number if number is not None else f"new: {match[1] if match else title}"
    by_sis = {s["sis_user_id"]: i for i, s in course["students"].items() if s["sis_user_id"]}
    by_login = {s["sis_login_id"]: i for i, s in course["students"].items() if s["sis_login_id"]}
    by_name = {s["name"]: i for i, s in course["students"].items()}
    found = {"grades": {}, "unmatched": [], "points": {}}
    for row in rows[1:]:
        if "Points Possible" in row[0]:
            found["points"] = {columns[i]: row[i] for i in columns}
            continue
        student = ruby_to_i(row[1]) if row[1] else None
        if student not in course["students"]:
            student = (by_sis.get(row[sis_user]) if sis_user is not None and row[sis_user] else None) \
                or (by_login.get(row[sis_login]) if sis_login is not None and row[sis_login] else None) \
                or by_name.get(row[0])
        if student is None:
            found["unmatched"].append(row[0])
            continue
        for index, assignment in columns.items():
            grade = row[index].strip()
            if grade not in ("", "-"):
                found["grades"][(student, assignment)] = grade
    return found


def moodle_import(text: str, users: dict, map_from: str, map_to: str, items: tuple) -> dict:
    """What Moodle's CSV import makes of ``text`` with the ``map_from`` column mapped to the user
    field ``map_to`` (``id``, ``idnumber``, ``email`` or ``username``) of ``users`` ({user id:
    {field: value}}) and the columns ``items`` to grade items: {(user id, column): grade or None}.
    Raises :class:`ImportRefused` where Moodle stops the whole import."""
    rows = list(csv.reader(io.StringIO(text)))
    header = [h.strip() for h in rows[0]]
    if any(len(row) != len(header) for row in rows[1:]):
        raise ImportRefused("csvweirdcolumns: rows of different lengths")
    who = header.index(map_from)
    grades = {}
    for row in rows[1:]:
        value = row[who]
        if not value:
            continue                                    # "Skip invalid row with blank user field"
        matches = [uid for uid, fields in users.items()
                   if (str(uid) if map_to == "id" else fields.get(map_to)) == value]
        if not matches:
            raise ImportRefused(f"usermappingerror: no user with {map_to} {value!r}")
        for index, column in enumerate(header):
            if column not in items:
                continue
            cell = row[index].strip()
            if cell in ("", "-"):
                grades[(matches[0], column)] = None
            else:
                try:
                    grades[(matches[0], column)] = float(cell)
                except ValueError:
                    raise ImportRefused(f"badgrade: {cell!r}") from None
    return grades
