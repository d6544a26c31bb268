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
sys.path.insert(0, HERE)   # so nbgrader can import the course's preprocessors

from attention_course.grading.preprocessors import (  # noqa: E402
    ExposeLabChecks, QuietOverwriteCells, StripSolutionMarkers,
)
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, ClearMarkScheme, ClearOutput, DeduplicateIds,
    Execute, GetGrades, IgnorePattern, IncludeHeaderFooter, LimitOutput, LockCells, OverwriteKernelspec,
    SaveAutoGrades,
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

# Collecting from the exchange: a submission counts only for the account that wrote it (stock
# nbgrader warns about a folder forged in another student's name, then collects it anyway)
c.ExchangeFactory.collect = "attention_course.grading.exchange.OwnerCheckedCollect"

# Solutions: keep the instructor's code, drop hidden tests and the solution markers; do not execute
# (CI executes the solution notebook in a test instead).
c.GenerateSolution.preprocessors = [
    IncludeHeaderFooter, LockCells, ClearOutput, ClearMarkScheme, ClearHiddenTests,
    StripSolutionMarkers,
]

# Feedback shows the student's notebook with scores but never the hidden tests' source.
c.GenerateFeedback.preprocessors = [ClearHiddenTests, GetGrades, CSSHTMLHeaderPreprocessor]
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
