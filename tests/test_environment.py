"""pip and conda list the same packages with the same version ranges.

requirements.txt (+ requirements-test.txt, which pulls it in with ``-r``) is what pip
installs; environment.yml is the same set for conda. A package added to one list only,
or a range changed in one only, fails here.

A few packages have other names on conda-forge, or exist on one side only:

  conda ``python-graphviz``  is pip's ``graphviz`` (the Python wrapper);
  conda ``pytorch-cpu``      is pip's ``torch``;
  conda ``graphviz``         is the Graphviz program (``dot``), which pip cannot install;
  conda ``python``, ``pip``  are the interpreter and installer themselves.

Entries under ``pip:`` in environment.yml are pip requirements installed into the conda
environment, so they count as conda's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]

CONDA_TO_PIP = {"python-graphviz": "graphviz", "pytorch-cpu": "torch"}
CONDA_ONLY = {"python", "pip", "graphviz"}  # graphviz here is the `dot` program


def read_requirements(path: Path) -> dict[str, SpecifierSet]:
    """name -> version range, for a pip requirements file, following ``-r`` includes."""
    found: dict[str, SpecifierSet] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = re.sub(r"(^|\s)#.*", "", raw).strip()
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ")):
            included = read_requirements(path.parent / line.split(maxsplit=1)[1])
            for name, spec in included.items():
                _add(found, name, spec, f"{path.name} (via -r)")
            continue
        if line.startswith("-"):
            raise ValueError(f"{path.name}:{number}: option {line!r} is not understood here")
        req = Requirement(line)
        _add(found, canonicalize_name(req.name), req.specifier, path.name)
    return found


_CONDA_SPEC = re.compile(r"^(?:[\w.-]+::)?(?P<name>[A-Za-z0-9_.-]+)\s*(?P<spec>[<>=!~].*)?$")


def read_environment(path: Path) -> tuple[dict[str, SpecifierSet], set[str]]:
    """(pip name -> version range, conda-only names) for a conda environment.yml."""
    env = yaml.safe_load(path.read_text())
    found: dict[str, SpecifierSet] = {}
    conda_only: set[str] = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):  # the `pip:` section: ordinary pip requirement strings
            for line in dep.get("pip", []):
                req = Requirement(line)
                _add(found, canonicalize_name(req.name), req.specifier, "environment.yml pip:")
            continue
        match = _CONDA_SPEC.match(dep.strip())
        if match is None:
            raise ValueError(f"environment.yml: cannot read the conda spec {dep!r}")
        name = match["name"].lower()
        if name in CONDA_ONLY:
            conda_only.add(name)
            continue
        spec = SpecifierSet((match["spec"] or "").replace(" ", ""))
        _add(found, canonicalize_name(CONDA_TO_PIP.get(name, name)), spec, "environment.yml")
    return found, conda_only


def _add(found: dict[str, SpecifierSet], name: str, spec: SpecifierSet, where: str) -> None:
    if name in found:
        raise ValueError(f"{name} is listed twice ({where})")
    found[name] = spec


def differences(pip: dict[str, SpecifierSet], conda: dict[str, SpecifierSet]) -> list[str]:
    """Everything that is not the same in the two lists, one sentence each."""
    problems = []
    for name in sorted(pip.keys() - conda.keys()):
        problems.append(f"{name}{pip[name]} is in requirements*.txt but not in environment.yml")
    for name in sorted(conda.keys() - pip.keys()):
        problems.append(f"{name}{conda[name]} is in environment.yml but not in requirements*.txt")
    for name in sorted(pip.keys() & conda.keys()):
        if pip[name] != conda[name]:
            problems.append(
                f"{name}: requirements*.txt says {str(pip[name]) or 'any version'}, "
                f"environment.yml says {str(conda[name]) or 'any version'}"
            )
    return problems


# ---- the real files ------------------------------------------------------------------------


def test_pip_and_conda_list_the_same_packages_and_ranges():
    pip = read_requirements(ROOT / "requirements-test.txt")
    conda, _ = read_environment(ROOT / "environment.yml")
    assert differences(pip, conda) == []


def test_test_requirements_include_the_course_requirements():
    course = read_requirements(ROOT / "requirements.txt")
    everything = read_requirements(ROOT / "requirements-test.txt")
    assert course.items() <= everything.items()
    assert {"torch", "micrograd", "hypothesis", "pytest"} <= everything.keys()


def test_conda_only_entries_are_the_documented_ones():
    _, conda_only = read_environment(ROOT / "environment.yml")
    assert conda_only == CONDA_ONLY  # python, pip and the Graphviz program are all there


def test_conda_python_range_admits_the_projects_minimum_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    pyproject = (ROOT / "pyproject.toml").read_text()
    minimum = re.search(r'requires-python\s*=\s*">=\s*([\d.]+)"', pyproject)[1]
    assert minimum in SpecifierSet(python.removeprefix("python"))


# ---- the checker itself notices differences -------------------------------------------------


@pytest.fixture
def files(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy>=1.26,<3  # arrays\ngraphviz>=0.20\n")
    (tmp_path / "requirements-test.txt").write_text(
        "# tests\n-r requirements.txt\n\npytest>=8,<10\ntorch==2.13.0\nmicrograd==0.1.0\n"
    )
    env = {
        "name": "t",
        "dependencies": [
            "python>=3.11",
            "numpy<3,>=1.26",  # the same range, written in another order
            "python-graphviz>=0.20",
            "graphviz",
            "pytest>=8,<10",
            "pytorch-cpu==2.13.0",
            "pip",
            {"pip": ["micrograd==0.1.0"]},
        ],
    }
    return tmp_path, env


def check(tmp_path, env, pip_lines=()):
    req = tmp_path / "requirements-test.txt"
    req.write_text(req.read_text() + "".join(f"{line}\n" for line in pip_lines))
    (tmp_path / "environment.yml").write_text(yaml.safe_dump(env))
    pip = read_requirements(req)
    conda, _ = read_environment(tmp_path / "environment.yml")
    return differences(pip, conda)


def test_checker_accepts_matching_files(files):
    assert check(*files) == []


def test_checker_notices_a_package_only_pip_lists(files):
    problems = check(*files, pip_lines=["requests>=2"])
    assert problems == ["requests>=2 is in requirements*.txt but not in environment.yml"]


def test_checker_notices_a_package_only_conda_lists(files):
    tmp_path, env = files
    env["dependencies"].insert(1, "scipy>=1.11")
    assert check(tmp_path, env) == [
        "scipy>=1.11 is in environment.yml but not in requirements*.txt"
    ]


def test_checker_notices_a_pip_section_package_only_conda_lists(files):
    tmp_path, env = files
    env["dependencies"][-1]["pip"].append("playwright>=1.45")
    assert len(check(tmp_path, env)) == 1


@pytest.mark.parametrize(
    "conda_numpy", ["numpy>=1.26,<2", "numpy>=1.25,<3", "numpy>=1.26", "numpy", "numpy==1.26"]
)
def test_checker_notices_different_ranges(files, conda_numpy):
    tmp_path, env = files
    env["dependencies"][1] = conda_numpy
    [problem] = check(tmp_path, env)
    assert problem.startswith("numpy: requirements*.txt says")


def test_checker_knows_the_renamed_packages(files):
    tmp_path, env = files
    env["dependencies"][5] = "pytorch-cpu==2.12.0"
    assert check(tmp_path, env) == [
        "torch: requirements*.txt says ==2.13.0, environment.yml says ==2.12.0"
    ]
    env["dependencies"][5] = "pytorch-cpu==2.13.0"
    env["dependencies"].remove("python-graphviz>=0.20")  # conda's graphviz is not the wrapper
    assert check(tmp_path, env) == [
        "graphviz>=0.20 is in requirements*.txt but not in environment.yml"
    ]


def test_checker_refuses_duplicates_and_unknown_options(tmp_path):
    (tmp_path / "r.txt").write_text("numpy>=1\nNumPy<3\n")
    with pytest.raises(ValueError, match="numpy is listed twice"):
        read_requirements(tmp_path / "r.txt")
    (tmp_path / "r.txt").write_text("--index-url https://example.org/simple\n")
    with pytest.raises(ValueError, match="not understood"):
        read_requirements(tmp_path / "r.txt")


def test_reading_a_notebook_builds_no_iri_grammar():
    """Every nbgrader command and JupyterLab's start import nbformat, which imports
    jsonschema: from 4.25 on, that builds rfc3987-syntax's grammar (a second each time;
    requirements-student.txt pins jsonschema below it). Checked in this environment."""
    import subprocess
    import sys

    code = "import sys, nbformat; print(sorted(set(sys.modules) & {M!r}))"
    modules = {"rfc3987_syntax", "lark"}
    proc = subprocess.run(
        [sys.executable, "-c", code.replace("{M!r}", repr(modules))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]", f"importing nbformat loads {proc.stdout.strip()}"
