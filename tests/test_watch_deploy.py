"""The ready-made ways to run the watcher (autograder/watch/deploy/): the systemd unit,
filled in by its documented sed line, and the JupyterHub service entry each start a
command that runs, from the course folder, with the environment's bin/ first on PATH."""

from __future__ import annotations

import configparser
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

from autograder.watch.deploy.jupyterhub_service import SERVICE_KEYS, watch_service

DEPLOY = ROOT / "autograder" / "watch" / "deploy"
UNIT = DEPLOY / "autograder-watch.service"
USER = "instructor"


def sed_line() -> str:
    """The unit's documented sed command, without its `| sudo tee ...`."""
    (line,) = [ln for ln in UNIT.read_text().splitlines() if "sed -e" in ln]
    return line.lstrip("# ").split(" | ")[0]


def filled(course: Path = ROOT) -> str:
    """The unit as the documented sed line fills it in, run in ``course``."""
    proc = subprocess.run(
        ["bash", "-c", sed_line().replace("autograder/", f"{ROOT}/autograder/", 1)],
        cwd=course,
        env=dict(os.environ, USER=USER),
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


def sections(text: str) -> dict[str, dict[str, list[str]]]:
    """{section: {key: [values]}}: systemd keys may repeat (Environment=)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read_string(text)  # an INI file: fails if it is not one
    out: dict[str, dict[str, list[str]]] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = {}
            continue
        key, _, value = line.partition("=")
        out[section].setdefault(key, []).append(value)
    assert set(out) == set(parser.sections())
    return out


def run_help(command: list[str], cwd: str, path: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*command, "--help"],
        cwd=cwd,
        env={"PATH": path, "HOME": os.environ.get("HOME", "/tmp")},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_sed_line_fills_every_placeholder():
    text = filled()
    assert "@" not in text.replace("autograder-watch", ""), text
    assert f"User={USER}" in text
    assert f"WorkingDirectory={ROOT}" in text


def test_the_unit_runs_the_watcher_as_the_instructor_from_the_course():
    unit = sections(filled())
    assert set(unit) == {"Unit", "Service", "Install"}
    service = {k: v[-1] for k, v in unit["Service"].items()}
    assert service["Type"] == "simple"
    assert service["User"] == USER
    assert service["WorkingDirectory"] == str(ROOT)
    assert service["Restart"] == "on-failure"
    assert int(service["RestartSec"]) > 0
    assert service["KillSignal"] == "SIGTERM"
    assert int(service["TimeoutStopSec"]) >= 600  # a grading run may end
    assert service["StandardOutput"] == service["StandardError"] == "journal"
    assert unit["Install"]["WantedBy"] == ["multi-user.target"]

    argv = shlex.split(service["ExecStart"])
    assert argv == [f"{ROOT}/.venv/bin/python", "-m", "autograder", "watch", "--course", str(ROOT)]
    env = dict(e.split("=", 1) for e in unit["Service"]["Environment"])
    assert env["PATH"].split(":")[0] == f"{ROOT}/.venv/bin"  # nbgrader runs alembic from PATH

    # The course's environment is this one (a worktree may have no .venv of its own).
    path = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    proc = run_help([sys.executable, *argv[1:]], service["WorkingDirectory"], path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage: python -m autograder watch" in proc.stdout


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_accepts_the_unit(tmp_path):
    """`systemd-analyze verify` reads every setting; it warns about (and ignores) any it
    cannot parse, and about an ExecStart that is not there, so the course gets a .venv."""
    course = tmp_path / "course"
    (course / ".venv" / "bin").mkdir(parents=True)
    (course / ".venv" / "bin" / "python").symlink_to(sys.executable)
    unit = tmp_path / "autograder-watch.service"
    unit.write_text(filled(course).replace(f"User={USER}", "User=root"))
    proc = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    said = [ln for ln in (proc.stdout + proc.stderr).splitlines() if unit.name in ln]
    assert proc.returncode == 0 and not said, proc.stdout + proc.stderr


def test_the_jupyterhub_service_runs_the_watcher():
    python = str(ROOT / ".venv" / "bin" / "python")
    entry = watch_service(str(ROOT), USER, python)
    assert entry["name"] == "autograder-watch"
    assert entry["user"] == USER
    assert entry["cwd"] == str(ROOT)
    assert entry["command"] == [python, "-m", "autograder", "watch", "--course", str(ROOT)]
    assert entry["environment"]["PATH"].split(os.pathsep)[0] == str(ROOT / ".venv" / "bin")

    path = os.pathsep.join([str(Path(sys.executable).parent), entry["environment"]["PATH"]])
    proc = run_help([sys.executable, *entry["command"][1:]], entry["cwd"], path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage: python -m autograder watch" in proc.stdout


def test_jupyterhub_takes_the_entry():
    """JupyterHub's own check (JupyterHub.init_services: every key an input of Service,
    each value valid for it) where JupyterHub is installed; otherwise the documented keys
    of a managed service."""
    entry = watch_service("/srv/course", USER, "/srv/course/.venv/bin/python")
    try:
        from jupyterhub.services.service import Service
    except ImportError:
        assert set(entry) <= {"name", "command", "environment", "user", "cwd", "admin"}
        assert set(entry) == set(SERVICE_KEYS)
        return
    service = Service()
    traits = service.traits(input=True)
    for key, value in entry.items():
        assert key in traits, f"JupyterHub has no service field {key!r}"
        setattr(service, key, value)  # traitlets validates the value
    assert service.managed


def test_the_snippet_works_as_documented_in_jupyterhub_config():
    """exec'd into a config file's namespace, then appended to c.JupyterHub.services."""
    from traitlets.config import Config

    ns = {"c": Config()}
    snippet = DEPLOY / "jupyterhub_service.py"
    exec(compile(snippet.read_text(), str(snippet), "exec"), ns)
    entry = ns["watch_service"]("/srv/course", USER, "/srv/course/.venv/bin/python")
    ns["c"].JupyterHub.services.append(entry)
    assert ns["c"].JupyterHub.services.get_value([]) == [entry]
