"""The benchmarks are a package whose modules do no work when imported (issue 37): nothing is
read, trained or run until a module's ``main``."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

from conftest import REPO

MODULES = sorted(p.stem for p in (REPO / "benchmarks").glob("*.py") if p.stem != "__init__")

# Import every benchmark with running a lab's reference refused, and reading a file or starting a
# process refused when the benchmark's own code asks (libraries may read their own data): a
# module that does any of it at import fails to import.
PROBE = """
import importlib, pathlib, subprocess, sys
import attention_course_instructor.grading.checks as checks

OWN = str(pathlib.Path("benchmarks").resolve())

def refuse(*args, **kwargs):
    raise RuntimeError("work at import time")

def unless_own(original):
    def guarded(*args, **kwargs):
        if sys._getframe(1).f_code.co_filename.startswith(OWN):
            refuse()
        return original(*args, **kwargs)
    return guarded

checks.reference_namespace = refuse
pathlib.Path.read_text = unless_own(pathlib.Path.read_text)
pathlib.Path.read_bytes = unless_own(pathlib.Path.read_bytes)
subprocess.run = unless_own(subprocess.run)
subprocess.Popen = unless_own(subprocess.Popen)
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module("benchmarks." + name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed))
"""


def test_importing_a_benchmark_does_no_work():
    assert len(MODULES) >= 15
    done = subprocess.run([sys.executable, "-c", PROBE, *MODULES], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "", done.stdout


def test_one_table_helper_escapes_what_would_break_a_table():
    from attention_course.tables import markdown_table

    table = markdown_table(["who", "note"], [["ann|bea", "two\nlines"], [3, 0.5]]).splitlines()
    assert table == ["| who | note |", "|---|---|", "| ann\\|bea | two lines |", "| 3 | 0.5 |"]


def test_a_target_computes_its_verdict():
    from benchmarks.report import Target

    budget, floor = Target(300, unit=" s"), Target(0.9, at_most=False)
    assert (budget.verdict(299), budget.verdict(301), str(budget)) == ("met", "**missed**", "at most 300 s")
    assert (floor.met(0.95), floor.met(0.5), str(floor)) == (True, False, "at least 0.9")


def test_grading_reports_are_computed_from_what_was_measured():
    """The grading benchmarks' pages are pure functions of their measurements: the verdict and
    the agreement line follow the numbers given, not a sentence written in advance."""
    from benchmarks import dask_grading, grading_throughput

    walls = {1: 120.0, 2: 100.0}
    cheap = grading_throughput.report({"nbgrader": [10, 11, 12], "hardened": [6, 7, 5]}, walls)
    dear = grading_throughput.report({"nbgrader": [10, 10, 10], "hardened": [16, 17, 18]}, walls)
    assert "| hardened / nbgrader | 0.55 (target: at most 1.5x; met) |" in cheap
    assert "1.70 (target: at most 1.5x; **missed**)" in dear
    assert "| 2 | 100.0 | 5.0 |" in cheap
    scores = {"s1": [("t1", 1.0)]}
    same = {"local": (scores, 80.0), "dask": (scores, 40.0), "killed": (scores, 120.0),
            "overhead_ms": 12.34}
    assert "| Dask, 2 workers | 40.0 | 1.00 | 0.50x |" in dask_grading.report(same)
    assert dask_grading.report(same).endswith("every submission: yes.")
    differ = {**same, "killed": ({"s1": [("t1", 0.0)]}, 120.0)}
    assert dask_grading.report(differ).endswith("every submission: NO.")


def test_the_dev_loop_counts_as_others_only_what_ran_before_the_step():
    """A process busy before the step began is another's and its CPU time is counted; one started
    during the step is the step's, even one that nobody waits for (in a session of its own, as a
    sandbox's or a killed kernel's children end up), and is never counted as others'."""
    import subprocess
    import sys

    from benchmarks import dev_loop

    # one CPU-second of work, then a line, then asleep until killed
    spin = [sys.executable, "-c", "import time\nwhile time.process_time() < 1: pass\n"
            "print('spun', flush=True)\ntime.sleep(60)"]
    older = subprocess.Popen(spin, stdout=subprocess.PIPE, text=True)
    watch = dev_loop.OlderProcesses()
    watch.start()
    orphan = subprocess.Popen(spin, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert older.stdout.readline() == orphan.stdout.readline() == "spun\n"
        watch.sample()
    finally:
        for process in (older, orphan):
            process.kill()
            process.wait()
    [key] = [key for key in watch.before if key[0] == older.pid]
    assert watch.latest[key] - watch.before[key] > 0.5          # what it spun after the start
    assert not [key for key in watch.latest if key[0] == orphan.pid]


def test_the_dev_loop_says_when_its_measurement_is_noisy():
    """The suite's time is only as good as the machine was quiet: the page says what share of the
    CPU other processes took, and calls the run noisy past the threshold; it lists the slowest tests."""
    from benchmarks import dev_loop

    quiet = dev_loop.Quietness([2.1, 2.4], machine_cpu_seconds=2000.0, others_cpu_seconds=100.0)
    busy = dev_loop.Quietness([6.0, 9.5], machine_cpu_seconds=2000.0, others_cpu_seconds=1000.0)
    assert (round(quiet.others_share, 3), busy.others_share) == (0.05, 0.5)
    result = {"commit": "abc1234", "seconds": {"make test": 1100}, "files": {"test_a.py": 900.0},
              "slowest": {"test_a.py::test_one": 600.0}}
    calm = dev_loop.report(result | {"quiet": {**vars(quiet), "others_share": quiet.others_share}}, "m")
    noisy = dev_loop.report(result | {"quiet": {**vars(busy), "others_share": busy.others_share}}, "m")
    assert "A quiet machine: while the suite ran, other processes took 5%" in calm
    assert "**Noisy measurement**" in noisy and "took 50%" in noisy and "9.5 at most" in noisy
    assert "| test_a.py::test_one | 600 |" in calm
    assert "| make test | 1100 | 18.3 | at most 1200 s: met |" in calm


def test_the_dev_loop_says_whether_the_machine_started_as_cis_does(monkeypatch):
    """CI's fresh machine installs the Debian packages and builds the hub's environment in its run:
    the page says whether this run paid for them too, or found them and so ran shorter than CI."""
    from benchmarks import dev_loop

    monkeypatch.setattr(dev_loop, "FRESH_MACHINE_LACKS", {"chromium": lambda: True, "hub env": lambda: False})
    words = dev_loop.machine_start()
    assert words.startswith("The machine started without chromium, as a fresh CI machine does")
    assert "already had hub env, which a fresh CI machine installs" in words
    monkeypatch.setattr(dev_loop, "FRESH_MACHINE_LACKS", {"chromium": lambda: True})
    page = dev_loop.report({"commit": "abc1234", "seconds": {"make test": 1100}, "files": {"a.py": 9.0},
                            "notes": [dev_loop.machine_start()]}, "m")
    assert "already had" not in page and "started without chromium" in page


SPINS = """
import subprocess, sys

def test_a_child_spins():
    subprocess.run([sys.executable, "-c", "import time\\nwhile time.process_time() < 2: pass"], check=True)
"""
SLEEPS = """
import time

def test_it_waits():
    time.sleep(2)
"""


def test_the_dev_loop_charges_each_file_the_cpu_time_of_its_process_tree(tmp_path):
    """Two workers, one file each: the file whose test starts a process that spins for two
    CPU-seconds is charged them (less what its last sample misses), the file that sleeps as long
    almost nothing; each worker writes its own count, the controller none (its tree holds theirs),
    and a count an earlier run left in the folder is gone."""
    from benchmarks.suite_cpu import cpu_by_file

    (tmp_path / "test_spins.py").write_text(SPINS)
    (tmp_path / "test_sleeps.py").write_text(SLEEPS)
    counts = tmp_path / "cpu"
    counts.mkdir()
    (counts / "gw7.json").write_text('{"test_of_an_earlier_run.py": 99.0}')      # cleared first
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", os.devnull,
                           "--rootdir", str(tmp_path), "-n", "2", "--dist", "loadfile",
                           "-p", "benchmarks.suite_cpu", f"--cpu-by-file={counts}",
                           "test_spins.py", "test_sleeps.py"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert sorted(p.name for p in counts.iterdir()) == ["gw0.json", "gw1.json"]
    spent = cpu_by_file(counts)
    assert 1.4 <= spent["test_spins.py"] <= 2.6, spent
    assert spent["test_sleeps.py"] < 0.5, spent


@contextlib.contextmanager
def one_cpu_second_spent(*words: str):
    """A child process (``words`` on its command line) that has spun for one CPU-second when the
    block starts, and then sleeps until the block ends."""
    import psutil

    child = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                              "while time.process_time() - t < 1: pass\ntime.sleep(30)", *words])
    try:
        deadline = time.monotonic() + 30
        while sum(psutil.Process(child.pid).cpu_times()[:2]) < 0.95 and time.monotonic() < deadline:
            time.sleep(0.1)
        yield child
    finally:
        child.kill()
        child.wait()


def test_a_clock_step_does_not_count_a_process_again(monkeypatch):
    """The system clock stepped between two looks (psutil then gives every process a new start
    time): a child that spent 1 CPU-second is still charged it once."""
    import psutil

    from benchmarks.suite_cpu import TreeCpu

    tree = TreeCpu()
    tree.now_running("test_spins.py")
    with one_cpu_second_spent():
        tree.sample()
        stepped = psutil.boot_time() + 3600.0
        monkeypatch.setattr(psutil._pslinux, "boot_time", lambda: stepped)
        tree.sample()
    assert 0.9 <= tree.by_file["test_spins.py"] < 1.5, tree.by_file


def test_the_cpu_time_is_also_told_by_the_kind_of_process_that_spent_it():
    """A child whose command line names the kernel launcher spins for one CPU-second: it is
    charged to the notebook kernels, not to the test process that started it; the report lists
    the kinds with their shares."""
    from benchmarks import dev_loop
    from benchmarks.suite_cpu import PYTEST, TreeCpu, program

    tree = TreeCpu()
    tree.now_running("test_kernels.py")
    with one_cpu_second_spent("-m", "ipykernel_launcher"):
        tree.sample()
    assert 0.9 <= tree.by_kind["notebook kernels"] < 1.5, tree.by_kind
    assert tree.by_kind.get(PYTEST, 0.0) < 0.5, tree.by_kind
    assert program("python3.11", ["/v/bin/python", "-P", "-m", "nbconvert", "x"]) == "python -m nbconvert"
    assert program("python3", ["python3", "/repo/deploy/hub/user_env.py"]) == "python user_env.py"
    assert program("bwrap", ["bwrap", "--die-with-parent"]) == "bwrap"
    assert program("python3", ["python", "-W", "error", "-m", "build", "x"]) == "python -m build"
    assert tree.by_file_kind["test_kernels.py"]["notebook kernels"] == tree.by_kind["notebook kernels"]
    kinds = {"notebook kernels": 30.0, PYTEST: 8.0, "other: a": 1.5, "other: b": 0.5}
    page = dev_loop.report({"commit": "abc1234", "seconds": {"make test": 10}, "files": {"test_a.py": 9.0},
                            "cpu": {"test_a.py": 40.0}, "cpu_kinds": kinds,
                            "cpu_kinds_by_file": {"notebook kernels": {"test_a.py": 20.0, "test_b.py": 10.0}}},
                           "m")
    assert "| notebook kernels | 30 | 75.0% | test_a.py 20, test_b.py 10 |" in page
    assert f"| {PYTEST} | 8 | 20.0% |  |" in page
    assert "| 2 other kinds, each under 5 s | 2 | 5.0% |  |" in page and "other: a" not in page


def test_the_dev_loop_page_states_each_files_cpu_time_and_the_floor_it_sets():
    """Beside each file's worker-seconds its CPU time, and the least time the whole could take."""
    from benchmarks import dev_loop

    result = {"commit": "abc1234", "seconds": {"make test": 1300},
              "files": {"test_a.py": 900.0, "test_b.py": 700.0},
              "cpu": {"test_a.py": 1500.0, "test_b.py": 400.0, "(between tests)": 100.0}}
    page = dev_loop.report(result, "m")
    assert "| test file | seconds | share | CPU seconds |" in page
    assert "| test_a.py | 900 | 56.2% | 1500 |" in page and "| test_b.py | 700 | 43.8% | 400 |" in page
    cores = len(os.sched_getaffinity(0))
    assert (f"spent 2000 CPU-seconds (100 of them outside any test" in page
            and f"on {cores} cores no schedule finishes that work in under {2000 / cores:.0f} s" in page)
    result["quiet"] = {"machine_cpu_seconds": 2500.0, "others_cpu_seconds": 50.0, "load_averages": [2.0]}
    assert "The whole step spent 2450 CPU-seconds" in dev_loop.report(result, "m")
    assert "450 of them escaped the sampler" in dev_loop.report(result, "m")
