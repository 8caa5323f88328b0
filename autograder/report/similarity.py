"""Submissions whose student-written code is suspiciously alike, for a person to look at.

What is compared. For each assignment that is not a quiz (a quiz's answers are plain
values), each student's *solution cells*: the code cells whose grade id is a solution cell
of the release notebook (``notebooks/<assignment>/``), one after another in the release's
order, so that moving cells around changes nothing; a cell left as released is left out.
The release notebook's code (the given code, the stubs' ``# YOUR CODE HERE`` and ``raise
NotImplementedError()``, the checks) is copydetect's *boilerplate*: a fingerprint found in
it counts for no one. Comments, whitespace, names and the text of strings never count:
copydetect's filter turns the code into pygments tokens, drops comments and whitespace, and
writes every variable or attribute name as ``V``, every function name as ``F``, every class
name as ``O`` and every string as ``S`` (keywords, operators, numbers and builtins such as
``self`` or ``isinstance`` are kept), so a renamed, recommented, reformatted copy is the
same text. ``filter_code`` writes it by copydetect's rules (the tests check it writes the
same text as ``copydetect.utils.filter_code``), one cell at a time, and also keeps where
each token is, for the pages.

How. Winnowed fingerprints (Schleimer, Wilkerson and Aiken 2003: the method of MOSS), with
copydetect's ``CodeFingerprint``: the hashes of every ``K`` = 30 characters of the filtered
code, one kept per window so that any match of ``GUARANTEE`` = 35 characters or more is
found (copydetect's defaults are 25 and 30: see below). The hash is ``kgram_hashes``, the
same in every process (copydetect's is Python's salted ``hash()``: every share would move
by up to 0.1 from one run to the next). For a pair, ``share_a`` is the part of A's code (its
tokens once the boilerplate is out: ``tokens_a``) lying in fingerprints B has too, as
``copydetect.compare_files`` computes it; ``similarity`` is the larger share, so that a
student who copied half of someone's work is found too.

Common code. What more than half of the class wrote alike is no evidence of anything (MOSS's
``-m``): a fingerprint found in more than ``COMMON`` of an assignment's submissions, and in
at least ``COMMON_LEAST`` of them, counts for no one, like the given code (``drop_common``;
a class of ten or fewer, like the demo's, keeps everything).

When a pair is reported: ``similarity >= THRESHOLD`` (0.55) and at least ``MIN_TOKENS``
(100) tokens in common on each side. Measured on lesson 1 (tests/test_similarity.py's
notebooks), where honest solutions look most alike (the exercise dictates most of each
line): two honest solutions written in other styles share 0.43 and 0.09 with the course's
and 0.05 with each other; a copy of the course's disguised (every name renamed, methods and
functions reversed, docstrings and comments rewritten, the layout changed, cells moved)
0.79, the same done to an honest solution 0.88, half the notebook copied and disguised 0.76
(the copier's share). In lesson 5, where the methods are one or two lines and reversing
them costs the copy most, the disguised copy shares 0.68. With copydetect's k of 25 the
closest honest solution shared 0.44 to 0.53 (by hash function) and the copies 0.74 to 0.88;
with 30, 0.40 to 0.44 and 0.68 to 0.88: 0.55 sits in the middle of the gap. ``MIN_TOKENS``:
lesson 1's solution cells hold 772 tokens, its exercises 127 to 247; 100 in common is at
least a few lines of real code on both sides.

Groups. Alike submissions make many pairs (seven identical notebooks: 21). ``group_pairs``
(and ``Pairs.groups``) joins the reported pairs of an assignment into groups, the connected
components of the graph whose edges are the reported pairs, so that the report can say once
"these seven submissions share most of their code" and list the pairs inside. A group is
held together by its pairs: two of its members need not be alike themselves (A like B, B
like C). ``write_pair_pages`` writes a page for every pair of a group of up to
``ALL_PAGES`` (10), and in a larger group one for each member's most alike pair (``paged``).

Speed. Lexing is most of the time (pygments: about 8 ms a submission; the same cell is
lexed once per assignment). Comparing every pair with ``compare_files`` would take a
quarter of a millisecond a pair (45,000 pairs for 300 students: 11 s per assignment);
``_screen`` does the same sums for all pairs at once with numpy (for each fingerprint of
A's, whether B has its hash, and the characters those fingerprints cover), tested equal to
``compare_files``. benchmarks/similarity_class.py measures a generated class of 300.

Untrusted input. A notebook that is not JSON, is not a notebook, is larger than
``MAX_NOTEBOOK_BYTES``, or whose solution cells hold more than ``MAX_CODE_CHARS`` characters
is not compared: it is listed in ``Pairs.skipped`` with the reason. Nothing a student wrote
makes this module fail. On the pages every piece of a submission is escaped by jinja2, and
nothing runs (no script; the pages' Content-Security-Policy forbids any).

What the report uses: ``find_pairs(course)`` (a ``Pairs``: a list of ``Pair``, with
``skipped``, ``compared``, ``common`` and ``groups``), ``write_pair_pages(pairs, out_dir)``
and ``EVIDENCE``, the sentence every page says.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..course import NOTEBOOKS, kind
from ..errors import GraderError

K = 30  # noise threshold: a match shorter than 30 filtered characters is noise
GUARANTEE = 35  # guarantee threshold: a match this long is always found
WINDOW = GUARANTEE - K + 1  # copydetect's window for winnowing

# Both chosen on lesson 1 and checked on lesson 5 (the module's docstring has the numbers).
THRESHOLD = 0.55
MIN_TOKENS = 100

# A fingerprint in more than half the submissions (and in 10 or more) is common code.
COMMON = 0.5
COMMON_LEAST = 10

# Pages for every pair of a group of up to 10 (45 pairs); in a larger group, per member.
ALL_PAGES = 10

MAX_NOTEBOOK_BYTES = 50 * 2**20  # collect's limit for one file: no notebook needs more
MAX_CODE_CHARS = 64_000  # solution cells of one submission (the course's largest: ~5,000)

EVIDENCE = (
    "Similarity is evidence for a person to weigh, never a verdict: common code, a shared "
    "study group and the course's own hints can all explain it."
)


# ---- what the module returns ---------------------------------------------------------------


@dataclass
class Cell:
    """One solution cell in a submission's code: ``code[start:end]``."""

    notebook: str
    grade_id: str
    start: int
    end: int


@dataclass
class Pair:
    """Two submissions of an assignment whose student-written code is alike.

    ``share_a``: the part of A's code (``tokens_a`` tokens) also in B's, by copydetect;
    ``similarity``: the larger share. ``code_*``, ``cells_*`` and ``matched_*`` (spans of
    ``code_*`` found in the other) are what the pair's page shows; ``page`` is its path,
    relative to the report's folder, once ``write_pair_pages`` has written it."""

    assignment: str
    student_a: str
    student_b: str
    similarity: float
    share_a: float
    share_b: float
    tokens_a: int
    tokens_b: int
    page: str = ""
    code_a: str = field(default="", repr=False)
    code_b: str = field(default="", repr=False)
    cells_a: list[Cell] = field(default_factory=list, repr=False)
    cells_b: list[Cell] = field(default_factory=list, repr=False)
    matched_a: list[tuple[int, int]] = field(default_factory=list, repr=False)
    matched_b: list[tuple[int, int]] = field(default_factory=list, repr=False)
    sources: tuple | None = field(default=None, repr=False, compare=False)  # (Code, Code)

    @property
    def students(self) -> tuple[str, str]:
        return (self.student_a, self.student_b)


@dataclass
class Group:
    """Submissions of one assignment joined by reported pairs (a connected component):
    ``pairs`` most alike first, ``similarity`` the highest of theirs, ``lowest`` the
    lowest."""

    assignment: str
    students: list[str]
    pairs: list[Pair]
    similarity: float = 0.0
    lowest: float = 0.0

    def __post_init__(self) -> None:
        if self.pairs:
            self.similarity = max(p.similarity for p in self.pairs)
            self.lowest = min(p.similarity for p in self.pairs)


@dataclass
class Skipped:
    """A submission (or, with ``student`` empty, an assignment) that was not compared."""

    assignment: str
    student: str
    reason: str


class Pairs(list):
    """``find_pairs``'s answer: the reported pairs (a list of Pair, most alike first within
    each assignment), with ``skipped`` (what was not compared, and why), ``compared``
    (assignment: how many submissions were compared), ``common`` (assignment: how many
    fingerprints were common code, ``drop_common``) and ``groups``."""

    def __init__(self, pairs=(), skipped=(), compared=None, common=None):
        super().__init__(pairs)
        self.skipped: list[Skipped] = list(skipped)
        self.compared: dict[str, int] = dict(compared or {})
        self.common: dict[str, int] = dict(common or {})  # assignment: fingerprints dropped

    @property
    def groups(self) -> list[Group]:
        return group_pairs(self)


def group_pairs(pairs: list[Pair]) -> list[Group]:
    """The reported pairs joined into groups per assignment (connected components), largest
    first; a pair alone is a group of two."""
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for p in pairs:
        a, b = root((p.assignment, p.student_a)), root((p.assignment, p.student_b))
        if a != b:
            parent[max(a, b)] = min(a, b)
    members: dict[tuple[str, str], list[Pair]] = {}
    for p in pairs:
        members.setdefault(root((p.assignment, p.student_a)), []).append(p)
    groups = []
    for (assignment, _), inside in members.items():
        students = sorted({s for p in inside for s in p.students})
        inside = sorted(inside, key=lambda p: (-p.similarity, p.students))
        groups.append(Group(assignment, students, inside))
    order = {a: i for i, a in enumerate(dict.fromkeys(p.assignment for p in pairs))}
    return sorted(groups, key=lambda g: (order[g.assignment], -len(g.students), g.students))


# ---- reading notebooks ---------------------------------------------------------------------


class Unusable(Exception):
    """A notebook that cannot be compared; the message says why, in a few words."""


def _text(source) -> str:
    """A cell's source as text: newlines as pygments reads them, no leading or trailing
    blank lines (pygments strips them, which would shift every position), and characters
    that cannot be written as UTF-8 (lone surrogates) replaced."""
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        source = "".join(source)
    if not isinstance(source, str):
        raise Unusable("a cell's source is not text")
    text = source.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff").strip("\n")
    return text.encode("utf-8", "replace").decode("utf-8")


def read_code_cells(path: Path) -> list[tuple[str | None, str]]:
    """Every code cell of the notebook at ``path``: (its nbgrader grade id or None, its
    source). Raises Unusable for a file that is too large, not JSON or not a notebook."""
    try:
        size = path.stat().st_size
        if size > MAX_NOTEBOOK_BYTES:
            raise Unusable(f"{size / 2**20:.0f} MiB, more than {MAX_NOTEBOOK_BYTES // 2**20} MiB")
        nb = json.loads(path.read_bytes())
    except OSError as exc:
        raise Unusable(f"cannot be read ({exc.strerror or exc})") from None
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise Unusable("not a notebook: not JSON") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise Unusable("not a notebook: no list of cells")
    out = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        out.append((grade_id if isinstance(grade_id, str) else None, _text(cell.get("source"))))
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
    Unusable for a notebook that cannot be read or code too large to compare."""
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
    if size > MAX_CODE_CHARS:
        raise Unusable(
            f"its solution cells hold {size:,} characters of code, "
            f"more than the {MAX_CODE_CHARS:,} compared"
        )
    text, cells = "", []
    for name, grade_id, src in parts:
        if text:
            text += "\n\n"
        cells.append(Cell(name, grade_id, len(text), len(text) + len(src)))
        text += src
    return Code(student, text, cells)


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


# ---- comparing -----------------------------------------------------------------------------


def _screen(fingerprints: list, k: int = K) -> np.ndarray:
    """``matched[i, j]``: how many tokens of document i lie in fingerprints that document j
    has too, for every pair at once: what ``copydetect.compare_files(i, j)`` sums as its
    first token overlap (the characters covered by the k-grams at the positions of i's
    fingerprints whose hash j has)."""
    n = len(fingerprints)
    matched = np.zeros((n, n), dtype=np.int64)
    positions, hashes = [], []
    for fp in fingerprints:
        items = sorted((int(p), int(h)) for h, ps in fp.hash_idx.items() for p in ps)
        positions.append(np.array([p for p, _ in items], dtype=np.int64))
        hashes.append(np.array([h for _, h in items], dtype=np.int64))
    if n == 0 or not any(len(h) for h in hashes):
        return matched
    universe, columns = np.unique(np.concatenate(hashes), return_inverse=True)
    owners = np.repeat(np.arange(n), [len(h) for h in hashes])
    has = np.zeros((n, len(universe)), dtype=bool)
    has[owners, columns] = True
    bounds = np.cumsum([0] + [len(h) for h in hashes])
    far = np.int64(2**40)
    for i in range(n):
        pos = positions[i]
        if not len(pos):
            continue
        shared = has[:, columns[bounds[i] : bounds[i + 1]]]  # n x positions of i
        at = np.where(shared, pos, far)
        following = np.minimum.accumulate(at[:, ::-1], axis=1)[:, ::-1]
        after = np.concatenate([following[:, 1:], np.full((n, 1), far)], axis=1)
        matched[i] = np.where(shared, np.minimum(k, after - pos), 0).sum(axis=1)
    return matched


def drop_common(codes: list[Code], share: float = COMMON, least: int = COMMON_LEAST) -> int:
    """Take the fingerprints found in more than ``share`` of ``codes`` (the ones with any
    code), and in at least ``least`` of them, out of every fingerprint, as copydetect takes
    the boilerplate's out (after winnowing); return how many there were."""
    from copydetect.utils import get_token_coverage

    fps = [c.fingerprint for c in codes if c.fingerprint is not None and c.fingerprint.hashes]
    counts = Counter(h for fp in fps for h in fp.hashes)
    common = {h for h, n in counts.items() if n > share * len(fps) and n >= least}
    if common:
        for fp in fps:
            for h in fp.hashes & common:
                del fp.hash_idx[h]
            fp.hashes -= common
            fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))
    return len(common)


def compare(codes: list[Code], assignment: str, *, threshold: float, min_tokens: int) -> list[Pair]:
    """The pairs of ``codes`` (fingerprinted) over both thresholds, most alike first."""
    codes = [c for c in codes if c.fingerprint is not None and c.tokens >= max(min_tokens, 1)]
    fps = [c.fingerprint for c in codes]
    matched = _screen(fps)
    tokens = np.array([max(c.tokens, 1) for c in codes], dtype=np.float64)
    share = matched / tokens[:, None] if len(codes) else matched
    pairs = []
    for i, j in zip(*np.nonzero(np.triu(np.maximum(share, share.T) >= threshold - 1e-9, 1))):
        if min(matched[i, j], matched[j, i]) < min_tokens:
            continue
        if codes[j].student < codes[i].student:
            i, j = j, i
        a, b = codes[i], codes[j]
        share_a, share_b = float(share[i, j]), float(share[j, i])
        similarity = max(share_a, share_b)
        pair = Pair(
            assignment, a.student, b.student, similarity, share_a, share_b, a.tokens, b.tokens
        )
        pair.code_a, pair.code_b, pair.cells_a, pair.cells_b = a.text, b.text, a.cells, b.cells
        pair.sources = (a, b)  # the matched code is found for the pages that are written
        pairs.append(pair)
    return sorted(pairs, key=lambda p: (-p.similarity, p.students))


def find_pairs(
    course,
    assignments: list[str] | None = None,
    *,
    threshold: float = THRESHOLD,
    min_tokens: int = MIN_TOKENS,
    common: float = COMMON,
) -> Pairs:
    """Pairs of submissions in ``course`` (``autograder.course.Course``) whose student-written
    code is alike, for the given assignments (all but the quizzes by default), in course
    order. A quiz named is skipped with its reason; a name that is no assignment of the
    course is a GraderError."""
    known = course.assignments()
    if assignments is None:
        assignments = [a for a in known if kind(a) != "quiz"]
    unknown = [a for a in assignments if a not in known]
    if unknown:
        raise GraderError(f"no assignment {unknown[0]!r} in this course ({', '.join(known)})")
    out = Pairs()
    for assignment in assignments:
        if kind(assignment) == "quiz":
            out.skipped.append(Skipped(assignment, "", "a quiz: its answers are values, not code"))
            continue
        codes = _codes(course, assignment, out.skipped)
        out.compared[assignment] = len(codes)
        out.common[assignment] = drop_common(codes, common)
        out.extend(compare(codes, assignment, threshold=threshold, min_tokens=min_tokens))
    return out


def release_folder(course, assignment: str) -> Path:
    """Where the assignment's release notebooks are: the course's notebooks/ beside its
    source/, else the repository's."""
    own = Path(course.source).parent / "notebooks" / assignment
    return own if own.is_dir() else NOTEBOOKS / assignment


def _codes(course, assignment: str, skipped: list[Skipped]) -> list[Code]:
    """Every submission of ``assignment`` read and fingerprinted; the ones that cannot be
    are added to ``skipped``."""
    try:
        release = read_release(release_folder(course, assignment), assignment)
    except (Unusable, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        skipped.append(Skipped(assignment, "", f"the release notebook cannot be read: {exc}"))
        return []
    codes, cache = [], {}
    submitted = Path(course.submitted)
    students = sorted(p.name for p in submitted.iterdir()) if submitted.is_dir() else []
    for student in students:
        folder = submitted / student / assignment
        if student.startswith(".") or not folder.is_dir():
            continue
        try:
            code = student_code(release, student, folder)
            if code is not None:
                fingerprint(code, release, cache)
                codes.append(code)
        except Unusable as exc:
            skipped.append(Skipped(assignment, student, str(exc)))
        except Exception as exc:  # the lexer or copydetect on code no one foresaw
            skipped.append(Skipped(assignment, student, f"not comparable: {exc!r:.200}"))
    return codes


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


# ---- the pair pages ------------------------------------------------------------------------


def _safe(name: str) -> str:
    """``name`` as a file name: itself when it is plain, else a plain version and a digest."""
    plain = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:60].lstrip(".") or "_"
    if plain == name:
        return name
    return f"{plain}-{hashlib.sha256(name.encode('utf-8', 'replace')).hexdigest()[:8]}"


def _pieces(code: str, cell: Cell, spans: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """The cell's code as (text, matched) pieces."""
    out, at = [], cell.start
    for s, e in spans:
        s, e = max(s, cell.start), min(e, cell.end)
        if e <= s:
            continue
        if s > at:
            out.append((code[at:s], False))
        out.append((code[s:e], True))
        at = e
    if at < cell.end:
        out.append((code[at : cell.end], False))
    return out


def _rows(pair: Pair) -> list[dict]:
    """One row per solution cell either student wrote, in the release's order."""
    by_a = {(c.notebook, c.grade_id): c for c in pair.cells_a}
    by_b = {(c.notebook, c.grade_id): c for c in pair.cells_b}
    keys = list(dict.fromkeys([*by_a, *by_b]))
    rows = []
    for key in keys:
        ca, cb = by_a.get(key), by_b.get(key)
        rows.append(
            {
                "notebook": key[0],
                "grade_id": key[1],
                "a": _pieces(pair.code_a, ca, pair.matched_a) if ca else None,
                "b": _pieces(pair.code_b, cb, pair.matched_b) if cb else None,
            }
        )
    return rows


def paged(pairs: list[Pair]) -> list[Pair]:
    """The pairs that get a page: every pair of a group of up to ``ALL_PAGES`` submissions;
    in a larger group, each member's most alike pair (a group of 40 has 780 pairs, which no
    one reads: one page per member shows each of them with the one most like them)."""
    out = []
    for group in group_pairs(pairs):
        if len(group.students) <= ALL_PAGES:
            out += group.pairs
            continue
        best: dict[str, Pair] = {}
        for pair in group.pairs:  # most alike first
            for student in pair.students:
                best.setdefault(student, pair)
        out += list({id(p): p for p in best.values()}.values())
    return out


def write_pair_pages(pairs: list[Pair], out_dir: Path) -> None:
    """A page per pair (``paged``: in a group of more than ``ALL_PAGES`` submissions, per
    member's most alike pair), ``out_dir/pairs/<assignment>/<a>--<b>.html``: the two
    students' solution cells side by side, the code found in both highlighted, and what the
    numbers mean. Sets those pairs' ``page`` (relative to ``out_dir``; a pair without one
    keeps ``""``). Pages left from an earlier run in ``out_dir/pairs/`` are removed first."""
    import jinja2

    out_dir = Path(out_dir)
    top = out_dir / "pairs"
    if top.is_dir():
        for old in top.glob("*/*.html"):
            old.unlink()
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    template = env.get_template("similarity_pair.html.j2")
    groups = {
        (g.assignment, s): g for g in group_pairs(pairs) for s in g.students if len(g.pairs) > 1
    }
    used: set[str] = set()
    for pair in paged(pairs):
        if pair.sources is not None and not (pair.matched_a or pair.matched_b):
            pair.matched_a, pair.matched_b = matched_spans(*pair.sources)
        name = f"{_safe(pair.student_a)}--{_safe(pair.student_b)}"
        page = f"pairs/{_safe(pair.assignment)}/{name}.html"
        number = 1
        while page in used:
            number += 1
            page = f"pairs/{_safe(pair.assignment)}/{name}-{number}.html"
        used.add(page)
        group = groups.get((pair.assignment, pair.student_a))
        html = template.render(
            pair=pair,
            rows=_rows(pair),
            group=group,
            evidence=EVIDENCE,
            k=K,
            home="../../index.html",
        )
        path = out_dir / page
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
        pair.page = page
