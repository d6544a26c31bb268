"""nbgrader configuration of the course (run nbgrader from the repository root).

    nbgrader generate_assignment lab8 --force   # source/lab8 -> labs/lab8 (student release)
    nbgrader generate_solution lab8 --force     # source/lab8 -> solutions/lab8
    nbgrader autograde lab8                      # submitted/<student>/lab8 -> autograded/
    nbgrader generate_feedback lab8

From another folder pass --NbGrader.config_file=<repo>/nbgrader_config.py.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# the instructor package (the course's preprocessors): installed by `make`, or beside this file
sys.path.insert(0, os.path.join(HERE, "instructor"))

from attention_course_instructor.grading.preprocessors import (  # noqa: E402
    DropRubrics, DropTextTwin, ExposeLabChecks, QuietOverwriteCells, StampCourseVersion, StripSolutionMarkers,
)
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, ClearSolutions,
    ComputeChecksums, DeduplicateIds, Execute, GetGrades, IgnorePattern, IncludeHeaderFooter, InstantiateTests,
    LimitOutput, LockCells, OverwriteKernelspec, SaveAutoGrades, SaveCells,
)

c = get_config()  # noqa: F821  (provided by nbgrader)

c.CourseDirectory.course_id = "attention-and-transformers"
c.CourseDirectory.root = HERE
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "labs"
c.CourseDirectory.solution_directory = "solutions"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(HERE, "gradebook.db")
# the MyST text twin (jupytext pairing) of each source notebook is for review, not for release;
# checks.py (the lab's hidden checks) stays on the instructor's side: it is read from source/<lab>
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", "*.md",
                            "checks.py"]

# Collecting (attention_course_instructor/grading/exchange.py): from the hub's submission service
# when CourseCollect.service_url is set (the hub's instructor settings set it), else from the
# inbound folder -- only the named student's own folder and files, never through a link; the time
# of submission is the exchange's (the service's clock, or the files' change time), never the one a
# student wrote; what was refused and why is logged and kept beside the submission
c.ExchangeFactory.collect = "attention_course_instructor.grading.exchange.CourseCollect"

# The release: nbgrader's own steps, with the course version stamped into the install cell first
# (before the checksums are taken) and the MyST twin's pairing dropped (the student's Jupyter would
# write a <lab>.md beside their notebook at every save); the written answers' rubrics stay in
# the source (grading/rubric.py)
c.GenerateAssignment.preprocessors = [
    StampCourseVersion, DropTextTwin, DropRubrics, IncludeHeaderFooter, InstantiateTests, LockCells,
    ClearSolutions, ClearOutput, CheckCellMetadata, ComputeChecksums, SaveCells, ClearHiddenTests,
    ClearMarkScheme, ComputeChecksums, CheckCellMetadata,
]

# Solutions: keep the instructor's code, drop hidden tests and the solution markers; do not execute
# (CI executes the solution notebook in a test instead).
c.GenerateSolution.preprocessors = [
    StampCourseVersion, DropTextTwin, DropRubrics, IncludeHeaderFooter, LockCells, ClearOutput, ClearMarkScheme,
    ClearHiddenTests, StripSolutionMarkers,
]

# Feedback shows the student's notebook with scores but never the hidden tests' source, on nbgrader's
# page with its scores named by task and no script (grading/feedback.py: JupyterLab opens HTML
# files untrusted)
c.GenerateFeedback.preprocessors = [ClearHiddenTests, GetGrades, CSSHTMLHeaderPreprocessor]
c.GenerateFeedback.exporter_class = "attention_course_instructor.grading.feedback.CourseFeedbackExporter"
c.ClearHiddenTests.enforce_metadata = False

# Autograding: PyTorch cells need longer than the 30 s default; minimal tracebacks so a failing
# hidden test is reported by its error message, not by quoting its source lines.
c.Execute.timeout = 180
c.Execute.extra_arguments = ["--InteractiveShell.xmode=Minimal"]
c.OverwriteCells.add_missing_cells = True
# test cells come back from students without their hidden tests: restore them without a false
# "checksum has changed" warning for each (real edits are still reported)
c.Autograde.sanitize_preprocessors = [
    ClearOutput, DeduplicateIds, OverwriteKernelspec, QuietOverwriteCells, CheckCellMetadata,
]
# the hidden tests read the lab's checks from source/<lab>/ (ExposeLabChecks says where)
c.Autograde.autograde_preprocessors = [
    ExposeLabChecks, Execute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades,
    AssignLatePenalties, CheckCellMetadata,
]

# Late work (attention_course_instructor/grading/late.py): each lab's due date is in the gradebook,
# extensions are nbgrader's own records (or extensions.csv in the course folder); the penalty is
# this plugin's, for nbgrader's autograde and the hardened grader alike: "none", "zero", or
# "per_hour" (CourseLatePolicy.per_hour of the score per hour started, at most CourseLatePolicy.cap)
c.AssignLatePenalties.plugin_class = "attention_course_instructor.grading.late.CourseLatePolicy"
c.CourseLatePolicy.penalty_method = "none"
