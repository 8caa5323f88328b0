"""The kit's public API, pinned: what each kit module (source/.shared/) gives is its
``__all__``, and the grader (everything in autograder/) uses only public names of them.

A name with a leading underscore is the kit's own business: it may change with any
release of the kit without anyone else noticing, which is only true if nothing else
reads it. The grader loads the kit by path (``verdicts/hidden/common.py``: ``kit``,
``quizkit``), the launcher and ``autograder self-check`` load ``checkkit.py``."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers import ROOT, load_kit

from autograder.course import KITS

API = {
    "coursekit": [
        # what lessons and sets import
        "CheckFailed",
        "call",
        "call_printed",
        "check",
        "check_close",
        "check_near",
        "check_raises",
        "describe_graph",
        "dot",
        "draw_graph",
        "engine",
        "expect",
        "graph_nodes",
        "is_close",
        "nodes_only",
        "passed",
        "recording",
        "run_closures",
        "self_check",
        "show_plot",
        # what engine() is made of, which the grader reads too
        "ENGINE_LESSONS",
        "ENGINE_TAG",
        "EngineNotFound",
        "engine_cells",
        "engine_lesson",
        "read_notebook",
        "saved_results",
    ],
    "quizkit": [
        # what a quiz notebook uses
        "Quiz",
        "answer_problem",
        "check_answer",
        # what the grader reads too
        "FUNCTION_TOL",
        "NUMBER_TOL",
        "QUIZ_MIME",
        "STUDENT_ID_ENV",
        "Pick",
        "Practice",
        "Variant",
        "decode",
        "encode",
        "is_right",
        "load_questions",
        "quiz_id",
        "quiz_variant",
        "student_id",
    ],
    "checkkit": [
        "live_results",
        "self_check",
        "self_check_overview",
        "self_check_table",
        "visible_checks",
    ],
}

# The names the grader binds a kit module to (``kit = _load(..., "coursekit.py")``, ``from
# .common import kit, quizkit``, ``kit = load_kit()``, a launcher's ``kit = ...``).
ALIASES = {"kit", "quizkit", "coursekit", "checkkit"}
KIT_LOADERS = {"_load", "load_kit"}  # (a launcher names its module_from_spec kit)


def test_every_kit_module_is_pinned():
    assert sorted(f"{name}.py" for name in API) == sorted(KITS)


@pytest.mark.parametrize("name", sorted(API))
def test_each_kit_module_gives_exactly_its_pinned_api(name):
    module = load_kit(name)
    assert module.__all__ == API[name], f"{name}.__all__ changed: update API here, on purpose"
    for public in module.__all__:
        assert not public.startswith("_"), public
        assert hasattr(module, public), f"{name}.{public} is in __all__ but not defined"


def _grader_files() -> list[Path]:
    return sorted(p for p in (ROOT / "autograder").rglob("*.py") if "__pycache__" not in p.parts)


def _mentions_a_kit(node: ast.AST) -> bool:
    """Whether an expression loads a kit module: a call of a loader with a kit's file."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    text = ast.unparse(node)
    return name in KIT_LOADERS and any(kit.removesuffix(".py") in text for kit in KITS)


def test_the_grader_binds_kit_modules_only_to_the_known_names():
    """So that the scan below sees every use: a kit module loaded in autograder/ is
    assigned to one of ALIASES."""
    strays = []
    for path in _grader_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and _mentions_a_kit(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name) and target.id not in ALIASES:
                        strays.append(f"{path.relative_to(ROOT)}:{node.lineno} {target.id}")
    assert not strays, strays


def test_the_grader_uses_no_private_name_of_the_kit():
    private = []
    for path in _grader_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in ALIASES
                and node.attr.startswith("_")
                and not (node.attr.startswith("__") and node.attr.endswith("__"))
            ):
                private.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)}")
    assert not private, f"the grader reads private names of the kit: {private}"


def test_the_grader_uses_only_names_the_kit_gives():
    """Every attribute the grader reads of ``kit`` is in coursekit's API, of ``quizkit``
    in quizkit's (so the pinned API is also all the grader may rely on)."""
    gives = {"kit": set(API["coursekit"]), "quizkit": set(API["quizkit"])}
    for path in _grader_files():
        text = path.read_text(encoding="utf-8")
        if "kit" not in text or path.name in ("launcher.py", "selfcheck.py"):
            continue
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in gives
                and not node.attr.startswith("__")
            ):
                assert node.attr in gives[node.value.id], (
                    f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node)} is not public"
                )


def test_the_launcher_and_the_command_run_the_self_check_by_its_public_name():
    for rel in ("autograder/students/launcher.py", "autograder/students/selfcheck.py"):
        text = (ROOT / rel).read_text(encoding="utf-8")
        assert "kit.self_check_table(" in text, rel
        assert "checkkit" in text, rel


def test_a_notebook_saved_before_the_split_still_imports_the_moved_names():
    """Quiz and the self-check's functions lived in coursekit: a student's notebook saved
    then (my-work/ is never replaced) imports them from there."""
    kit = load_kit("coursekit")
    quizkit, selfcheck = load_kit("quizkit"), load_kit("checkkit")
    assert kit.Quiz.__qualname__ == quizkit.Quiz.__qualname__ == "Quiz"
    assert kit.self_check_table.__name__ == selfcheck.self_check_table.__name__
    with pytest.raises(AttributeError):
        kit.no_such_name  # noqa: B018
