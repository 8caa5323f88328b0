"""How much of what a kernel sends while a cell runs may be stored: ``cap``, which
``GuardedExecute.process_message`` applies to every iopub message of a cell before
nbclient stores anything of it.

A cell keeps at most ``Limits.output`` characters in all: stream text, display data and its
metadata, results, errors (name, value, traceback), the outputs an ``update_display_data``
rewrites (its size once per output it would rewrite) and widget state (comm messages). An
error over what is left is shortened rather than dropped, once per cell, so the student
still sees why the cell failed. Messages that are not what they claim to be (content not a
mapping, a display id that is not a string, an execution count that is not a number) are
dropped or mended: nbclient would otherwise fail on them and stop the whole notebook.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

ERROR_ROOM = 4000  # characters an error keeps, once per cell, when the cap is reached
MEASURED = 1 << 30  # characters a message is measured up to (channels.py caps its bytes)
STREAMS = ("stdout", "stderr")
_END = object()


def size_of(obj, limit: int) -> int:
    """Characters in ``obj`` (strings, keys, numbers of a JSON-like value), counted only
    until they pass ``limit``: measuring a huge or deep value costs no more than that."""
    total, stack = 0, [iter((obj,))]
    while stack:
        item = next(stack[-1], _END)
        if item is _END:
            stack.pop()
            continue
        if isinstance(item, (str, bytes)):
            total += len(item)
        elif isinstance(item, dict):
            total += 2 * len(item)
            stack.append(chain.from_iterable(item.items()))
        elif isinstance(item, (list, tuple)):
            total += len(item)
            stack.append(iter(item))
        else:
            total += 8
        if total > limit:
            break
    return total


def cap(msg: dict, rewrites: int, limit: int, kept: Counter, dropped: Counter) -> dict | None:
    """``msg`` as far as the cell's cap allows (None: not stored), counted in ``kept`` (or,
    what is not stored, in ``dropped``), by stream name, "display" or "error".
    ``rewrites``: how many stored outputs share the message's display id."""
    content = msg.get("content")
    kind = msg.get("msg_type")
    if not isinstance(content, dict) or not isinstance(kind, str):
        return None
    _mend(content)
    if kind in ("status", "execute_input", "clear_output"):
        return msg  # nothing of these is stored but a count and a time
    if kind == "stream":
        key = content.get("name") if content.get("name") in STREAMS else "stdout"
        content["name"] = key
        measured = {"name": key, "text": content.get("text")}
    elif kind == "error":
        key = "error"
        measured = {k: content.get(k) for k in ("ename", "evalue", "traceback")}
    else:
        key, measured = "display", content
    room = limit - sum(kept.values())
    size = size_of(measured, MEASURED)
    if kind == "update_display_data" or "display_id" in content.get("transient", {}):
        size *= max(1, rewrites + (kind != "update_display_data"))
    if size <= room:
        kept[key] += size
        return msg
    if kind == "error" and not kept["error"]:
        msg = {**msg, "content": shorten_error(content, max(room, ERROR_ROOM))}
        short = size_of(msg["content"], MEASURED)
        kept["error"] += short
        dropped["error"] += max(0, size - short)
        return msg
    dropped[key] += size
    return None


def _mend(content: dict) -> None:
    transient = content.get("transient")
    if transient is not None and not (
        isinstance(transient, dict) and isinstance(transient.get("display_id", ""), str)
    ):
        content.pop("transient")
    count = content.get("execution_count")
    if "execution_count" in content and not (type(count) is int or count is None):
        content["execution_count"] = None


def shorten_error(content: dict, room: int) -> dict:
    """An error's name, the start of its value and the end of its traceback, in ``room``
    characters or about that."""
    ename = str(content.get("ename", ""))[:100]
    evalue = str(content.get("evalue", ""))
    if len(evalue) > room // 4:
        evalue = evalue[: room // 4] + " [...]"
    lines = content.get("traceback")
    lines = [str(line) for line in lines[-200:]] if isinstance(lines, list) else []
    left = room - len(ename) - len(evalue)
    tail: list[str] = []
    for line in reversed(lines):
        if left <= 16:
            break
        if len(line) > left:
            line = "[...] " + line[len(line) - left + 6 :]
        tail.insert(0, line)
        left -= len(line)
    note = "[this error was too long: part of it was not kept]"
    return {"ename": ename, "evalue": evalue, "traceback": [note, *tail]}
