"""The building blocks of an answer's shape check (answers.py, set_shapes.py): each
raises ``Malformed`` with what is off."""

from __future__ import annotations

FAILURE = {"failed", "step", "error", "type", "message"}


class Malformed(Exception):
    """An answer that is not what the probe sends: the message says what is off."""


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise Malformed(what)


def plain(x, depth: int = 0) -> None:
    """A value as the probe's ``plain`` gives it: None, a bool, a number, a string, a list
    of those, or {"repr", "type"} for anything else."""
    if x is None or isinstance(x, (bool, int, float)):
        return
    if isinstance(x, str):
        return _need(len(x) <= 400, "a string longer than the probe sends")
    if isinstance(x, list):
        _need(depth < 4, "a list nested deeper than the probe sends")
        for item in x:
            plain(item, depth + 1)
        return
    _need(
        isinstance(x, dict)
        and set(x) == {"repr", "type"}
        and all(isinstance(v, str) and len(v) <= 400 for v in x.values()),
        "a value of a kind the probe never sends",
    )


def plains(x, n: int | None = None, what: str = "values") -> None:
    _need(isinstance(x, list), f"{what}: not a list")
    _need(n is None or len(x) == n, f"{what}: {len(x)} entries instead of {n}")
    for item in x:
        plain(item)


def text(x, width: int = 800) -> None:
    _need(isinstance(x, str) and len(x) <= width, "a text the probe never sends")


def keys(entry, required: set, optional: set = frozenset()) -> None:
    _need(isinstance(entry, dict), "an entry that is not a mapping")
    have = set(entry)
    _need(required <= have, f"missing {sorted(required - have)}")
    _need(have <= required | optional, f"unexpected {sorted(have - required - optional)}")


def failure(entry, stages: set[str], extra: set = frozenset()) -> bool:
    """True when ``entry`` is the probe's report of a failure (checked in full)."""
    if not (isinstance(entry, dict) and "failed" in entry):
        return False
    keys(entry, FAILURE, extra)
    _need(entry["failed"] in stages, "a failure at an unknown stage")
    _need(
        entry["step"] is None
        or (isinstance(entry["step"], int) and not isinstance(entry["step"], bool)),
        "a bad step",
    )
    for name in ("error", "type", "message"):
        text(entry[name])
    return True


def entries(result, n: int, what: str) -> list:
    _need(isinstance(result, list), f"{what}: not a list")
    _need(len(result) == n, f"{len(result)} {what} instead of {n}")
    return result
