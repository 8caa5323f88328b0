"""The grader's record of one graded submission, ``GradingRecord``.

``grade`` writes one per submission it grades (``grade.records.install``), as JSON in
``autograded/<student>/<assignment>/.autograder.json`` (``course.RECORD``); ``grade``
reads it back to tell whether the submission needs grading again, and ``watch``,
``feedback``, ``export`` and ``report`` read what it says (``Course.read_record``).

The folder it lives in holds what a student's kernel wrote, so a record is read as
untrusted input, in one way:

- a file that is not a record at all (not JSON, not a JSON object, larger than
  ``MAX_BYTES``, or of a ``version`` other than ``VERSION``) reads as no record
  (``from_json`` raises ``ValueError``, ``read`` returns None);
- otherwise each field is checked on its own: a field that is missing, of the wrong type,
  not finite, or too large (a string over ``MAX_TEXT`` characters, a list or mapping over
  ``MAX_ITEMS`` entries) is replaced by its default (the dataclass's: ``""``, ``0.0``,
  ``False``, empty, or None for "not known"); an entry of a list or mapping that is wrong
  is dropped. Either way the field is named in ``invalid``.

A record with an invalid field is not ``complete``: it is never ``current``, so ``grade``
grades the submission again, and ``to_json`` leaves its invalid fields out (a record
written back stays incomplete). What it says is still shown (the report and the exported
grades show the valid fields, the defaults for the others), and nothing crashes on it.

Records written before the ``version`` field have the fields of version 1 without it:
a record with no ``version`` is version 1.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

VERSION = 1  # the layout below; bump when a field changes meaning, and read older ones
MAX_BYTES = 8 * 2**20  # a record file larger is not read
MAX_TEXT = 100_000  # characters of any one string
MAX_ITEMS = 10_000  # entries of any one list or mapping


@dataclass(frozen=True, kw_only=True)
class GradingRecord:
    """What ``grade`` recorded of one graded submission (see the module's doc)."""

    version: int = VERSION
    student: str = ""
    assignment: str = ""
    submission_digest: str = ""  # intake.discovery.folder_digest of what was graded
    grader_digest: str = ""  # grade.records.grader_digest of what graded it
    score: float = 0.0  # after the late penalty, as in the gradebook
    max_score: float = 0.0
    auto_score: float = 0.0  # the autograder's, to tell whether the gradebook still has it
    problem: bool = False  # some notebook or cell could not be graded as it should
    note: str = ""  # the one-line note
    notes: dict[str, list[str]] = field(default_factory=dict)  # notebook ("": folder) -> notes
    cells: dict[str, float | None] = field(default_factory=dict)  # "notebook/cell" -> points
    runs: int = 0  # runs of the notebooks it took
    seconds: float | None = None  # grading time (None: not known)
    late_seconds: float = 0.0
    seed: int | None = None  # the hidden tests' inputs
    isolation: str | None = None  # the weakest sandbox a kernel ran under (None: no kernel)
    review: list[str] = field(default_factory=list)  # flags for review
    graded_at: str = ""  # ISO 8601, UTC
    invalid: frozenset[str] = field(default=frozenset(), compare=False)  # see the module doc

    @property
    def complete(self) -> bool:
        """Every field was there and valid."""
        return not self.invalid

    def current(self, submission_digest: str, grader_digest: str | None = None) -> bool:
        """Whether this record is complete and of exactly these submitted files (and, when
        given, this grader): if not, the submission is to be graded again."""
        return (
            self.complete
            and self.submission_digest == submission_digest
            and (grader_digest is None or self.grader_digest == grader_digest)
        )

    def to_json(self) -> str:
        """The record file's text: every field but ``invalid`` and the fields it names."""
        data = {
            f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name != "invalid" and f.name not in self.invalid
        }
        return json.dumps(data, indent=1, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> GradingRecord:
        """The record in ``text``, each field checked (see the module doc); ``ValueError``
        if ``text`` is not a record of this layout at all."""
        if len(text) > MAX_BYTES:
            raise ValueError(f"larger than {MAX_BYTES // 2**20} MiB")
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        version = data.get("version", 1)  # records before this field are version 1
        if type(version) is not int or version != VERSION:
            raise ValueError(f"version {str(version)[:20]!r} (this grader reads {VERSION})")
        values, invalid = {}, set()
        for name, check in _CHECKS.items():
            value, whole = check(data[name]) if name in data else (_BAD, False)
            if not whole:
                invalid.add(name)
            if value is not _BAD:
                values[name] = value
        return cls(**values, invalid=frozenset(invalid))

    @classmethod
    def read(cls, path: Path) -> GradingRecord | None:
        """The record in the file ``path`` (None: there is none, or it is not a record)."""
        try:
            if not path.is_file():  # none, or a pipe or device that would not end
                return None
            with open(path, "rb") as fh:
                text = fh.read(MAX_BYTES + 1)  # bounded, whatever the file is
            return cls.from_json(text)
        except (OSError, ValueError):
            return None


_BAD = object()  # a wrong value: the field gets its default


def _is_text(x) -> bool:
    return isinstance(x, str) and len(x) <= MAX_TEXT


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _is_points(x) -> bool:
    return x is None or _is_number(x)


def _is_texts(x) -> bool:
    return isinstance(x, list) and len(x) <= MAX_ITEMS and all(map(_is_text, x))


def _value(ok, convert=lambda x: x):
    """The check of a plain field: (its value, True), or (_BAD, False)."""
    return lambda x: (convert(x), True) if ok(x) else (_BAD, False)


def _list(ok):
    """The check of a list field: its good entries, and whether all were good."""

    def check(x):
        if not isinstance(x, list) or len(x) > MAX_ITEMS:
            return _BAD, False
        good = [v for v in x if ok(v)]
        return good, len(good) == len(x)

    return check


def _mapping(ok, convert=lambda x: x):
    """The check of a mapping field (keys are text): its good entries, and whether all
    were good."""

    def check(x):
        if not isinstance(x, dict) or len(x) > MAX_ITEMS:
            return _BAD, False
        good = {k: convert(v) for k, v in x.items() if _is_text(k) and ok(v)}
        return good, len(good) == len(x)

    return check


def _float(x) -> float:
    return float(x)


def _float_or_none(x) -> float | None:
    return None if x is None else float(x)


# Each field's check (a field not here is not read: ``version`` and ``invalid``).
_CHECKS = {
    "student": _value(_is_text),
    "assignment": _value(_is_text),
    "submission_digest": _value(_is_text),
    "grader_digest": _value(_is_text),
    "score": _value(_is_number, _float),
    "max_score": _value(_is_number, _float),
    "auto_score": _value(_is_number, _float),
    "problem": _value(lambda x: isinstance(x, bool)),
    "note": _value(_is_text),
    "notes": _mapping(_is_texts),
    "cells": _mapping(_is_points, _float_or_none),
    "runs": _value(lambda x: type(x) is int and x >= 0),
    "seconds": _value(lambda x: _is_number(x) and x >= 0, _float),
    "late_seconds": _value(_is_number, _float),
    "seed": _value(lambda x: type(x) is int),
    "isolation": _value(lambda x: x is None or _is_text(x)),
    "review": _list(_is_text),
    "graded_at": _value(_is_text),
}
