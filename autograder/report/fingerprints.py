"""A submission's own code, read and fingerprinted: the pieces ``similarity`` compares.

``student_code`` reads a student's solution cells (the cells whose grade id is a solution
cell of the release notebook, in the release's order; a cell left as released left out)
from notebooks that may be anything: not JSON or not a notebook raise ``Unusable`` with a
few words saying why; a notebook read as the grader reads it (bytes that are not UTF-8
replaced, nbformat 3's worksheets, a cell whose source is not text taken as empty) is
compared. Sizes are capped on what is compared, never on what is not (the rule, in
``similarity``'s docstring): ``TooLarge`` (flagged for review) only past the grader's own
file limit or ``MAX_SOURCE_CHARS``, far beyond any notebook. ``filter_code`` writes a cell as
copydetect's filter does (names, strings, comments and layout gone) and keeps where each
token is; ``fingerprint`` winnows it with copydetect's ``CodeFingerprint``, the release's
code as boilerplate (``read_release``), hashing k-grams with ``kgram_hashes``, the same in
every process. ``matched_spans`` finds the code two submissions have in common, in their own
characters. The method and its numbers: ``similarity``'s docstring.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

K = 30  # noise threshold: a match shorter than 30 filtered characters is noise
GUARANTEE = 35  # guarantee threshold: a match this long is always found
WINDOW = GUARANTEE - K + 1  # copydetect's window for winnowing

# Caps. What is compared is capped: MAX_CODE_CHARS characters of filtered code once the
# given code and the common code are out (``Code.tokens``; the course's largest: ~2,500).
# The raw caps only keep reading and lexing bounded, far beyond any notebook: a notebook the
# grader reads is read (its limit, worker/submission.py's), and solution cells of up to
# 1,000,000 characters are lexed (the course's largest: ~5,000; lexing is at most ~5 s a
# million characters, comments and blank lines included). Past any cap a submission is
# flagged for review (``TooLarge``), never quietly left out.
MAX_NOTEBOOK_BYTES = 100 * 2**20  # = worker.submission.MAX_NOTEBOOK_BYTES (tests check it)
MAX_SOURCE_CHARS = 1_000_000  # raw characters of one submission's solution cells
MAX_CODE_CHARS = 64_000  # compared characters (filtered tokens) of one submission


@dataclass
class Cell:
    """One solution cell in a submission's code: ``code[start:end]``."""

    notebook: str
    grade_id: str
    start: int
    end: int


class Unusable(Exception):
    """A notebook that cannot be compared; the message says why, in a few words."""


class TooLarge(Unusable):
    """A submission past a cap (``MAX_*``): not compared, and flagged for a person to look
    at (no honest notebook comes near one)."""


def _text(source) -> str:
    """A cell's source as text, as the grader reads it (worker/submission.py: the strings of
    a list joined, anything else empty): newlines as pygments reads them, no leading or
    trailing blank lines (pygments strips them, which would shift every position), and
    characters that cannot be written as UTF-8 (lone surrogates) replaced."""
    if isinstance(source, list):
        source = "".join(s for s in source if isinstance(s, str))
    if not isinstance(source, str):
        return ""
    text = source.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff").strip("\n")
    return text.encode("utf-8", "replace").decode("utf-8")


def read_code_cells(path: Path) -> list[tuple[str | None, str]]:
    """Every code cell of the notebook at ``path``: (its nbgrader grade id or None, its
    source), read as the grader reads it (bytes that are not UTF-8 replaced, nbformat 3's
    worksheets). Raises TooLarge for a file larger than the grader reads, Unusable for one
    that is not JSON or not a notebook."""
    try:
        size = path.stat().st_size
        if size > MAX_NOTEBOOK_BYTES:
            raise TooLarge(
                f"{size / 2**20:.0f} MiB, more than the {MAX_NOTEBOOK_BYTES // 2**20} MiB read"
            )
        raw = path.read_bytes()
        try:
            nb = json.loads(raw)
        except UnicodeDecodeError:  # a stray byte, in an output say: the grader replaces it
            nb = json.loads(raw.decode("utf-8", "replace"))
    except OSError as exc:
        raise Unusable(f"cannot be read ({exc.strerror or exc})") from None
    except (ValueError, RecursionError):
        raise Unusable("not a notebook: not JSON") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if cells is None and isinstance(nb, dict) and isinstance(nb.get("worksheets"), list):
        sheets = [w.get("cells") for w in nb["worksheets"] if isinstance(w, dict)]
        cells = [c for w in sheets if isinstance(w, list) for c in w]  # nbformat 3
    if not isinstance(cells, list):
        raise Unusable("not a notebook: no list of cells")
    out = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        source = cell.get("source", cell.get("input"))
        out.append((grade_id if isinstance(grade_id, str) else None, _text(source)))
    return out


@dataclass
class Release:
    """An assignment as released: its notebooks' solution cells (grade ids in order, with
    the released source) and the fingerprints of all its code (the boilerplate)."""

    assignment: str
    solution_cells: dict[str, dict[str, str]]  # notebook file name: {grade id: source}
    boilerplate: np.ndarray


def kgram_hashes(text: str, k: int) -> np.ndarray:
    """The hash of every ``k`` characters of ``text``, as ``copydetect.utils.hashed_kgrams``
    returns them, but the same in every process: a polynomial hash of the characters (the
    Karp-Rabin hash the winnowing paper uses), mixed (splitmix64's finaliser) and kept to 52
    bits (copydetect's Python winnowing compares them as floats). copydetect uses Python's
    ``hash()``, salted afresh in each process: the fingerprints winnowing keeps, and so every
    share, would change a little (up to 0.1 on lesson 1) each time the report is made."""
    chars = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    n = len(chars) - k + 1
    if n <= 0:
        return np.array([], dtype=np.int64)
    h = np.zeros(n, dtype=np.uint64)
    for j in range(k):  # overflow wraps: arithmetic modulo 2**64
        h = h * np.uint64(1_000_003) + chars[j : j + n]
    h = h + np.uint64(0x9E3779B97F4A7C15)
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    h = h ^ (h >> np.uint64(31))
    return (h >> np.uint64(12)).astype(np.int64)


@contextlib.contextmanager
def _stable_hashes():
    """copydetect hashing k-grams with ``kgram_hashes`` (its ``hashed_kgrams``, looked up
    by ``get_document_fingerprints`` at each call, is swapped for the duration)."""
    from copydetect import utils

    salted = utils.hashed_kgrams
    utils.hashed_kgrams = kgram_hashes
    try:
        yield
    finally:
        utils.hashed_kgrams = salted


def read_release(folder: Path, assignment: str) -> Release:
    """The release notebooks in ``folder`` (notebooks/<assignment>/); raises Unusable."""
    import copydetect

    notebooks = sorted(folder.glob("*.ipynb"))
    if not notebooks:
        raise Unusable(f"no release notebook in {folder}")
    solution_cells, code = {}, []
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        ids = {
            c["metadata"]["nbgrader"]["grade_id"]
            for c in nb["cells"]
            if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("solution")
        }
        cells = read_code_cells(path)
        solution_cells[path.name] = {gid: src for gid, src in cells if gid in ids}
        code += [src for _, src in cells]
    filtered = filter_code("\n\n".join(code)).text
    with _stable_hashes():
        whole = copydetect.CodeFingerprint(assignment, K, 1, filter=False, fp=io.StringIO(filtered))
    return Release(assignment, solution_cells, np.array(sorted(whole.hashes), dtype=np.int64))


@dataclass
class Code:
    """One student's code for an assignment: their solution cells, one after another."""

    student: str
    text: str
    cells: list[Cell]
    fingerprint: object = None  # copydetect.CodeFingerprint of filter_code(text)
    filtered: Filtered | None = field(default=None, repr=False)

    @property
    def tokens(self) -> int:
        return int(self.fingerprint.token_coverage) if self.fingerprint is not None else 0


def student_code(release: Release, student: str, folder: Path) -> Code | None:
    """The student's solution cells in ``folder`` (submitted/<student>/<assignment>/), in
    the release's order; None when none of the release's notebooks is there. Raises
    Unusable for a notebook that cannot be read, TooLarge for solution cells past
    ``MAX_SOURCE_CHARS`` (the compared code's own cap, ``MAX_CODE_CHARS``, is applied to
    the filtered code: ``over_cap``)."""
    parts: list[tuple[str, str, str]] = []
    found = False
    for name, released in release.solution_cells.items():
        path = folder / name
        if not path.is_file():
            continue
        found = True
        cells = read_code_cells(path)
        for grade_id, stub in released.items():
            for gid, src in cells:
                if gid == grade_id and src.strip() and src != stub:
                    parts.append((name, grade_id, src))
    if not found:
        return None
    size = sum(len(src) for *_, src in parts)
    if size > MAX_SOURCE_CHARS:
        raise TooLarge(
            f"its solution cells hold {size:,} characters, more than the {MAX_SOURCE_CHARS:,} read"
        )
    text, cells = "", []
    for name, grade_id, src in parts:
        if text:
            text += "\n\n"
        cells.append(Cell(name, grade_id, len(text), len(text) + len(src)))
        text += src
    return Code(student, text, cells)


def over_cap(code: Code) -> TooLarge | None:
    """A TooLarge when ``code`` has more than ``MAX_CODE_CHARS`` characters of compared code
    (its tokens, once the given code and, after ``drop_common``, the common code are out):
    comments, layout, names, strings, given code cannot take a submission over it."""
    if code.tokens <= MAX_CODE_CHARS:
        return None
    return TooLarge(
        f"its solution cells hold {code.tokens:,} characters of code to compare (once "
        f"comments, layout, names, strings and given code are set aside), more than the "
        f"{MAX_CODE_CHARS:,} compared"
    )


def fingerprint(code: Code, release: Release, cache: dict | None = None) -> None:
    """Winnow ``code``'s text with copydetect, the release's code as boilerplate. Each cell
    is filtered on its own (a cell is code of its own: an unclosed bracket does not run
    into the next), through ``cache`` ({cell's source: its Filtered}) when given: in a
    class many students' cells are the same."""
    import copydetect

    cache = {} if cache is None else cache
    parts = []
    for cell in code.cells:
        source = code.text[cell.start : cell.end]
        if source not in cache:
            cache[source] = filter_code(source)
        parts.append((cache[source], cell.start))
    code.filtered = Filtered(
        "".join(f.text for f, _ in parts),
        np.concatenate([f.starts + at for f, at in parts] or [np.zeros(0, np.int32)]),
        np.concatenate([f.ends + at for f, at in parts] or [np.zeros(0, np.int32)]),
    )
    with _stable_hashes():
        code.fingerprint = copydetect.CodeFingerprint(
            f"{code.student}/{release.assignment}",
            K,
            WINDOW,
            boilerplate=release.boilerplate,
            filter=False,  # filtered already, by filter_code
            fp=io.StringIO(code.filtered.text),
        )


# ---- the matched code, in the code's own characters ----------------------------------------


@functools.cache
def _lexer():
    from pygments import lexers

    return lexers.get_lexer_by_name("python")


@dataclass
class Filtered:
    """Code as copydetect's filter writes it (``text``), and for each of its characters
    where the token it stands for starts and ends in the code."""

    text: str
    starts: np.ndarray
    ends: np.ndarray


def filter_code(code: str) -> Filtered:
    """``copydetect.utils.filter_code(code, ..., "python")``'s filtered code, written by the
    same rules from the same pygments tokens (tests/test_similarity.py checks that it is the
    same text), with where each token is: copydetect's own map back to the code is off by a
    few characters at each end of a match, and wrong after a class name. One lexing gives
    both, so each cell is lexed once.

    The rules: a variable or attribute name is written ``V``, a function name ``F``, a class
    name ``O``, a preprocessor line or shebang ``P``, a string ``S`` (its quotes kept);
    whitespace and comments are dropped; every other token (keywords, operators, numbers,
    builtins such as ``self`` and ``isinstance``) is kept as it is."""
    from pygments import token

    names = {token.Name, token.Name.Variable, token.Name.Attribute}
    starts, ends, out = [], [], []
    at = 0
    for ttype, value in _lexer().get_tokens(code):
        if ttype in names:
            written = "V"
        elif ttype in token.Name.Function:
            written = "F"
        elif ttype in token.Name.Class:
            written = "O"
        elif ttype in (token.Comment.Preproc, token.Comment.Hashbang):
            written = "P"
        elif ttype in token.Text or ttype in token.Comment:
            written = ""
        elif ttype in token.Literal.String:
            written = '"' if value in ("'", '"') else "S"
        else:
            written = value
        out.append(written)
        starts += [at] * len(written)
        ends += [at + len(value)] * len(written)
        at += len(value)
    return Filtered("".join(out), np.array(starts, np.int32), np.array(ends, np.int32))


def _raw_spans(code: Code, filtered_slices: np.ndarray) -> list[tuple[int, int]]:
    """Slices of the filtered code as spans of ``code.text``, whole tokens, merged."""
    starts, ends = code.filtered.starts, code.filtered.ends
    if not filtered_slices.size:
        return []
    spans = []
    for s, e in zip(*filtered_slices.astype(np.int64)):
        s, e = min(int(s), len(starts) - 1), min(int(e), len(ends))
        if e > s:
            spans.append((int(starts[s]), int(ends[e - 1])))
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def matched_spans(a: Code, b: Code) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The spans of a's and b's code that lie in fingerprints both have."""
    from copydetect.utils import find_fingerprint_overlap, get_copied_slices

    fa, fb = a.fingerprint, b.fingerprint
    idx_a, idx_b = find_fingerprint_overlap(fa.hashes, fb.hashes, fa.hash_idx, fb.hash_idx)
    return _raw_spans(a, get_copied_slices(idx_a, K)), _raw_spans(b, get_copied_slices(idx_b, K))
