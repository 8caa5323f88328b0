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
same text. ``fingerprints.filter_code`` writes it by copydetect's rules (the tests check it
writes what ``copydetect.utils.filter_code`` writes), one cell at a time, and keeps where
each token is, for the pages.

How. Winnowed fingerprints (Schleimer, Wilkerson and Aiken 2003: the method of MOSS), with
copydetect's ``CodeFingerprint``: the hashes of every ``K`` = 30 characters of the filtered
code, one kept per window so that any match of ``GUARANTEE`` = 35 characters or more is
found (copydetect's defaults are 25 and 30: see below). The hash is
``fingerprints.kgram_hashes``, the same in every process (copydetect's is Python's salted
``hash()``: every share would move by up to 0.1 from one run to the next). For a pair,
``share_a`` is the part of A's code (its tokens once the boilerplate is out: ``tokens_a``)
lying in fingerprints B has too, as ``copydetect.compare_files`` computes it;
``similarity`` is the larger share, so that a student who copied half of someone's work is
found too.

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

Untrusted input. A notebook that is not JSON or is not a notebook is not compared: it is
listed in ``Pairs.skipped`` with the reason. Nothing a student wrote makes this module fail.

Caps. What similarity ignores cannot take a submission out of the comparison: a cap
applies to what is compared, never to the raw text. ``MAX_CODE_CHARS`` (64,000) caps a
submission's tokens, counted once comments, layout, names, strings, the given code and the
common code are out (``fingerprints.over_cap``, after ``drop_common``): a copy padded with
comments, docstrings, blank lines, long names, copies of the given code, many cells or
outputs is compared like the copy. Notebooks are read as the grader reads them (a stray
byte replaced, nbformat 3, a cell whose source is not text taken as empty), so a notebook
that was graded is compared. Two raw caps remain, only to keep reading and lexing bounded,
far beyond any notebook: the grader's own file limit (100 MiB,
``fingerprints.MAX_NOTEBOOK_BYTES``) and 1,000,000 characters of solution cells
(``MAX_SOURCE_CHARS``; the course's largest is ~5,000). A submission past any cap is not
compared and is flagged for review (``Skipped.review``; the report lists it apart), never
quietly listed as not compared. On the pages every piece of a
submission is escaped by jinja2, and nothing runs (no script; the pages'
Content-Security-Policy forbids any).

What the report uses: ``find_pairs(course)`` (a ``Pairs``: a list of ``Pair``, with
``skipped``, ``compared``, ``common`` and ``groups``), ``write_pair_pages(pairs, out_dir)``
and ``EVIDENCE``, the sentence every page says.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..course import NOTEBOOKS, kind
from ..errors import GraderError
from .fingerprints import (
    Cell,
    Code,
    K,
    TooLarge,
    Unusable,
    fingerprint,
    matched_spans,
    over_cap,
    read_release,
    student_code,
)

# Both chosen on lesson 1 and checked on lesson 5 (the module's docstring has the numbers).
THRESHOLD = 0.55
MIN_TOKENS = 100

# A fingerprint in more than half the submissions (and in 10 or more) is common code.
COMMON = 0.5
COMMON_LEAST = 10

# Pages for every pair of a group of up to 10 (45 pairs); in a larger group, per member.
ALL_PAGES = 10

EVIDENCE = (
    "Similarity is evidence for a person to weigh, never a verdict: common code, a shared "
    "study group and the course's own hints can all explain it."
)


# ---- what the module returns ---------------------------------------------------------------


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
    # (Code, Code), for the pages' matched code: an attribute, not a field, so that
    # dataclasses.asdict(pair) stays small
    sources = None

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
    """A submission (or, with ``student`` empty, an assignment) that was not compared;
    ``review``: past a size cap (``fingerprints.TooLarge``), for a person to look at."""

    assignment: str
    student: str
    reason: str
    review: bool = False


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
        out.common[assignment] = drop_common(codes, common)
        kept = []
        for code in codes:  # the cap on what is compared: after the given and common code
            too_large = over_cap(code)
            if too_large is None:
                kept.append(code)
            else:
                out.skipped.append(Skipped(assignment, code.student, str(too_large), True))
        codes = kept
        out.compared[assignment] = len(codes)
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
        except TooLarge as exc:
            skipped.append(Skipped(assignment, student, str(exc), review=True))
        except Unusable as exc:
            skipped.append(Skipped(assignment, student, str(exc)))
        except Exception as exc:  # the lexer or copydetect on code no one foresaw
            skipped.append(Skipped(assignment, student, f"not comparable: {exc!r:.200}"))
    return codes


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
