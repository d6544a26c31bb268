"""Build the environment every hub user's server runs in (``make hub-env``; run as root).

    python deploy/hub/user_env.py [--prefix /opt/attention-course] [--pip]
    .venv/bin/python deploy/hub/user_env.py --prune   # make runs it: .venv keeps only the pins

It holds the pinned requirements and the student package installed from its wheel, not from the
repository: what a student's server imports is what the wheel ships. Where the environment
running this script holds exactly the pins (``make hub-env`` runs it in the course's ``.venv``,
which make installs from them and compiles), its packages are copied with their byte code
instead of installed again: on 2 cores the whole build took 192-208 s and 182-189 CPU-seconds
with pip, 59-63 s and 53-57 CPU-seconds with the copy, most of it the disk
(``benchmarks/results/hub_env_build.md``). Elsewhere, or with ``--pip``, pip installs them.

The instructor package (the grader) is installed from its own wheel beside it, into
``<env>/instructor``, which only instructors' servers have on their path (``PYTHONPATH``, set
by the hub for the instructor role). The interpreter must be one that every user can run; when
the build's own Python lives somewhere users cannot read (pyenv under /root), its standard
library is copied to ``<prefix>/python`` and made relocatable with patchelf. Running it again
only rebuilds when requirements.txt, the package or this script changed.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTRUCTOR_DIR = "instructor"        # <env>/instructor: the instructor package (jupyterhub_config.py)


def runnable_by_everyone(path: Path) -> bool:
    """Every folder above ``path`` can be entered by others and the file executed by them."""
    for p in [path, *path.parents]:
        mode = p.stat().st_mode
        if not mode & 0o001:
            return False
    return True


def shared_python(prefix: Path) -> Path:
    """An interpreter of this Python version that any user may execute."""
    base = Path(sys.base_prefix)
    python = base / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    if runnable_by_everyone(python.resolve()):
        return python
    copy = prefix / "python"
    target = copy / "bin" / python.name
    if not target.exists():
        stdlib = Path(sysconfig.get_paths()["stdlib"]).relative_to(base)
        skip = {str(stdlib / "site-packages"), str(stdlib / "test")}

        def ignore(folder, names):
            rel = str(Path(folder).relative_to(base))
            return [n for n in names if n == "__pycache__" or f"{rel}/{n}".lstrip("./") in skip]

        shutil.copytree(base, copy, symlinks=True, ignore=ignore)
        (copy / str(stdlib) / "site-packages").mkdir(exist_ok=True)
        if shutil.which("patchelf") is None:
            sys.exit("patchelf is missing: apt-get install patchelf (it makes the copied Python relocatable)")
        subprocess.run(["patchelf", "--set-rpath", "$ORIGIN/../lib", str(target)], check=True)
        copy.chmod(0o755)
    return target


# what a copied environment leaves out: the course's own packages (the wheels are installed instead,
# and the .venv has them as editable installs from the repository) and an import's half-written
# byte code (Python writes ``x.pyc.<number>`` and renames it)
NOT_COPIED = ("__editable__*", "attention_course*", "*.pyc.*")
# the packages a venv has besides the pins
UNPINNED = {"pip", "setuptools", "wheel", "attention-course", "attention-course-instructor"}


def pins(requirements: Path) -> dict[str, str]:
    """``requirements.txt``'s pins: package (its canonical name) -> ``==`` specifier."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found = {}
    for line in requirements.read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            requirement = Requirement(line)
            found[canonicalize_name(requirement.name)] = str(requirement.specifier)
    return found


def installed(site_packages: Path | None = None) -> dict[str, str]:
    """The packages installed in ``site_packages`` (canonical name -> version); by default the
    running venv's own, not those of a folder another tool put on sys.path (under pytest,
    setuptools' vendored packaging, zipp, ... are on it)."""
    from packaging.utils import canonicalize_name          # one of the pins

    if site_packages is None:
        site_packages = Path(sysconfig.get_path("purelib", vars={"base": sys.prefix}))
    return {canonicalize_name(d.metadata["Name"]): d.version
            for d in importlib.metadata.distributions(path=[str(site_packages)])}


def unpinned(requirements: Path, site_packages: Path | None = None) -> list[str]:
    """The installed packages no pin names (pip's and the course's own aside), sorted."""
    return sorted(set(installed(site_packages)) - set(pins(requirements)) - UNPINNED)


def holds_exactly_the_pins(requirements: Path) -> bool:
    """The environment running this script is a venv holding every pin at its version and no
    other package (pip's and the course's own aside)."""
    if sys.prefix == sys.base_prefix:
        return False
    from packaging.specifiers import SpecifierSet

    have = installed()
    return not unpinned(requirements) and all(
        name in have and SpecifierSet(spec).contains(have[name])
        for name, spec in pins(requirements).items())


def prune(requirements: Path) -> list[str]:
    """Uninstall from the running venv every package no pin names (pip's and the course's own
    aside), then check what stays with ``pip check``. ``pip install -r`` removes nothing, so a
    package the pins dropped (or that a dropped one pulled in) stayed behind in an older
    ``.venv``, and the hub's environment was then installed with pip instead of copied; ``make``
    runs this after installing the pins. A tool installed into ``.venv`` by hand goes too."""
    if sys.prefix == sys.base_prefix:
        raise SystemExit(f"--prune uninstalls from the venv that runs it; {sys.executable} is "
                         f"not a venv's (run it as .venv/bin/python deploy/hub/user_env.py --prune)")
    extra = unpinned(requirements)
    if not extra:
        print(f"{sys.prefix}: nothing to uninstall (requirements.txt pins every package in it, "
              f"pip's and the course's own aside)")
        return extra
    python = [sys.executable, "-m", "pip"]
    subprocess.run(python + ["uninstall", "--quiet", "--yes", *extra], check=True)
    print(f"uninstalled from {sys.prefix} what no pin in requirements.txt names: "
          f"{', '.join(extra)}")
    check = subprocess.run(python + ["check"], capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"{sys.prefix} now misses a package that a pinned one needs (the pins "
                         f"should name it); pip check says:\n{check.stdout}{check.stderr}")
    return extra


def copy_environment(source: Path, env: Path) -> None:
    """``source``'s packages into ``env``, a venv of the same Python made without pip: the
    site-packages folder with its byte code (a copy keeps each file's time, which a ``.pyc`` is
    checked against), the files pip put beside it (``etc/``, ``include/``, ``share/``) and
    the scripts in ``bin/``, each pointed at ``env``'s Python instead of ``source``'s."""
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(source)})).relative_to(source)
    shutil.copytree(source / purelib, env / purelib, symlinks=True, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns(*NOT_COPIED))
    for folder in ("etc", "include", "share"):
        if (source / folder).is_dir():
            shutil.copytree(source / folder, env / folder, symlinks=True, dirs_exist_ok=True)
    old, new = str(source / "bin" / "python").encode(), str(env / "bin" / "python").encode()
    for script in (source / "bin").iterdir():
        if script.name.startswith(("python", "activate", "Activate")) or not script.is_file():
            continue
        target = env / "bin" / script.name
        shutil.copy2(script, target)
        text = script.read_bytes()
        if text.startswith(b"#!"):
            target.write_bytes(text.replace(old, new))


def build_wheels(out: Path) -> tuple[Path, Path]:
    """The student and the instructor wheel, built afresh into ``out``."""
    from attention_course_instructor.book.build import build_wheel

    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("attention_course*.whl"):
        old.unlink()
    return build_wheel(REPO, out), build_wheel(REPO / "instructor", out)


def content_digest() -> str:
    """Changes when the pins, the package's files or this script do (a wheel's own bytes change
    every build)."""
    h = hashlib.sha1()
    files = [REPO / "requirements.txt", REPO / "pyproject.toml", REPO / "instructor" / "pyproject.toml",
             Path(__file__).resolve()]                    # how the environment is built
    for package in (REPO / "attention_course", REPO / "instructor" / "attention_course_instructor"):
        files += sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    for path in files:
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


HUB_FILES = ("submissions.py", "submit_client.py",    # the submission service and its client,
             "regrade_requests.py")                  # the students' regrade page


def install_roles(env: Path) -> None:
    """The per-role Jupyter config folders the hub hands each server, and the submission service
    with the client every server submits through (readable by every user)."""
    shared = env / "share" / "attention-course"
    for name in ("roles", "hub"):
        if (shared / name).exists():
            shutil.rmtree(shared / name)
    shutil.copytree(REPO / "deploy" / "hub" / "roles", shared / "roles")
    (shared / "hub").mkdir(parents=True)
    for name in HUB_FILES:
        shutil.copy2(REPO / "deploy" / "hub" / name, shared / "hub" / name)
    # JupyterLab's settings for everyone: no news prompt at each login, Markdown opened rendered
    settings = env / "share" / "jupyter" / "lab" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "deploy" / "hub" / "lab" / "overrides.json", settings / "overrides.json")
    for path in [shared, *shared.rglob("*"), settings / "overrides.json"]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] + " Or, with --prune, "
                                     "make the running venv hold only the pins.")
    parser.add_argument("--prefix", type=Path, default=Path("/opt/attention-course"),
                        help="where the environment is built, as <prefix>/env (default: %(default)s)")
    parser.add_argument("--pip", action="store_true",
                        help="install the pins with pip even where they could be copied")
    parser.add_argument("--prune", action="store_true",
                        help="build nothing: uninstall from the venv running this script every "
                             "package no pin names (make runs it as you, in .venv, after "
                             "installing the pins; a tool you installed there goes too)")
    args = parser.parse_args(argv)
    if args.prune:
        prune(REPO / "requirements.txt")
        return 0
    prefix = args.prefix.resolve()
    prefix.mkdir(parents=True, exist_ok=True)
    prefix.chmod(0o755)
    env = prefix / "env"
    wheel, instructor_wheel = build_wheels(prefix / "wheels")
    digest = content_digest()
    stamp = env / f".installed-{digest}"
    install_roles(env)
    if stamp.exists():
        print(f"{env} is up to date")
        return 0
    requirements = REPO / "requirements.txt"
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    if not args.pip and holds_exactly_the_pins(requirements):
        shutil.rmtree(env / "bin", ignore_errors=True)
        shutil.rmtree(env / "lib", ignore_errors=True)
        subprocess.run([str(shared_python(prefix)), "-m", "venv", "--without-pip", str(env)],
                       check=True)
        copy_environment(Path(sys.prefix), env)
    else:
        if not (env / "bin" / "python").exists():
            subprocess.run([str(shared_python(prefix)), "-m", "venv", str(env)], check=True)
        subprocess.run(pip + ["--upgrade", "pip"], check=True)
        subprocess.run(pip + ["-r", str(requirements)], check=True)
    subprocess.run(pip + ["--no-deps", "--force-reinstall", str(wheel)], check=True)
    instructor = env / INSTRUCTOR_DIR                 # on instructors' PYTHONPATH only
    shutil.rmtree(instructor, ignore_errors=True)
    subprocess.run(pip + ["--no-deps", "--target", str(instructor), str(instructor_wheel)], check=True)
    for path in [instructor, *instructor.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    for old in env.glob(".installed-*"):
        old.unlink()
    stamp.touch()
    print(f"built {env} (course package from {wheel.name}, {instructor_wheel.name} in {instructor})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
