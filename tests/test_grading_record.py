"""The grader's record as a type (autograder/record.py): written and read back whole, an
old record (no ``version``) read as version 1, and every field read as untrusted input:
missing, of the wrong type or too large, it is its default and the record is not
``complete`` (so never ``current``: grade grades it again); a file that is not a record
at all reads as None."""

from __future__ import annotations

import dataclasses
import json

import pytest

from autograder.course import RECORD, open_course
from autograder.record import MAX_BYTES, MAX_ITEMS, MAX_TEXT, VERSION, GradingRecord

# A record with exactly the keys `grade` wrote before records had a version.
OLD = {
    "student": "ada",
    "assignment": "01_value",
    "submission_digest": "5f1d0c9e2a7b",
    "grader_digest": "a3b4c5d6e7f8",
    "score": 7.5,
    "max_score": 10,
    "auto_score": 7.5,
    "problem": True,
    "note": "cell 3 (`value_test_add`) was stopped after the 60 s per-cell limit",
    "notes": {"": ["a folder note"], "value": ["cell 3 was stopped"]},
    "cells": {"value/t1": 4, "value/t2": 3.5, "value/manual": None},
    "runs": 2,
    "seconds": 12.3,
    "late_seconds": 0,
    "seed": 123456789012,
    "isolation": "bubblewrap",
    "review": ["uses IPython input transformers"],
    "graded_at": "2026-09-15T10:00:00+00:00",
}
FIELDS = [f.name for f in dataclasses.fields(GradingRecord) if f.name not in ("version", "invalid")]
DEFAULT = GradingRecord()
WHOLE = GradingRecord.from_json(json.dumps(OLD))


def test_the_record_has_exactly_the_fields_grade_writes():
    assert sorted(FIELDS) == sorted(OLD)


def test_round_trip():
    record = GradingRecord.from_json(json.dumps(OLD))
    assert record.complete and record.version == VERSION == 1
    again = GradingRecord.from_json(record.to_json())
    assert again == record and again.complete
    written = json.loads(record.to_json())
    assert written == {"version": 1, **OLD}  # ints read as floats compare equal
    assert isinstance(record.max_score, float) and record.cells["value/manual"] is None


def test_an_old_record_without_a_version_is_version_1_and_current():
    record = GradingRecord.from_json(json.dumps(OLD))
    assert record.version == 1 and not record.invalid
    assert record.current("5f1d0c9e2a7b", "a3b4c5d6e7f8")
    assert record.current("5f1d0c9e2a7b")  # the watcher's check: the submitted files only
    assert not record.current("5f1d0c9e2a7b", "another grader")
    assert not record.current("other files", "a3b4c5d6e7f8")
    assert (record.score, record.note, record.review) == (7.5, OLD["note"], OLD["review"])


def test_isolation_may_be_none_when_no_kernel_ran():
    record = GradingRecord.from_json(json.dumps({**OLD, "isolation": None}))
    assert record.complete and record.isolation is None


# (field, a wrong value) for every field: wrong types, non-finite numbers, sizes.
WRONG = [
    ("student", 5),
    ("assignment", ["01_value"]),
    ("submission_digest", None),
    ("grader_digest", {"x": 1}),
    ("score", "10"),
    ("score", True),
    ("max_score", float("inf")),
    ("auto_score", None),
    ("problem", "yes"),
    ("problem", 1),
    ("note", 42),
    ("note", "x" * (MAX_TEXT + 1)),
    ("notes", ["a note"]),
    ("cells", [1, 2]),
    ("runs", 1.5),
    ("runs", -1),
    ("seconds", -3),
    ("seconds", float("nan")),
    ("seconds", None),
    ("late_seconds", "0"),
    ("seed", 1.0),
    ("isolation", 3),
    ("review", "imports torch"),
    ("review", ["x"] * (MAX_ITEMS + 1)),
    ("graded_at", 20260915),
]


@pytest.mark.parametrize(
    ("name", "value"), WRONG, ids=[f"{n}-{i}" for i, (n, _) in enumerate(WRONG)]
)
def test_a_wrong_field_is_its_default_and_the_record_is_not_current(name, value):
    record = GradingRecord.from_json(json.dumps({**OLD, name: value}))
    assert record.invalid == {name}
    assert getattr(record, name) == getattr(DEFAULT, name)
    assert not record.complete and not record.current("5f1d0c9e2a7b", "a3b4c5d6e7f8")
    for other in FIELDS:  # the rest is read as it is
        if other != name:
            assert getattr(record, other) == getattr(WHOLE, other), other


@pytest.mark.parametrize("name", FIELDS)
def test_a_missing_field_is_its_default_and_the_record_is_not_current(name):
    data = {k: v for k, v in OLD.items() if k != name}
    record = GradingRecord.from_json(json.dumps(data))
    assert record.invalid == {name} and getattr(record, name) == getattr(DEFAULT, name)
    assert not record.current("5f1d0c9e2a7b", "a3b4c5d6e7f8")
    # written back, it stays incomplete: the field is left out, not written as its default
    assert name not in json.loads(record.to_json())
    assert GradingRecord.from_json(record.to_json()).invalid == {name}


def test_wrong_entries_of_a_list_or_mapping_are_dropped():
    record = GradingRecord.from_json(
        json.dumps(
            {
                **OLD,
                "review": ["imports torch", 3, None, "y" * (MAX_TEXT + 1), "calls os.kill"],
                "cells": {"value/t1": 4, "value/t2": "4", "value/t3": True},
                "notes": {"": ["fine"], "value": ["fine", 5], "x" * (MAX_TEXT + 1): []},
            }
        )
    )
    assert record.review == ["imports torch", "calls os.kill"]
    assert record.cells == {"value/t1": 4.0}
    assert record.notes == {"": ["fine"]}
    assert record.invalid == {"review", "cells", "notes"}


def test_unknown_keys_are_ignored():
    record = GradingRecord.from_json(json.dumps({**OLD, "later": [1, 2]}))
    assert record.complete


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        "[1, 2]",
        '"a string"',
        "null",
        "[" * 100_000,  # nested too deeply for the parser
        json.dumps({**OLD, "version": 2}),  # a later layout than this grader reads
        json.dumps({**OLD, "version": "1"}),
        json.dumps({**OLD, "version": True}),
        " " * (MAX_BYTES + 1),
    ],
    ids=["not-json", "list", "string", "null", "deep", "v2", "v-text", "v-bool", "huge"],
)
def test_what_is_not_a_record_raises_value_error_and_reads_as_none(tmp_path, text):
    with pytest.raises(ValueError):
        GradingRecord.from_json(text)
    path = tmp_path / RECORD
    path.write_text(text)
    assert GradingRecord.read(path) is None


def test_read_is_none_for_no_file_a_folder_or_a_pipe(tmp_path):
    import os

    assert GradingRecord.read(tmp_path / "none.json") is None
    assert GradingRecord.read(tmp_path) is None
    os.mkfifo(tmp_path / "pipe")
    assert GradingRecord.read(tmp_path / "pipe") is None  # not opened: it would wait


def test_course_reads_its_records_as_the_type(tmp_path):
    course = open_course(tmp_path)
    path = course.record_path("ada", "01_value")
    path.parent.mkdir(parents=True)
    assert course.read_record("ada", "01_value") is None
    path.write_text(json.dumps(OLD))
    assert course.read_record("ada", "01_value") == GradingRecord.from_json(json.dumps(OLD))
    path.write_text(json.dumps([OLD]))
    assert course.read_record("ada", "01_value") is None


def test_install_writes_the_record_that_is_read_back(tmp_path):
    from autograder.grade.records import install

    course = open_course(tmp_path)
    record = GradingRecord.from_json(json.dumps(OLD))
    install(course, "ada", "01_value", None, {}, record)
    assert course.read_record("ada", "01_value") == record
    assert json.loads(course.record_path("ada", "01_value").read_text())["version"] == VERSION
