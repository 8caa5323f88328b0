#!/usr/bin/env python3
"""Open the course in JupyterLab, on your own copy of the lessons.

    python3 lab.py                 (Windows: py lab.py)

The first run sets up ``.venv/`` in this folder with what the course needs (the packages
in requirements.txt; a few minutes). Every run then copies into ``my-work/`` the lessons
you do not have yet (a notebook already there is never overwritten) and opens JupyterLab
on the start page. Stop it with Ctrl+C, twice.

    python3 lab.py --check         every lesson's visible checks, run afresh, as a table
    python3 lab.py --port 8890     another port (default: 8888, or the next free one)
    python3 lab.py --no-browser    print the link instead of opening a browser
    python3 lab.py --no-venv       use this Python and its packages as they are (conda)
    python3 lab.py -- ARGS         ARGS go to `jupyter lab` itself

It needs only Python's standard library until the packages are installed.
"""

from __future__ import annotations

import argparse
import filecmp
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SKIP = (".ipynb_checkpoints", "__pycache__")
START_PAGE = "START-HERE.md"
MIN_PYTHON = (3, 11)


class Layout:
    """Where a launcher finds the course's pieces (the student edition's layout by default)."""

    def __init__(
        self,
        root: Path = HERE,
        *,
        lessons: Path | None = None,
        work: Path | None = None,
        config: Path | None = None,
        start_page: Path | None = None,
        requirements: Path | None = None,
    ):
        self.root = root
        self.lessons = lessons or root / "lessons"
        self.work = work or root / "my-work"
        self.config = config or root / "jupyter"
        self.start_page = start_page or self.lessons / START_PAGE
        self.requirements = requirements or root / "requirements.txt"
        self.venv = root / ".venv"


# ---- the working copy ------------------------------------------------------------------


def seed(work: Path, lessons: Path, start_page: Path | None = None) -> list[str]:
    """Copy into ``work`` what it lacks from ``lessons``; return what changed (relative paths).

    Notebooks already in ``work`` are kept exactly as they are. The course's other files
    (``coursekit.py`` and the kit's other modules, the start page) are replaced when the
    course's copy differs.
    """
    changed = []
    work.mkdir(parents=True, exist_ok=True)
    if start_page is not None and start_page.is_file():
        dest = work / start_page.name
        if not dest.exists() or not filecmp.cmp(start_page, dest, False):
            shutil.copy2(start_page, dest)
            changed.append(start_page.name)
    folders = (p for p in lessons.iterdir() if p.is_dir() and p.name not in SKIP)
    for lesson in sorted(folders):
        if lesson.name.startswith("."):
            continue
        for src in sorted(p for p in lesson.iterdir() if p.is_file()):
            dest = work / lesson.name / src.name
            if dest.exists() and (src.suffix == ".ipynb" or filecmp.cmp(src, dest, False)):
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
            changed.append(f"{lesson.name}/{src.name}")
    return changed


# ---- the server ------------------------------------------------------------------------


def lab_env(config: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the students' server: the student settings first on
    JUPYTER_CONFIG_PATH (they apply to this server only), this Python's folder first on
    PATH."""
    env = dict(os.environ if base is None else base)
    paths = [str(config), *filter(None, env.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep))]
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join(paths)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([bindir, env.get("PATH", "")])
    return env


def lab_command(work: Path, config: Path, extra: list[str] | None = None) -> list[str]:
    """``jupyter lab`` on ``work``, on this machine only, opening the start page.

    ``config/settings`` holds JupyterLab setting overrides (Markdown files open rendered).
    """
    start = f"/lab/tree/{START_PAGE}" if (work / START_PAGE).exists() else "/lab"
    return [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={work}",
        "--ServerApp.ip=127.0.0.1",
        f"--LabApp.default_url={start}",
        f"--LabApp.app_settings_dir={config / 'settings'}",
        *(["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []),
        *(extra or []),
    ]


def start_lab(layout: Layout, extra: list[str], cwd: Path) -> int:
    """Seed the working copy, say what changed, then run JupyterLab until it stops."""
    if not layout.lessons.is_dir():
        print(f"The lessons are missing: no folder {layout.lessons}.")
        return 1
    seed_and_say(layout.work, layout.lessons, layout.start_page, _shown(layout.work))
    if shutil.which("dot") is None:
        print("Graph drawings need Graphviz's `dot`: sudo apt-get install graphviz (Debian,")
        print("Ubuntu), brew install graphviz (macOS), or conda install -c conda-forge graphviz.")
    return run(lab_command(layout.work, layout.config, extra), cwd, lab_env(layout.config))


def seed_and_say(work: Path, lessons: Path, start_page: Path | None, where: object) -> None:
    """``seed`` the working copy, and tell the student what it added (``where``: the
    working copy as they know it)."""
    changed = seed(work, lessons, start_page)
    for path in changed:
        if path.endswith(".ipynb"):
            print(f"new lesson notebook: {where}/{path}")
    helpers = [p for p in changed if not p.endswith(".ipynb")]
    if helpers:
        print(f"course files copied or updated in {where}/: {len(helpers)}")
    print(f"Your notebooks are in {where}/ (your answers there are never overwritten).")


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> int:
    """Run ``command`` in place of this process (on Windows: until it ends).

    JupyterLab handles Ctrl+C itself (it asks first, and stops its kernels on the second),
    so this process must not stop it any other way, nor stop before it."""
    if os.name != "nt":
        os.chdir(cwd)
        os.execve(command[0], command, os.environ if env is None else env)
    proc = subprocess.Popen(command, cwd=cwd, env=env)
    while True:
        try:
            return proc.wait()
        except KeyboardInterrupt:  # the server got it too, and decides what to do
            continue


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# ---- self-check in a terminal ----------------------------------------------------------


def check(layout: Layout) -> int:
    """Every lesson in ``my-work/`` (or the blank lessons) run afresh: exit 0 if every
    visible check passes, 1 if one fails, 2 if there are no lessons."""
    folder = layout.work if layout.work.is_dir() else layout.lessons
    kits = sorted(folder.glob("*/checkkit.py")) or sorted(layout.lessons.glob("*/checkkit.py"))
    if not kits:
        print(f"No lessons in {folder}.")
        return 2
    spec = importlib.util.spec_from_file_location("_checkkit_check", kits[0])
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    rows = kit.self_check_table(folder)
    if not rows:
        return 2
    return 0 if all(ok for *_, ok, _ in rows) else 1


# ---- the virtual environment -----------------------------------------------------------


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv(layout: Layout) -> Path:
    """``.venv`` with requirements.txt installed (again only when that file changes)."""
    python = venv_python(layout.venv)
    if not python.exists():
        print(f"Setting up {_shown(layout.venv)} (once; a few minutes) ...")
        import venv

        try:
            venv.create(layout.venv, with_pip=True)
        except Exception as exc:
            raise SystemExit(
                f"Could not create {layout.venv}: {exc}\n"
                "On Debian/Ubuntu, install Python's venv module first: "
                "sudo apt-get install python3-venv"
            ) from None
    digest = hashlib.sha256(layout.requirements.read_bytes()).hexdigest()[:16]
    stamp = layout.venv / f".installed-{digest}"
    if not stamp.exists():
        print(f"Installing the course's packages into {_shown(layout.venv)} ...")
        pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--quiet"]
        if subprocess.call([*pip, "-r", str(layout.requirements)]) != 0:
            raise SystemExit("Installing the packages failed (see above); fix that, run again.")
        stamp.touch()
    return python


def _in(venv: Path) -> bool:
    return Path(sys.prefix).resolve() == venv.resolve()


# ---- command line ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lab.py", description="Open the course in JupyterLab, on your copy my-work/."
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="run every lesson's visible checks afresh and print a table",
    )
    parser.add_argument("--port", type=int, help="port (default: 8888, or the next free one)")
    parser.add_argument("--no-browser", action="store_true", help="do not open a browser")
    parser.add_argument(
        "--no-venv",
        action="store_true",
        help="use this Python and its packages, do not set up .venv",
    )
    parser.add_argument(
        "jupyter_args", nargs=argparse.REMAINDER, help="after --: arguments for jupyter lab"
    )
    return parser


def main(argv: list[str] | None = None, layout: Layout | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    layout = layout or Layout()
    if sys.version_info < MIN_PYTHON:
        print(
            f"The course needs Python {'.'.join(map(str, MIN_PYTHON))} or newer; this is "
            f"{sys.version.split()[0]}. Run this file with a newer python3."
        )
        return 1
    if not args.no_venv and not _in(layout.venv):
        python = ensure_venv(layout)
        return run([str(python), str(Path(__file__).resolve()), *argv], Path.cwd())
    if args.check:
        return check(layout)
    extra = [a for a in args.jupyter_args if a != "--"]
    if args.port:
        extra.append(f"--ServerApp.port={args.port}")
    if args.no_browser:
        extra.append("--no-browser")
    return start_lab(layout, extra, cwd=layout.root)


if __name__ == "__main__":
    sys.exit(main())
