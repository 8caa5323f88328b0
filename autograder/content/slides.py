"""``python -m autograder slides``: every lesson as slides, for students or for lecturing.

A lesson notebook is its own deck: each cell's ``slideshow.slide_type`` says where a slide
starts (``slide``, ``subslide``), what joins it (``-``, ``fragment``), what is said rather
than shown (``notes``) and what stays out (``skip``: check cells, the self-check). Two
ways to open a deck:

- live, in JupyterLab: ``jupyterlab-rise`` (in the students' requirements) presents the
  open notebook (the start page says how);
- static, offline: this module writes each deck as one reveal.js HTML file.

Students' slides (the default) are made from ``notebooks/``: exercises show their stubs,
never a solution, and quizzes and problem sets get no slides. The other cells show the
outputs they have in the executed ``solutions/`` (printed numbers, graph drawings), so the
slides read like the lesson run. ``--instructor`` makes the slides from ``solutions/``,
worked answers included, for lecturing; they never go into the student edition.

One idea per slide: ``oversized`` finds slides with more than ``WORDS`` words of prose or
``LINES`` lines of code (blank lines not counted) and printed output (``--check`` lists
them; a test keeps none).
Exercises can be longer in the instructor's slides, which are held to the prose limit.

Everything a deck loads sits in its folder (``slides/`` by default, not in git)::

    slides/index.html                 the list of lessons
    slides/01_value.slides.html       one file per lesson, images inline
    slides/vendor/                    reveal.js 5 and MathJax 2, with their licences

``vendor/`` is copied from two Python packages in requirements.txt that ship these files:
``sphinx-revealjs`` (reveal.js) and ``jupyter-server-mathjax`` (MathJax 2, as Jupyter
serves it). Building needs neither npm nor the network, and the slides open from disk.
"""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

from ..course import NOTEBOOKS, ROOT, SOLUTIONS, assignments, kind

OUT = ROOT / "slides"
INSTRUCTOR_OUT = ROOT / "slides-instructor"  # never in the edition
TEMPLATE = Path(__file__).resolve().parent / "slides_template"
WIDTH, HEIGHT = 1200, 900  # a slide's canvas, in CSS pixels (reveal.js scales it to fit)
WORDS = 150  # most words of prose on one slide
LINES = 25  # most lines of code (not counting blank ones) and printed output on one slide

# (Python package, folder inside it, its pip name): where vendor/ comes from.
REVEAL = ("sphinx_revealjs", "_static/revealjs", "sphinx-revealjs")
MATHJAX = ("jupyter_server_mathjax", "static", "jupyter-server-mathjax")
MATHJAX_URL = "vendor/mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
REVEAL_FILES = (
    "LICENSE",
    "dist/reveal.js",
    "dist/reveal.css",
    "dist/theme/white.css",
    "dist/theme/fonts/source-sans-pro",
    "plugin/notes/notes.js",
)
MATHJAX_SKIP = ("jax/output/SVG", "fonts/HTML-CSS/TeX/svg", "*.map")  # HTML-CSS output only


class SlidesError(RuntimeError):
    pass


@dataclass
class Slide:
    number: int  # 1-based, in the order the deck shows them (subslides count)
    heading: str  # its first line, to find it in the notebook
    words: int  # prose, in markdown cells outside code blocks
    lines: int  # non-blank lines of code (cells, markdown code blocks) and printed text

    def problem(self, lines: int | None = LINES) -> str | None:
        too = []
        if self.words > WORDS:
            too.append(f"{self.words} words (most {WORDS})")
        if lines is not None and self.lines > lines:
            too.append(f"{self.lines} lines of code (most {lines})")
        return f"slide {self.number} {self.heading!r}: {', '.join(too)}" if too else None


def _prose_and_code(markdown: str) -> tuple[int, int]:
    """Words of prose, lines of code (fenced blocks) in one markdown cell."""
    fences = re.findall(r"^```.*?\n(.*?)^```", markdown, re.M | re.S)
    prose = re.sub(r"^```.*?^```", " ", markdown, flags=re.M | re.S)
    prose = re.sub(r"<!--.*?-->", " ", prose, flags=re.S)
    words = [w for w in prose.split() if re.search(r"\w", w)]
    return len(words), sum(_code_lines(f) for f in fences)


def _code_lines(code: str) -> int:
    return sum(1 for line in code.splitlines() if line.strip())


def _printed_lines(cell: nbformat.NotebookNode) -> int:
    lines = 0
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            lines += len(out.text.rstrip("\n").splitlines())
        elif out.output_type in ("execute_result", "display_data"):
            data = out.get("data", {})
            if not any(k.startswith("image/") or k == "text/html" for k in data):
                lines += len(str(data.get("text/plain", "")).splitlines())
        elif out.output_type == "error":
            lines += len(out.get("traceback", []))
    return lines


def slides_of(nb: nbformat.NotebookNode) -> list[Slide]:
    """The slides a deck shows, with how much each carries (``skip``/``notes`` left out)."""
    slides: list[Slide] = []
    for cell in nb.cells:
        slide_type = cell.metadata.get("slideshow", {}).get("slide_type", "-")
        if slide_type in ("skip", "notes"):
            continue
        text = cell.source.strip()
        if slide_type in ("slide", "subslide") or not slides:
            heading = text.splitlines()[0][:60] if text else ""
            slides.append(Slide(len(slides) + 1, heading, 0, 0))
        if cell.cell_type == "markdown":
            words, code = _prose_and_code(cell.source)
            slides[-1].words += words
            slides[-1].lines += code
        elif cell.cell_type == "code":
            slides[-1].lines += _code_lines(text) + _printed_lines(cell)
    return slides


def oversized(nb: nbformat.NotebookNode, lines: int | None = LINES) -> list[str]:
    """One line per slide with more than one screen of text (``lines=None``: prose only)."""
    return [p for p in (s.problem(lines) for s in slides_of(nb)) if p]


def lessons(selected: list[str] | None = None) -> list[str]:
    """The assignments that have slides: the lessons, in course order."""
    everything = [a for a in assignments() if kind(a) == "lesson"]
    if not selected:
        return everything
    unknown = [a for a in selected if a not in everything]
    if unknown:
        raise SlidesError(
            f"no slides for {', '.join(unknown)}: slides are made for the lessons "
            f"({', '.join(everything)}), not for quizzes or problem sets"
        )
    return selected


def _notebook(folder: Path) -> Path:
    found = sorted(folder.glob("*.ipynb"))
    if len(found) != 1:
        raise SlidesError(
            f"{folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder}: expected one"
            f" notebook, found {len(found)}: run `make generate` first"
        )
    return found[0]


def _is_answer(cell: nbformat.NotebookNode) -> bool:
    """An exercise (its stub or solution) or a check cell: nbgrader's graded cells."""
    grading = cell.metadata.get("nbgrader", {})
    return bool(grading.get("solution") or grading.get("grade"))


def student_deck(lesson: str) -> nbformat.NotebookNode:
    """The lesson as students have it, with the outputs of every cell that is not an answer
    taken from the executed solution notebook (cells matched by their source, in order)."""
    nb = nbformat.read(_notebook(NOTEBOOKS / lesson), as_version=4)
    solved = nbformat.read(_notebook(SOLUTIONS / lesson), as_version=4)
    outputs: dict[str, deque] = defaultdict(deque)
    for cell in solved.cells:
        if cell.cell_type == "code" and not _is_answer(cell):
            outputs[cell.source].append(cell.outputs)
    for cell in nb.cells:
        if cell.cell_type == "code":
            known = outputs.get(cell.source)
            cell.outputs = known.popleft() if known and not _is_answer(cell) else []
            cell.execution_count = None
    return nb


def instructor_deck(lesson: str) -> nbformat.NotebookNode:
    """The executed solution notebook: worked answers, for lecturing."""
    return nbformat.read(_notebook(SOLUTIONS / lesson), as_version=4)


def decks(
    selected: list[str] | None = None, instructor: bool = False
) -> Iterator[tuple[str, nbformat.NotebookNode]]:
    for lesson in lessons(selected):
        yield lesson, instructor_deck(lesson) if instructor else student_deck(lesson)


def _package_folder(module: str, inside: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise SlidesError(
            f"building slides needs the Python package {pip_name} (requirements.txt): "
            "run scripts/setup"
        )
    return Path(next(iter(spec.submodule_search_locations))) / inside


def vendor(out: Path = OUT) -> Path:
    """``out/vendor``: reveal.js and MathJax, copied from the Python packages that ship them."""
    reveal = _package_folder(*REVEAL)
    mathjax = _package_folder(*MATHJAX)
    dest = out / "vendor"
    stamp = dest / "from.json"
    wanted = {"reveal": str(reveal.resolve()), "mathjax": str(mathjax.resolve()), "layout": 3}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    for rel in REVEAL_FILES:
        source, target = reveal / rel, dest / "reveal.js" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy(source, target)
    shutil.copytree(mathjax, dest / "mathjax", ignore=_skip_under(mathjax, MATHJAX_SKIP))
    stamp.write_text(json.dumps(wanted, indent=1))
    return dest


def _skip_under(root: Path, patterns: tuple[str, ...]):
    def ignore(folder: str, names: list[str]) -> list[str]:
        rel = Path(folder).relative_to(root)
        return [n for n in names if any((rel / n).match(p) for p in patterns)]

    return ignore


def exporter():
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    c = Config()
    c.TemplateExporter.extra_template_basedirs = [str(TEMPLATE.parent)]
    c.SlidesExporter.template_name = TEMPLATE.name
    c.SlidesExporter.reveal_url_prefix = "vendor/reveal.js"
    c.SlidesExporter.reveal_theme = "white"  # its fonts ship with reveal.js; "simple" fetches some
    c.SlidesExporter.mathjax_url = MATHJAX_URL
    c.SlidesExporter.reveal_width = str(WIDTH)
    c.SlidesExporter.reveal_height = str(HEIGHT)
    c.SlidesExporter.exclude_input_prompt = True
    c.SlidesExporter.exclude_output_prompt = True
    return SlidesExporter(config=c)


def title(nb: nbformat.NotebookNode, default: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            match = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if match:
                return match.group(1).strip()
    return default


def build(
    selected: list[str] | None = None, out: Path = OUT, instructor: bool = False
) -> list[Path]:
    """Write the slides of ``selected`` lessons (default: all) into ``out``; return them."""
    chosen = list(decks(selected, instructor))  # every notebook is read before writing
    vendor(out)
    export = exporter()
    written, entries = [], []
    for lesson, nb in chosen:
        heading = title(nb, lesson)
        body, _ = export.from_notebook_node(nb, resources={"metadata": {"name": heading}})
        target = out / f"{lesson}.slides.html"
        target.write_text(body, encoding="utf-8")
        written.append(target)
        entries.append((target.name, heading))
    write_index(out, entries, instructor)
    return written


def write_index(out: Path, entries: list[tuple[str, str]], instructor: bool = False) -> None:
    """``out/index.html``: a link per lesson, for every slides file in the folder."""
    known = dict(entries)
    for path in sorted(out.glob("*.slides.html")):
        if path.name not in known:  # built earlier, alone: keep it listed
            match = re.search(r"<title>(.*?) slides</title>", path.read_text(encoding="utf-8"))
            known[path.name] = html.unescape(match.group(1)) if match else path.stem
    items = "\n".join(
        f'  <li><a href="{html.escape(name)}">{html.escape(heading)}</a></li>'
        for name, heading in sorted(known.items())
    )
    whose = "instructor's slides, with worked answers" if instructor else "slides"
    (out / "index.html").write_text(
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        f"<title>Autograd from Scratch: {whose}</title></head>\n<body>\n"
        f"<h1>Autograd from Scratch: {whose}</h1>\n<ul>\n" + items + "\n</ul>\n"
        "<p>Arrow keys move between slides; press S for the speaker view, with notes.</p>\n"
        "</body>\n</html>\n",
        encoding="utf-8",
    )


def check(selected: list[str] | None = None, instructor: bool = False) -> list[str]:
    """Every slide of the chosen decks that carries more than one screen of text. The
    instructor's worked answers may run longer than a stub: their decks are held to the
    prose limit only."""
    lines = None if instructor else LINES
    return [
        f"{lesson} {p}" for lesson, nb in decks(selected, instructor) for p in oversized(nb, lines)
    ]


def main(
    selected: list[str] | None = None,
    out: Path | None = None,
    instructor: bool = False,
    only_check: bool = False,
) -> int:
    try:
        if only_check:
            problems = check(selected, instructor)
            for line in problems:
                print(line)
            print(f"{len(problems)} slides carry more than one screen of text")
            return 1 if problems else 0
        target = out or (INSTRUCTOR_OUT if instructor else OUT)
        written = build(selected, target, instructor)
    except SlidesError as exc:
        print(exc)
        return 1
    for path in written:
        print(f"slides: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    print(f"open {target / 'index.html'} in a browser (works offline)")
    return 0
