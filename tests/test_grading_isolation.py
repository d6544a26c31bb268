"""Grading that one student cannot break for the others (the adversarial suite, part two).

Each fault was reproduced against the grader before its fix: a marker comment that stopped the
batch's feedback and every later lab's results; a thread flood that killed other students' kernels
at start (a zero for them); output that grew the grader without bound; student-chosen text in
feedback (and the private seed inside the kernel); a copy of the package in the course folder
shadowing the grader. The kernel-heavy cases grade the small fixture lab so that they stay quick;
the recording cases use both labs.
"""
from __future__ import annotations

import multiprocessing
import os
import re
import resource
import shutil
from pathlib import Path

import nbformat
import pytest

import nbgrader_harness as harness
from attention_course_instructor.grading.checks import (Expect, TensorAnswer, check_seed, kernel_seed,
                                                        load_lab)
from attention_course_instructor.grading.hardened import (GradingRun, Limits, grade_batch, grade_submission,
                                                          kernel as kernel_module, sandbox)
from attention_course_instructor.grading.hardened.record import record_batch
from attention_course_instructor.grading.hardened.score import SubmissionGrade, zero_cells
from conftest import REPO

FIXTURE = REPO / "tests" / "fixtures" / "course" / "source" / "fixture"
QUICK = Limits(cell_seconds=60, run_seconds=180, memory_mb=4096, startup_seconds=60)


def needs_sandbox():
    if not sandbox.available():
        pytest.skip("user namespaces are unavailable: the hardened grader refuses to run unsandboxed")


def course_with(tmp: Path, source: Path, lab: str, answers: dict[str, str | None]):
    """A course of ``lab`` whose students hand in the solution with one answer cell replaced
    (``{student: code}``; None: the solution as it is)."""
    course = harness.make_course(tmp, source, lab)
    _, solutions = harness.generate(course, lab)
    solution = nbformat.read(solutions / f"{lab}.ipynb", as_version=4)
    cell = next(c for c in solution.cells if c.metadata.get("nbgrader", {}).get("solution")
                and c.cell_type == "code")
    for student, code in answers.items():
        nb = nbformat.from_dict(solution)
        if code is not None:
            next(c for c in nb.cells if c.get("id") == cell.get("id")).source = cell.source + "\n" + code
        folder = course.root / "submitted" / student / lab
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / f"{lab}.ipynb")
    return course


# ---- 1. a marker comment in one answer -------------------------------------------------------------

@pytest.mark.parametrize("lab", ["lab8", "lab12"])
def test_a_marker_comment_cannot_stop_anyone_elses_feedback(lab, tmp_path):
    """Recording only (no kernels): the marker student's notebook is written with the marker made
    inert, and every student gets feedback, the report and gradebook rows."""
    answers = {"honest": None, "marker": "# BEGIN HIDDEN TESTS   (no end marker)",
               "also_honest": None}
    course = course_with(tmp_path, REPO / "source" / lab, lab, answers)
    run = GradingRun(course.root, lab)
    results = [SubmissionGrade(s, zero_cells(run.source(), "graded elsewhere")) for s in answers]
    folder = record_batch(run, results)
    assert [r.fault for r in results] == ["", "", ""]
    for student in answers:
        assert (course.root / "feedback" / student / lab / f"{lab}.html").exists(), student
    graded = nbformat.read(course.root / "autograded" / "marker" / lab / f"{lab}.ipynb", as_version=4)
    answers = "\n".join(c.source for c in graded.cells if c.metadata.get("nbgrader", {}).get("solution"))
    assert "BEGIN-HIDDEN-TESTS" in answers and "BEGIN HIDDEN TESTS" not in answers
    assert "also_honest" in (folder / "report.md").read_text()


def test_one_labs_recording_failure_leaves_the_next_lab_recorded(tmp_path, monkeypatch, capsys):
    """Two labs in one batch: when lab8's results cannot be written, lab12's still are, and the
    command exits non-zero naming the fault."""
    from attention_course_instructor.grading.hardened import cli

    for lab in ("lab8", "lab12"):
        course_with(tmp_path, REPO / "source" / lab, lab, {"ada": None})
    monkeypatch.setattr(cli, "control_fault", lambda run, executor=None: "")
    monkeypatch.setattr(cli, "grade_batch", lambda run, jobs=1, executor=None: [
        SubmissionGrade("ada", zero_cells(run.source(), "graded elsewhere"))])
    real = cli.record_batch

    def record(run, results):
        if run.assignment == "lab8":
            raise OSError("disk full (planted)")
        return real(run, results)

    monkeypatch.setattr(cli, "record_batch", record)
    code = cli.main(["lab8", "lab12", "--course", str(tmp_path), "--no-sandbox"])
    assert code == 4 and "lab8: its results could not be recorded" in capsys.readouterr().err
    assert (tmp_path / "feedback" / "ada" / "lab12" / "lab12.html").exists()
    assert (tmp_path / "reports" / "lab12" / "report.md").exists()


# ---- 2. kernels that cannot exhaust a shared limit -------------------------------------------------

THREAD_FLOOD = """
import threading, time
_held = []
while True:
    try:
        _t = threading.Thread(target=time.sleep, args=(20,), daemon=True)
        _t.start()
        _held.append(_t)
    except RuntimeError:
        break
time.sleep(20)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="kernels run as uids of their own only when the grader is root")
def test_a_thread_flood_cannot_keep_other_kernels_from_starting(tmp_path):
    needs_sandbox()
    students = {"flood": THREAD_FLOOD, "honest_1": None, "honest_2": None, "honest_3": None}
    course = course_with(tmp_path, FIXTURE, "fixture", students)
    run = GradingRun(course.root, "fixture", limits=QUICK)
    flood_first = {s: course.root / "submitted" / s / "fixture" / "fixture.ipynb" for s in students}
    # two workers: the flood holds its threads while the other grades the honest three in turn
    results = {r.student: r for r in grade_batch(run, jobs=2, students=flood_first)}
    for student in ("honest_1", "honest_2", "honest_3"):
        assert results[student].score == 2.0 and not results[student].fault, results[student]
    # the three started while the flood held its threads (about 5 s for them, 20 s for it, here)
    honest = sum(results[s].seconds for s in ("honest_1", "honest_2", "honest_3"))
    assert honest < results["flood"].seconds, f"the flood ended before the others were graded: {results}"


def test_the_pool_gives_each_running_kernel_its_own_uid(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "UID_LOCKS", str(tmp_path / "locks"))
    monkeypatch.setattr(sandbox, "KERNEL_UIDS", 3)
    held = [sandbox.kernel_uid() for _ in range(3)]
    assert len({uid for uid, _ in held}) == 3
    with pytest.raises(sandbox.NoKernelUid):
        sandbox.kernel_uid()
    held[1][1].close()                                   # a kernel ends: its uid is free again
    assert sandbox.kernel_uid()[0] == held[1][0]


def test_a_kernel_that_cannot_start_is_a_grader_fault_not_a_zero(tmp_path, monkeypatch, capsys):
    """Every start attempt fails: no score is written for that student, the report and the exit
    code name the fault, and the others are graded as usual."""
    from attention_course_instructor.grading.hardened import cli

    course = course_with(tmp_path, FIXTURE, "fixture", {"unlucky": None})
    monkeypatch.setattr(kernel_module, "START_ATTEMPTS", 2)
    attempts = []

    def never(self):
        attempts.append(1)
        raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(kernel_module.CellRunner, "_start_once", never)
    run = GradingRun(course.root, "fixture", limits=QUICK, use_sandbox=False)
    result = grade_submission(run, "unlucky", course.root / "submitted/unlucky/fixture/fixture.ipynb")
    assert len(attempts) == 2 and result.fault.startswith("grader fault: the grading kernel did not start")
    assert result.cells == []
    monkeypatch.setattr(cli, "control_fault", lambda run, executor=None: "")
    monkeypatch.setattr(cli, "grade_batch", lambda run, jobs=1, executor=None: [result])
    assert cli.main(["fixture", "--course", str(course.root), "--no-sandbox"]) == 4
    assert "unlucky" in capsys.readouterr().err
    report = (course.root / "reports" / "fixture" / "report.md").read_text()
    assert "Grader faults (1)" in report and "not recorded" in report
    assert not (course.root / "autograded" / "unlucky").exists()


# ---- 3. output is bounded on the grader's side ------------------------------------------------------

OUTPUT_FLOOD = """
_line = "x" * (1 << 20)
for _ in range(1024):        # 1 GiB printed, a message of 1 MiB at a time
    print(_line, flush=True)
"""


def _grade_and_measure(run, student, path, queue):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = grade_submission(run, student, path)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    queue.put((result.score, [c.reason for c in result.cells], (after - before) / 1024))


def test_an_output_flood_ends_that_submission_and_the_grader_stays_small(tmp_path):
    needs_sandbox()
    course = course_with(tmp_path, FIXTURE, "fixture", {"flood": OUTPUT_FLOOD})
    run = GradingRun(course.root, "fixture", limits=QUICK)
    queue = multiprocessing.get_context("spawn").Queue()
    child = multiprocessing.get_context("spawn").Process(target=_grade_and_measure, args=(
        run, "flood", course.root / "submitted/flood/fixture/fixture.ipynb", queue))
    child.start()
    score, reasons, grown_mb = queue.get(timeout=300)
    child.join(60)
    assert score == 0
    assert any("more output than grading accepts" in r for r in reasons), reasons
    assert grown_mb < 300, f"the grader grew by {grown_mb:.0f} MB"


def test_only_probe_records_and_error_names_are_kept():
    client = kernel_module.CappedClient(nbformat.v4.new_notebook())
    client.clear_before_next_output = False
    cell = nbformat.v4.new_code_cell("")
    def message(kind, content):
        return {"msg_type": kind, "content": content, "header": {"msg_type": kind}, "parent_header": {}}

    client.process_message(message("stream", {"name": "stdout", "text": "hello"}), cell, 0)
    client.process_message(message("display_data", {"data": {"text/plain": "x",
                                                              kernel_module.MIME: "{}"}, "metadata": {}}), cell, 0)
    client.process_message(message("error", {"ename": "ValueError", "evalue": "seed=42",
                                             "traceback": ["seed=42"]}), cell, 0)
    assert [o.output_type for o in cell.outputs] == ["display_data", "error"]
    assert list(cell.outputs[0].data) == [kernel_module.MIME]
    assert cell.outputs[1].evalue == "" and cell.outputs[1].traceback == []
    client.caps = kernel_module.Caps(output_bytes=10)
    with pytest.raises(kernel_module.OutputFlood):
        client.process_message(message("stream", {"name": "stdout", "text": "y" * 11}), cell, 0)


# ---- 4. messages quote only what the check decides --------------------------------------------------

def test_a_message_quotes_at_most_the_rank_and_four_sizes():
    expect = Expect()
    chosen = tuple([0] + [123456789] * 299)              # an empty tensor: any sizes, no data
    expect.tensor(TensorAnswer("torch.Tensor", "torch.float32", "cpu", chosen, []), "f(x)", shape=(3, 7))
    [message] = expect.failures
    assert "(rank 300)" in message and message.count("123456789") == 3 and len(message) < 120
    forged = Expect()
    forged.tensor(TensorAnswer("torch.Tensor", "torch.float32; seed = 1234567", "cpu", (3, 7), []), "f(x)",
                  shape=(3, 7))
    assert forged.failures == ["f(x) should return dtype torch.float32, got another dtype"]


def test_the_private_seed_never_reaches_the_kernel(tmp_path, monkeypatch):
    seed = 918273645
    course = course_with(tmp_path, FIXTURE, "fixture", {"reader": None})
    seen = []

    def capture(self, sources):
        seen.extend(sources)
        shutil.rmtree(self.workdir, ignore_errors=True)      # as a run does: no folder left
        return [kernel_module.CellOutcome("ok") for _ in sources]

    monkeypatch.setattr(kernel_module.CellRunner, "run", capture)
    run = GradingRun(course.root, "fixture", seed=seed, use_sandbox=False)
    grade_submission(run, "reader", course.root / "submitted/reader/fixture/fixture.ipynb")
    assert seen and not any(str(seed) in source for source in seen)
    lab_seed = kernel_seed(seed, "fixture")                  # each check gets its own seed from it
    assert any(str(check_seed(lab_seed, gid)) in source for source in seen
               for gid in load_lab(FIXTURE).checks)


# ---- 5. workers import the installed grader, whatever the folder holds ----------------------------

def test_a_package_copy_in_the_current_folder_does_not_shadow_the_grader(tmp_path, monkeypatch):
    needs_sandbox()
    course = course_with(tmp_path / "course", FIXTURE, "fixture", {"ada": None})
    for name in ("attention_course", "attention_course_instructor"):
        shadow = tmp_path / "course" / name
        shadow.mkdir()
        (shadow / "__init__.py").write_text("raise ImportError('a stale copy in the course folder')\n")
    monkeypatch.chdir(tmp_path / "course")
    [result] = grade_batch(GradingRun(course.root, "fixture", limits=QUICK), jobs=1)
    assert result.score == 2.0 and not result.error, result


def test_the_guide_states_the_limits_the_grader_applies():
    from attention_course_instructor.grading.hardened import score
    from attention_course_instructor.grading.hardened.worker import WORKER_MEMORY_MB

    guide = " ".join((REPO / "book" / "instructors" / "grading.md").read_text().split())
    caps = kernel_module.Caps()
    for words in (f"past {caps.output_bytes // 2 ** 20} MB or {caps.messages:,} messages",
                  f"No message may exceed {caps.message_bytes // 2 ** 20} MB and at most {caps.queued}",
                  f"at most {score.MAX_REASONS} messages of at most {score.MAX_REASON_CHARS} characters",
                  f"a limit of {sandbox.NPROC} processes and threads",
                  f"default {sandbox.KERNEL_UID_BASE}, and the next {sandbox.KERNEL_UIDS}",
                  f"`COURSE_WORKER_MEMORY_MB`, {WORKER_MEMORY_MB}",
                  f"tried {['once', 'twice', 'three times'][kernel_module.START_ATTEMPTS - 1]}"):
        assert words in guide, words


def test_a_deep_temporary_folder_still_holds_the_kernels_sockets(tmp_path, monkeypatch):
    """A kernel's Unix sockets live in its folder, and a socket's path holds at most 107 bytes: in
    a deep TMPDIR (a Dask worker's, a parallel test run's) the kernel did not start ("File name
    too long") and every submission was a grader fault. Its folder now goes to a short base,
    named after the batch folder, and sweeping that batch once its grader is dead removes it."""
    needs_sandbox()
    batch = tmp_path / ("deep" * 20) / "course-grading-batch-abcd1234"
    batch.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(batch))
    runner = kernel_module.CellRunner(QUICK)
    assert len(runner.workdir) + len("/kernel-65535") <= kernel_module.SOCKET_PATH_LIMIT
    assert Path(runner.workdir).name.startswith("course-grading-abcd1234-")
    [outcome] = runner.run(["print(6 * 7)"])                 # the run removes its folder
    assert outcome.status == "ok", outcome
    assert not Path(runner.workdir).exists()
    left = Path(kernel_module.kernel_folder())            # as a grader killed mid-batch leaves it
    (batch / "pid").write_text("999999999")               # no such process
    from attention_course_instructor.grading.hardened.executors import sweep_stale_batches

    assert set(sweep_stale_batches(str(batch.parent))) == {str(batch), str(left)}
    assert not batch.exists() and not left.exists()


# ---- 6. memory and disk bounded for real (issue 49) -------------------------------------------------
# Each reproduced on the grader before the fix: /tmp was an unsized tmpfs outside the address-space
# limit (3.5 GiB pinned with the cap at 3000 MB, full marks), the kernel's own folder took 3 GiB
# and 150,000 files unchecked, and messages over 8 MB were dropped unseen ("no answer" on every cell).

def needs_cgroups():
    needs_sandbox()
    from attention_course_instructor.grading.hardened import cgroups

    if not cgroups.available():
        pytest.skip("no cgroup per kernel here (the grader must be root with a writable cgroup hierarchy)")


PIN_TMP = """
with open("/tmp/pinned", "wb") as _f:           # a tmpfs: memory that no address-space limit sees
    for _ in range(2000):
        _f.write(b"x" * (1 << 20))
"""
FILL_DISK = """
with open("/tmp/filler", "wb") as _f:
    for _ in range(200):
        _f.write(b"x" * (1 << 20))
"""


def _reasons(result) -> str:
    return " ".join(c.reason for c in result.cells)


def test_memory_pinned_in_tmp_counts_against_the_kernels_memory(tmp_path):
    needs_cgroups()
    course = course_with(tmp_path, FIXTURE, "fixture", {"pin": PIN_TMP, "honest": None})
    limits = Limits(cell_seconds=60, run_seconds=180, memory_mb=1536, disk_mb=4096)
    run = GradingRun(course.root, "fixture", limits=limits)
    results = {r.student: r for r in grade_batch(run, jobs=2)}
    assert results["pin"].score == 0, results["pin"]
    assert "reached its memory limit (1536 MB, its /tmp included)" in _reasons(results["pin"])
    assert results["honest"].score == 2.0


def test_a_full_tmp_ends_the_submission_with_that_reason(tmp_path):
    needs_sandbox()
    course = course_with(tmp_path, FIXTURE, "fixture", {"filler": FILL_DISK})
    run = GradingRun(course.root, "fixture", limits=Limits(cell_seconds=60, run_seconds=180, disk_mb=64))
    [result] = grade_batch(run)
    assert result.score == 0
    assert "ran out of disk space (it filled its 64 MB of disk space" in _reasons(result), _reasons(result)


def test_the_kernels_own_folder_takes_no_file_and_tmp_is_its_home():
    """Root's kernels: the folder of its sockets is given back to root once they are made, so
    /tmp (sized) is the only place a kernel writes; it is also its home and working folder."""
    needs_sandbox()
    if os.geteuid() != 0:
        pytest.skip("an ordinary user's kernel runs as that user and keeps its folder (the guide says so)")
    runner = kernel_module.CellRunner(QUICK)
    folder = runner.workdir
    write_beside = ("import os\nopen(os.path.join(os.path.dirname(os.environ['JPY_SESSION_NAME'] "
                    "if 0 else %r), 'junk'), 'w').write('x')" % (folder + "/connection.json"))
    outcomes = runner.run([write_beside, "import os\nassert os.getcwd() == os.environ['HOME'] == '/tmp'"])
    assert [o.status for o in outcomes] == ["error", "ok"], outcomes
    assert outcomes[0].error == "PermissionError"


def test_messages_too_large_to_deliver_are_counted_as_a_flood(tmp_path):
    needs_sandbox()
    huge = "_m = 'y' * (9 << 20)\nfor _ in range(3):\n    print(_m, flush=True)\n"
    course = course_with(tmp_path, FIXTURE, "fixture", {"huge": huge})
    [result] = grade_batch(GradingRun(course.root, "fixture", limits=QUICK))
    assert result.score == 0
    assert "a message over 8 MB, which grading refuses" in _reasons(result), _reasons(result)


# ---- 7. the grader leaves the cores to the kernels -------------------------------------------------

THREADS_SAID = re.compile(r"the grader compared on (\d+) torch threads")


def test_a_grading_worker_runs_torch_on_one_thread(tmp_path, monkeypatch):
    """A local worker compares on one torch thread, not torch's default of one per CPU: idle
    threads of a larger pool spin between the comparisons' small operations, on the cores the
    kernels need. The fixture lab's check is made to say how many threads its comparison had."""
    needs_sandbox()
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: torch's default is one thread already")
    from attention_course_instructor.grading.hardened.worker import WORKER_THREADS

    source = tmp_path / "source" / "fixture"
    shutil.copytree(FIXTURE, source)
    checks = source / "checks.py"
    spy = ("    def compare(got, x, ref, expect):\n        import torch\n        expect.that(False, "
           "f'the grader compared on {torch.get_num_threads()} torch threads')\n")
    checks.write_text(checks.read_text().replace("    def compare(got, x, ref, expect):\n", spy, 1))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)          # torch's default, then
    course = course_with(tmp_path / "course", source, "fixture", {"ada": None})
    [result] = grade_batch(GradingRun(course.root, "fixture", limits=QUICK), jobs=1)
    said = {int(n) for n in THREADS_SAID.findall(_reasons(result))}
    assert said == {WORKER_THREADS}, _reasons(result)
