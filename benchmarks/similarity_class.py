"""Benchmark: similarity between submissions (autograder/report/similarity.py) on a generated
class of 300, measured in one run.

    .venv/bin/python benchmarks/similarity_class.py                  # 300 students
    .venv/bin/python benchmarks/similarity_class.py --students 100   # a smaller class

A class is generated in a temporary folder. For every assignment that is not a quiz, each
student hands in the release notebook with its solution cells filled in:

  - most write their own: the course's solution rewritten with some of ``RULES``, habits
    drawn per student and assignment, each applied where it can be at the student's rate
    (operands of + and * swapped, ``x += y`` expanded, values returned through a
    variable, comparisons turned round, integers written as floats, comprehensions as
    loops, conditional expressions as if statements, guards, parts of expressions put in
    variables), then for half of them every name renamed and the functions reversed;
    being made from one solution, they are far more alike than a real class's;
  - 4 % leave the notebook as released, 10 % fill in half of its cells (the rest released);
  - planted copies: 5 pairs and 2 groups of 3 per assignment, the copy being the other's
    work disguised (tests/similarity_solutions.py: ``disguise``).

Printed: the seconds ``find_pairs`` takes (reading, lexing and fingerprinting, comparing
every pair) and ``write_pair_pages``; per assignment the submissions, the pairs and groups
reported, how many planted copies were found, and the most alike pair not planted; then
the median, 99th percentile and largest similarity of all the pairs not planted. Target:
seconds to tens of seconds for 300 students, not minutes. Last run: docs/grading.md, Speed.
Not a test (tests/test_similarity.py checks what is found).
"""

from __future__ import annotations

import ast
import json
import random
import time
from pathlib import Path

import common

common.on_path(common.ROOT, common.TESTS)

from similarity_solutions import disguise  # noqa: E402

from autograder.course import NOTEBOOKS, SOLUTIONS, assignments, kind, open_course  # noqa: E402
from autograder.report import similarity as sim  # noqa: E402

COMMUTATIVE = (ast.Add, ast.Mult)
FLIP = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}
RULES = ("swap", "expand", "through", "flip", "floats", "loops", "branches", "guards", "temps")


class _Style(ast.NodeTransformer):
    """An honest student's own way of writing what the course wrote: each of the student's
    habits (``rules``, a few of ``RULES``) applied where it can be, with probability
    ``rate``: operands of + and * swapped, ``x += y`` expanded, values returned through a
    variable, comparisons turned round, integer constants written as floats, list
    comprehensions as loops, conditional expressions as if statements, a guard at the top
    of each function, parts of expressions put in variables first."""

    def __init__(self, rng: random.Random, rules: set[str], rate: float):
        self.rng, self.rules, self.rate = rng, rules, rate

    def hit(self, rule: str) -> bool:
        return rule in self.rules and self.rng.random() < self.rate

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, COMMUTATIVE) and self.hit("swap"):
            node.left, node.right = node.right, node.left
        return node

    def visit_Constant(self, node):
        if type(node.value) is int and self.hit("floats"):
            node.value = float(node.value)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and type(node.ops[0]) in FLIP and self.hit("flip"):
            flipped = FLIP[type(node.ops[0])]()
            return ast.Compare(node.comparators[0], [flipped], [node.left])
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        if isinstance(node.target, ast.Name | ast.Attribute) and self.hit("expand"):
            load = ast.parse(ast.unparse(node.target), mode="eval").body
            return ast.Assign([node.target], ast.BinOp(load, node.op, node.value), lineno=0)
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.body = [s for stmt in node.body for s in self.statement(stmt)]
        args = [a.arg for a in node.args.args if a.arg != "self"]
        if args and self.hit("guards"):
            node.body.insert(0, ast.parse(f"assert {args[0]} is not None").body[0])
        return node

    def visit_Module(self, node):
        self.generic_visit(node)
        node.body = [s for stmt in node.body for s in self.statement(stmt)]
        return node

    def statement(self, stmt) -> list:
        """``stmt`` as the student writes it: one statement or a few."""
        src = ast.unparse(stmt)
        returned = isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.BinOp | ast.Call)
        if returned and self.hit("through"):
            return ast.parse(f"result = {ast.unparse(stmt.value)}\nreturn result").body
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return [stmt]
        target, value = ast.unparse(stmt.targets[0]), stmt.value
        if isinstance(value, ast.ListComp) and len(value.generators) == 1 and self.hit("loops"):
            gen = value.generators[0]
            body = f"{target}.append({ast.unparse(value.elt)})"
            for cond in gen.ifs:
                body = f"if {ast.unparse(cond)}:\n        {body}"
            loop = f"for {ast.unparse(gen.target)} in {ast.unparse(gen.iter)}:\n    {body}"
            return ast.parse(f"{target} = []\n{loop}").body
        if isinstance(value, ast.IfExp) and self.hit("branches"):
            return ast.parse(
                f"if {ast.unparse(value.test)}:\n    {target} = {ast.unparse(value.body)}\n"
                f"else:\n    {target} = {ast.unparse(value.orelse)}"
            ).body
        split = isinstance(value, ast.BinOp) and isinstance(value.left, ast.Call | ast.Attribute)
        if split and self.hit("temps"):
            rest = ast.unparse(ast.BinOp(ast.Name("part"), value.op, value.right))
            return ast.parse(f"part = {ast.unparse(value.left)}\n{target} = {rest}").body
        return [ast.parse(src).body[0]]


def honest_style(cells: dict[str, str], rng: random.Random) -> dict[str, str]:
    """``cells`` rewritten in a style of the student's own: some of ``RULES``, each at a
    rate of its own; then, for half the students, renamed with the functions in another
    order (``disguise``: names do not count, so this only changes the order)."""
    rules = {r for r in RULES if rng.random() < 0.5}
    style = _Style(rng, rules, rng.uniform(0.5, 1.0))
    out = {}
    for grade_id, source in cells.items():
        try:
            tree = style.visit(ast.parse(source))
            out[grade_id] = ast.unparse(ast.fix_missing_locations(tree))
        except SyntaxError:  # a cell with IPython magics: as it is
            out[grade_id] = source
    return disguise(out) if rng.random() < 0.5 else out


def solution_cells(path: Path) -> dict[str, str]:
    nb = json.loads(path.read_text())
    return {
        c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
        for c in nb["cells"]
        if c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("solution")
    }


def write(release: dict, cells: dict[str, str], path: Path) -> None:
    nb = json.loads(json.dumps(release))
    for c in nb["cells"]:
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in cells:
            c["source"] = cells[gid]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))


def generate(root: Path, students: int, seed: int) -> dict[str, set[frozenset]]:
    """The class in ``root``/submitted; returns the planted copies per assignment."""
    rng = random.Random(seed)
    names = [f"s{i:03d}" for i in range(students)]
    planted: dict[str, set[frozenset]] = {}
    for assignment in (a for a in assignments() if kind(a) != "quiz"):
        (release_path,) = sorted((NOTEBOOKS / assignment).glob("*.ipynb"))
        release = json.loads(release_path.read_text())
        course = solution_cells(SOLUTIONS / assignment / release_path.name)
        work: dict[str, dict[str, str]] = {}
        for name in names:
            roll = rng.random()
            if roll < 0.04:
                work[name] = {}
            elif roll < 0.14:
                half = rng.sample(sorted(course), max(1, len(course) // 2))
                work[name] = honest_style({g: course[g] for g in half}, rng)
            else:
                work[name] = honest_style(course, rng)
        order = rng.sample(names, 16)
        copies = [order[i : i + 2] for i in range(0, 10, 2)] + [order[10:13], order[13:16]]
        planted[assignment] = set()
        for group in copies:
            for copier in group[1:]:
                work[copier] = disguise(work[group[0]])
                if work[copier]:
                    planted[assignment].add(frozenset((group[0], copier)))
        for name, cells in work.items():
            path = root / "submitted" / name / assignment / release_path.name
            write(release, cells, path)
    return planted


def alike(course, assignment: str, planted: set[frozenset], common: float) -> str:
    """The median, 99th percentile and largest similarity of the pairs not planted."""
    import numpy as np

    codes = sim._codes(course, assignment, [])
    sim.drop_common(codes, common)
    codes = [c for c in codes if c.tokens >= sim.MIN_TOKENS]
    matched = sim._screen([c.fingerprint for c in codes])
    share = matched / np.array([c.tokens for c in codes], dtype=float)[:, None]
    alike = np.maximum(share, share.T)
    values = [
        alike[i, j]
        for i in range(len(codes))
        for j in range(i + 1, len(codes))
        if frozenset((codes[i].student, codes[j].student)) not in planted
    ]
    p50, p99, top = np.percentile(values, [50, 99, 100])
    return f"median {p50:.2f}, 99th percentile {p99:.2f}, largest {top:.2f}"


def main() -> None:
    parser = common.parser(__doc__, paragraph=True)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--common", type=float, default=sim.COMMON, help="find_pairs' common")
    args = parser.parse_args()
    with common.scratch("similarity-class-") as root:
        t = time.perf_counter()
        planted = generate(root, args.students, args.seed)
        print(f"generated {args.students} students in {time.perf_counter() - t:.1f} s")
        course = open_course(root)
        t = time.perf_counter()
        pairs = sim.find_pairs(course, common=args.common)
        found = time.perf_counter() - t
        t = time.perf_counter()
        sim.write_pair_pages(pairs, root / "reports")
        pages = time.perf_counter() - t
        written = sum(1 for p in pairs if p.page)
        print(f"find_pairs: {found:.1f} s ({len(pairs)} pairs); write_pair_pages: {pages:.1f} s "
              f"({written} pages); load average {common.load_average()}")  # fmt: skip
        print(f"{'assignment':20} {'subs':>5} {'pairs':>6} {'groups':>6} {'planted found':>14} "
              "most alike unplanted")  # fmt: skip
        for assignment, n in pairs.compared.items():
            mine = [p for p in pairs if p.assignment == assignment]
            groups = [g for g in pairs.groups if g.assignment == assignment]
            seen = {frozenset(p.students) for p in mine}
            hits = len(planted[assignment] & seen)
            others = [
                p.similarity for p in mine if frozenset(p.students) not in planted[assignment]
            ]
            most = f"{max(others):.2f}" if others else "-"
            print(f"{assignment:20} {n:5d} {len(mine):6d} {len(groups):6d} "
                  f"{hits:7d} of {len(planted[assignment]):3d} {most:>8}")  # fmt: skip
        print("similarity of every pair not planted (the screen's shares, after common code):")
        for assignment in pairs.compared:
            print(
                f"  {assignment:20} {alike(course, assignment, planted[assignment], args.common)}"
            )
        if pairs.skipped:
            print("skipped:", *(f"{s.assignment} {s.student}: {s.reason}" for s in pairs.skipped))


if __name__ == "__main__":
    main()
