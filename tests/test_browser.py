"""The students' JupyterLab, driven in headless Chromium, as the student edition runs it.

The student edition (``python -m autograder release``) is built into a scratch folder and
its own ``lab.py`` seeds ``my-work/`` and gives the ``jupyter lab`` command and settings
(on 127.0.0.1, no token), with the edition's folder as the working directory, so nothing
of the instructor's course is in reach. The start page must show first. Every lesson,
filled with its solution, must run top to bottom with no error output, show its graph
drawings (SVG, none wider than its output area) and plots (images), print every visible
check's success line, and end with a short self-check: this lesson's exercises, one line
per other lesson (its time is printed, not asserted). A blank lesson must show each
check's one-line failure; Validate must work. The start page and a lesson run in the lab
must have no serious or critical accessibility violation (axe-core, tests/accessibility.py)
in what the course writes. Screenshots are saved in the
``screenshots`` folder of the run's pytest temporary directory (the path is printed).

Chromium is Debian's (/usr/bin/chromium, ``scripts/setup --test`` installs it); requests
to anything but the local server are blocked, so the lab must work offline.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import nbformat
import pytest
from accessibility import assert_accessible
from helpers import NOTEBOOKS, SOLUTIONS

from autograder.students import edition, lab

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LESSONS = sorted(p.name for p in NOTEBOOKS.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))
# `make test` runs three of them (a lesson, its follow-up and a set); `make mutation` all.
EVERY_CHANGE = {"01_value", "02_backward", "09_set_arrays"}
LESSON_PARAMS = [
    pytest.param(name, marks=() if name in EVERY_CHANGE else pytest.mark.mutation)
    for name in LESSONS
]
TIMEOUT = 120_000  # ms: generous, the machine may be busy
CODE_PROMPTS = ".jp-Notebook .jp-CodeCell .jp-InputPrompt"
ERROR_OUTPUT = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
# Graph drawings and plots: HTML images with a text alternative (coursekit's pictures), which
# JupyterLab shows rather than the plain SVG or PNG beside them in the output (it gives those
# no alt text).
DRAWINGS = '.jp-OutputArea-output img[src^="data:image/svg+xml"]'
PLOTS = '.jp-OutputArea-output img[src^="data:image/png"]'


# ---- the working copy (fast) ---------------------------------------------------------


def test_seed_copies_what_is_missing_and_keeps_student_work(tmp_path):
    release = tmp_path / "notebooks"
    (release / "01_a").mkdir(parents=True)
    (release / "01_a" / "a.ipynb").write_text("blank a")
    (release / "01_a" / "coursekit.py").write_text("kit v1")
    (release / "README.md").write_text("not a lesson")
    work = tmp_path / "my-work"
    assert lab.seed(work, release) == ["01_a/a.ipynb", "01_a/coursekit.py"]
    (work / "01_a" / "a.ipynb").write_text("my answers")
    (release / "01_a" / "coursekit.py").write_text("kit v2")
    (release / "02_b").mkdir()
    (release / "02_b" / "b.ipynb").write_text("blank b")
    assert lab.seed(work, release) == ["01_a/coursekit.py", "02_b/b.ipynb"]
    assert (work / "01_a" / "a.ipynb").read_text() == "my answers"
    assert (work / "01_a" / "coursekit.py").read_text() == "kit v2"
    assert not (work / "README.md").exists()
    assert lab.seed(work, release) == []


def test_student_settings_turn_off_instructor_tools_and_keep_validate():
    import json

    page = json.loads((lab.LAB_CONFIG / "labconfig" / "page_config.json").read_text())
    off = {k for k, v in page["disabledExtensions"].items() if v}
    assert {"@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment"} <= off
    assert "@jupyter/nbgrader:validate-assignment" not in off
    server = json.loads((lab.LAB_CONFIG / "jupyter_server_config.json").read_text())
    ext = server["ServerApp"]["jpserver_extensions"]
    assert ext["nbgrader.server_extensions.formgrader"] is False
    assert ext["nbgrader.server_extensions.validate_assignment"] is True
    env = lab.lab_env({"JUPYTER_CONFIG_PATH": "/elsewhere", "PATH": "/usr/bin"})
    assert env["JUPYTER_CONFIG_PATH"].split(os.pathsep) == [str(lab.LAB_CONFIG), "/elsewhere"]


# ---- a student's server and browser --------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def solved_notebooks(name: str) -> list[Path]:
    return sorted((SOLUTIONS / name).glob("*.ipynb"))


def load_launcher(path: Path):
    spec = importlib.util.spec_from_file_location("_edition_lab", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def student_edition(tmp_path_factory) -> Path:
    """The student edition, built into a scratch folder."""
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("/usr/bin/chromium is missing: scripts/setup --test installs it")
        pytest.skip("needs Debian's chromium (scripts/setup --test)")
    pytest.importorskip("playwright")
    student = tmp_path_factory.mktemp("lab") / "student-edition"
    edition.build_student_edition(student)
    return student


@pytest.fixture(scope="module")
def served(student_edition, tmp_path_factory):
    """(base URL, screenshot folder) of a student JupyterLab on 127.0.0.1, started the way
    the student edition's ``lab.py`` starts it.

    ``my-work/`` holds the seeded blank lessons and the start page, and ``solved/``: every
    lesson with its solution notebook (the solutions are executed and saved, so each
    lesson's self-check reads the others as done).
    """
    student = student_edition
    base = student.parent
    launcher = load_launcher(student / "lab.py")
    layout = launcher.Layout(student)
    launcher.seed(layout.work, layout.lessons, layout.start_page)
    for name in LESSONS:
        dest = layout.work / "solved" / name
        shutil.copytree(layout.lessons / name, dest)
        for solved in solved_notebooks(name):
            nb = nbformat.read(solved, as_version=4)
            for cell in nb.cells:  # a quiz's: the id its student typed in the first cell
                if cell.source.rstrip().endswith('my_id = ""'):
                    cell.source = cell.source.replace('my_id = ""', 'my_id = "ada"')
            nbformat.write(nb, dest / solved.name)
    shots = tmp_path_factory.mktemp("screenshots")
    settings = base / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)  # every cell in the page, so the test can read them all
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')

    env = launcher.lab_env(layout.config)
    env.pop("COURSEKIT_NO_SELF_CHECK", None)
    env.update(
        JUPYTERLAB_SETTINGS_DIR=str(base / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        IPYTHONDIR=str(base / "ipython"),
    )
    port = free_port()
    cmd = launcher.lab_command(
        layout.work,
        layout.config,
        [
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--no-browser",
            "--IdentityProvider.token=",
            "--ServerApp.password=",  # 127.0.0.1 only
        ],
    )
    log = (base / "server.log").open("w")
    server = subprocess.Popen(
        cmd, cwd=student, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"JupyterLab did not start:\n{(base / 'server.log').read_text()}")
            time.sleep(0.5)
        print(f"\nscreenshots: {shots}")
        yield url, shots
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def browser_context(served, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    url = served[0]
    outside: list[str] = []

    def only_local(route):
        if route.request.url.startswith((url, "data:", "blob:", "file:")):  # not the network
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        context.set_default_timeout(TIMEOUT)
        context.route("**/*", only_local)
        try:
            yield context, outside
        finally:
            context.close()


def open_notebook(context, url: str, path: str):
    page = context.new_page()
    page.goto(f"{url}/lab/tree/{path}?reset")
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
    wait_idle(page)
    return page


def wait_idle(page) -> None:
    """Until the kernel is connected and idle (the status bar says so; the toolbar's
    indicator says "idle" before there is a kernel) and no cell is queued or running."""
    page.wait_for_function(
        """sel => (document.querySelector('.jp-StatusBar-Widget')?.innerText ?? '')
                .includes('| Idle')
            && ![...document.querySelectorAll(sel)].some(p => p.textContent.includes('*'))""",
        arg=CODE_PROMPTS,
    )


def run_menu(page, item: str) -> None:
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(f".lm-Menu-itemLabel:text-is('{item}')")


def code_cells(page) -> list[dict]:
    """Each code cell's prompt, source and output text, as the page shows them."""
    return page.eval_on_selector_all(
        ".jp-Notebook .jp-CodeCell",
        """cells => cells.map(c => ({
            prompt: c.querySelector('.jp-InputPrompt')?.textContent.trim() ?? '',
            source: c.querySelector('.cm-content')?.innerText ?? '',
            outputs: [...c.querySelectorAll('.jp-OutputArea-output')].map(o => ({
                mime: o.dataset.mimeType ?? '', text: o.innerText }))
        }))""",
    )


def expected_media(notebooks: list[Path]) -> tuple[int, int]:
    svg = png = 0
    for path in notebooks:
        for cell in nbformat.read(path, as_version=4).cells:
            for out in cell.get("outputs", []):
                svg += "image/svg+xml" in out.get("data", {})
                png += "image/png" in out.get("data", {})
    return svg, png


def check_cell_count(notebooks: list[Path]) -> int:
    return sum(
        bool(c.metadata.get("nbgrader", {}).get("grade"))
        for path in notebooks
        for c in nbformat.read(path, as_version=4).cells
    )


def run_last_cell(page) -> float:
    """Run the notebook's last cell on its own (the self-check); the seconds it took."""
    page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-editor >> nth=-1").click()
    start = time.perf_counter()
    page.keyboard.press("Shift+Enter")
    page.wait_for_timeout(50)  # the run request is on its way; the kernel is then busy
    wait_idle(page)
    return time.perf_counter() - start


def self_check_lines(cells: list[dict]) -> list[str]:
    (last,) = [c for c in cells if c["source"].strip().endswith("self_check()")][-1:]
    return "\n".join(o["text"] for o in last["outputs"]).strip().splitlines()


def svg_overflow(page) -> list[dict]:
    """Each graph drawing's width (shown and natural) and its output area's width."""
    return page.eval_on_selector_all(
        DRAWINGS,
        """imgs => imgs.map(img => {
            const o = img.closest('.jp-OutputArea-output');
            return {shown: img.getBoundingClientRect().width, natural: img.naturalWidth,
                    area: o.clientWidth, scroll: o.scrollWidth};
        })""",
    )


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_jupyterlab_opens_on_the_start_page(served, browser_context):
    """The lab opens on the start page, which links every lesson and has no serious or
    critical violation for axe-core (tests/accessibility.py). Checked for that: the
    rendered START-HERE.md, the course's page. Not: JupyterLab's frame around it, whose
    file browser buttons (its toolkit's ``jp-button``) carry ``aria-pressed``, a critical
    ``aria-allowed-attr`` for axe that is JupyterLab's to fix, not the course's."""
    url, shots = served
    context, outside = browser_context
    page = context.new_page()
    try:
        page.goto(f"{url}/")  # where the launcher sends the browser
        shown = page.locator(".jp-RenderedMarkdown h1:has-text('Start here')")
        shown.wait_for()
        page.screenshot(path=str(shots / "start-page.png"))
        assert_accessible(page, "the start page", include=[".jp-RenderedMarkdown"])
        assert "START-HERE.md" in page.url
        tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel")
        assert "START-HERE.md" in tab.inner_text()
        links = page.locator(".jp-RenderedMarkdown a").evaluate_all(
            "as => as.map(a => a.getAttribute('href'))"
        )
        for name in LESSONS:
            assert any(link and f"/{name}/" in link for link in links), links
        text = page.locator(".jp-RenderedMarkdown").first.inner_text()
        assert "Validate" in text and "self_check()" in text
        # the lessons' first link opens lesson 1
        page.locator(f".jp-RenderedMarkdown a:has-text('{LESSONS[0]}/')").first.click()
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        assert LESSONS[0] not in page.url or "/lab/" in page.url  # opened inside the lab
        assert not outside, f"the lab tried to reach the network: {outside[:5]}"
    finally:
        page.close()


ACCESSIBLE_LESSON = "03_activations"  # a graph drawing and a plot


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_a_lesson_in_jupyterlab_is_accessible(served, browser_context):
    """A lesson run in JupyterLab, its graph drawing and its plot shown, has no serious or
    critical violation for axe-core (tests/accessibility.py) in what the course writes:
    its cells, with their Markdown, prompts and outputs. Left out, as JupyterLab's own and
    not the course's to fix (JupyterLab 4.6):

    - in each code cell, the editor (CodeMirror's ``role="textbox"`` has no label:
      ``aria-input-field-name``, serious) and, beside a heading, its collapse button
      (no text: ``button-name``, critical);
    - around the cells, the notebook's list (``role="feed"``, whose children are not
      articles: ``aria-required-children``, critical) and the toolbars' ``jp-button``
      (``aria-pressed``: ``aria-allowed-attr``, critical)."""
    url, shots = served
    context, _ = browser_context
    (nb_path,) = solved_notebooks(ACCESSIBLE_LESSON)
    page = open_notebook(context, url, f"solved/{ACCESSIBLE_LESSON}/{nb_path.name}")
    try:
        run_menu(page, "Run All Cells")
        page.wait_for_timeout(1000)  # the run has started: the kernel is busy
        wait_idle(page)
        alts = page.locator(f"{DRAWINGS}, {PLOTS}").evaluate_all("imgs => imgs.map(i => i.alt)")
        assert len(alts) == 2 and alts[0].startswith("Eight panels"), alts  # saying what
        assert alts[1].startswith("Graph of o, drawn left to right: 10 values"), alts  # is seen
        page.screenshot(path=str(shots / f"accessible-{ACCESSIBLE_LESSON}.png"))
        assert_accessible(
            page,
            f"{ACCESSIBLE_LESSON} in JupyterLab",
            include=[".jp-NotebookPanel .jp-Notebook .jp-Cell"],
            exclude=[".jp-Cell .cm-editor", ".jp-Cell .jp-collapseHeadingButton"],
        )
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
@pytest.mark.parametrize("name", LESSON_PARAMS)
def test_solved_lesson_runs_cleanly_in_jupyterlab(served, browser_context, name):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    url, shots = served
    context, outside = browser_context
    notebooks = solved_notebooks(name)
    if not notebooks:
        pytest.skip(f"no solutions/{name}: run make generate")
    for nb_path in notebooks:
        page = open_notebook(context, url, f"solved/{name}/{nb_path.name}")
        try:
            run_menu(page, "Run All Cells")
            with contextlib.suppress(PlaywrightTimeout):  # it may be done already
                page.wait_for_function(
                    "s => [...document.querySelectorAll(s)].some(p => p.textContent.includes('*'))",
                    arg=CODE_PROMPTS,
                    timeout=10_000,
                )
            wait_idle(page)
            cells = code_cells(page)
            page.screenshot(path=str(shots / f"{name}-{nb_path.stem}-end.png"))
            not_run = [c["source"][:60] for c in cells if not re.search(r"\[\d+\]", c["prompt"])]
            assert not not_run, f"cells that did not run (an earlier cell failed?): {not_run}"
            errors = [
                o["text"][:300]
                for c in cells
                for o in c["outputs"]
                if o["mime"] == "application/vnd.jupyter.stderr"
            ]
            assert not errors, f"error or stderr output in the solved {name}: {errors}"

            svg, png = expected_media([nb_path])
            shown_svg, shown_png = page.locator(DRAWINGS), page.locator(PLOTS)
            assert shown_svg.count() >= svg, "graph drawings missing"
            assert shown_png.count() >= png, "plots missing"
            for kind, items in (("svg", shown_svg), ("plot", shown_png)):
                if items.count():
                    items.first.scroll_into_view_if_needed()
                    assert items.first.bounding_box()["height"] > 20, f"{kind} has no size"
                    items.first.screenshot(path=str(shots / f"{name}-{nb_path.stem}-{kind}.png"))
            for i, size in enumerate(svg_overflow(page)):  # no graph is clipped
                print(f"{name} graph {i}: {size['natural']:.0f} px in {size['area']} px")
                assert size["natural"] <= size["area"] and size["scroll"] <= size["area"], size

            # each check cell prints its success line, a line starting with ✓
            source = nbformat.read(nb_path, as_version=4)
            graded = [
                bool(c.metadata.get("nbgrader", {}).get("grade"))
                for c in source.cells
                if c.cell_type == "code"
            ]
            assert len(graded) == len(cells), "the page shows another notebook"
            for is_check, cell in zip(graded, cells):
                shown = "\n".join(o["text"] for o in cell["outputs"])
                if is_check:
                    assert re.search(r"^✓ ", shown, re.M), f"no ✓ line: {cell['source'][:80]}"

            # the self-check: this lesson's exercises, then one line per other lesson
            n, total = (
                sum(graded),
                check_cell_count([p for lesson in LESSONS for p in solved_notebooks(lesson)]),
            )
            lines = self_check_lines(cells)
            assert lines[0] == f"{name} (this notebook, run again now): {n} of {n} pass", lines
            assert all(line.startswith("  ✓ ") for line in lines[1 : n + 1]), lines
            others = [line.split()[0] for line in lines[n + 2 : n + 1 + len(LESSONS)]]
            assert others == [lesson for lesson in LESSONS if lesson != name], lines
            assert f"Course: {total} of {total} exercises pass their visible checks." in lines
            assert len(lines) == n + len(LESSONS) + 3 and max(map(len, lines)) < 90
            seconds = run_last_cell(page)
            print(
                f"\n{name}: self-check cell alone, after Run All: {seconds:.2f} s "
                f"({len(lines)} lines)"
            )
            assert self_check_lines(code_cells(page)) == lines
            assert not outside, f"the lab tried to reach the network: {outside[:5]}"
        finally:
            page.close()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_student_lab_has_validate_and_no_instructor_tools(served, browser_context):
    """Validate works in the student edition: no course, no nbgrader_config.py."""
    url, shots = served
    context, _ = browser_context
    name = LESSONS[0]
    (nb_path,) = solved_notebooks(name)[:1]
    page = open_notebook(context, url, f"solved/{name}/{nb_path.name}")
    try:
        menus = page.locator(".lm-MenuBar-itemLabel").all_inner_texts()
        assert "Run" in menus and "Nbgrader" not in menus
        page.click(".jp-NotebookPanel-toolbar >> text=Validate")
        dialog = page.locator(".jp-Dialog-content")
        dialog.wait_for()
        page.wait_for_function(
            "() => /Success|failed|error/i.test("
            "document.querySelector('.jp-Dialog-content')?.innerText ?? '')"
        )
        page.screenshot(path=str(shots / "validate.png"))
        assert "Success! Your notebook passes all the tests." in dialog.inner_text()
    finally:
        page.close()
    for route in ("formgrader", "assignments", "courses"):
        with (
            contextlib.suppress(urllib.error.HTTPError),
            urllib.request.urlopen(f"{url}/{route}", timeout=10) as r,
        ):
            pytest.fail(f"/{route} answered {r.status}: instructor tools must be off")


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_the_start_page_leads_to_a_lessons_slides_both_ways(
    student_edition, served, browser_context
):
    """Live: the start page names the View menu's slideshow item; a lesson opened from it
    becomes a RISE deck beside the notebook, with typeset math, and the right arrow key
    moves to the next slide. Offline: the edition's slides/index.html, which the start page
    names, opens from disk with the network off and leads to the same lesson's deck."""
    url, shots = served
    context, outside = browser_context
    name = LESSONS[0]
    page = context.new_page()
    try:
        page.goto(f"{url}/lab/tree/START-HERE.md?reset")
        start = page.locator(".jp-RenderedMarkdown").first
        start.locator("h1:has-text('Start here')").wait_for()
        text = start.inner_text()
        assert "Render as Reveal Slideshow" in text and "slides/index.html" in text
        start.locator(f"a:has-text('{name}/')").first.click()
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
        page.click(".lm-MenuBar-itemLabel:text-is('View')")
        page.click(".lm-Menu-itemLabel:text-is('Render as Reveal Slideshow')")
        deck = page.frame_locator("iframe[src*='/rise/']")
        deck.locator(".reveal.ready").wait_for()
        first = deck.locator(".reveal .slides > section.present").inner_text()
        assert deck.locator(".reveal .slides > section").count() >= 5
        deck.locator(".reveal").click()
        page.keyboard.press("ArrowRight")
        rise = next(f for f in page.frames if "/rise/" in f.url)
        rise.wait_for_function("location.hash.startsWith('#/slide-1-')")
        here = deck.locator(".reveal .slides > section.present")
        assert here.inner_text() != first
        math = deck.locator(".reveal .slides mjx-container").first
        math.wait_for()
        page.screenshot(path=str(shots / "rise-slideshow.png"))
        assert not outside, f"the slideshow tried to reach the network: {outside[:5]}"
    finally:
        page.close()
    index = student_edition / "slides" / "index.html"
    (deck_file,) = (student_edition / "slides").glob(f"{name}.slides.html")
    page = context.new_page()
    try:
        context.set_offline(True)
        page.goto(index.as_uri())
        page.click(f"a[href='{deck_file.name}']")
        page.wait_for_selector(".reveal.ready")
        page.keyboard.press("ArrowRight")
        page.wait_for_function("Reveal.getIndices().h === 1")
        page.wait_for_timeout(1000)  # the slide transition
        page.wait_for_function("!MathJax.Hub.queue.pending && !MathJax.Hub.queue.running")
        page.screenshot(path=str(shots / "static-slides.png"))
        assert page.locator("section.present .MathJax").count(), "no typeset math"
        assert not page.locator(".MathJax_Error").count(), "Math Processing Error"
    finally:
        context.set_offline(False)
        page.close()


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_blank_lesson_shows_one_line_failures(served, browser_context):
    url, shots = served
    context, _ = browser_context
    name = LESSONS[0]
    (nb_path,) = sorted((NOTEBOOKS / name).glob("*.ipynb"))[:1]
    page = open_notebook(context, url, f"{name}/{nb_path.name}")  # my-work/, as seeded
    try:
        # Run All stops at the first error, as it would for a student: run cell by cell.
        page.click(".jp-Notebook .jp-Cell >> nth=0")
        page.keyboard.press("Escape")
        count = page.locator(".jp-Notebook .jp-Cell").count()
        for _ in range(count):
            page.keyboard.press("Shift+Enter")
            wait_idle(page)
        cells = code_cells(page)
        page.screenshot(path=str(shots / f"blank-{name}-end.png"))
        checks = [c for c in cells if c["source"].lstrip().startswith('"""Check:')]
        assert len(checks) == check_cell_count([nb_path])
        for cell in checks:
            errors = [
                o["text"] for o in cell["outputs"] if o["mime"] == "application/vnd.jupyter.stderr"
            ]
            assert len(errors) == 1, cell["source"][:80]
            lines = errors[0].strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("✗ "), errors[0][:500]
            assert len(lines[0]) < 90
        page.locator(f"{ERROR_OUTPUT} >> nth=0").screenshot(path=str(shots / "blank-check.png"))
        lines = self_check_lines(cells)
        n = len(checks)
        assert lines[0] == f"{name} (this notebook, run again now): 0 of {n} pass", lines
        assert [line.split()[0] for line in lines[1 : n + 1]] == ["✗"] * n
        assert all(line.endswith("not written yet") for line in lines[1 : n + 1]), lines
        others = lines[n + 2 : -1]
        assert [line.split(maxsplit=1) for line in others] == [
            [lesson, "not started"] for lesson in LESSONS[1:]
        ], lines
        seconds = run_last_cell(page)
        print(f"\nblank {name}: self-check cell alone: {seconds:.2f} s ({len(lines)} lines)")
    finally:
        page.close()


def type_into_cell(page, index: int, text: str) -> None:
    """Replace the source of the page's code cell ``index`` with ``text``, and run it."""
    editor = page.locator(".jp-Notebook .jp-CodeCell .cm-content").nth(index)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Shift+Enter")
    page.wait_for_timeout(50)
    wait_idle(page)


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.xdist_group("browser")
def test_quiz_shows_the_students_variant_and_the_practice_round_answers_at_once(
    served, browser_context
):
    """A student opens the blank quiz, types their id in the first cell, and sees their own
    variant; the practice cell shows another variant, and an answer to it is checked at
    once, right or wrong, with the worked answer."""
    from autograder.verdicts.hidden import quiz

    url, shots = served
    context, outside = browser_context
    name = "04_checkpoint_engine"
    (nb_path,) = sorted((NOTEBOOKS / name).glob("*.ipynb"))
    page = open_notebook(context, url, f"{name}/{nb_path.name}")  # my-work/, as seeded
    try:
        type_into_cell(page, 0, 'my_id = "grace"')
        page.locator(".jp-Notebook .jp-CodeCell .cm-content").nth(1).click()
        page.keyboard.press("Shift+Enter")  # the setup cell
        wait_idle(page)
        page.keyboard.press("Shift+Enter")  # the practice round's markdown
        page.keyboard.press("Shift+Enter")  # p = quiz.practice("q2")
        wait_idle(page)
        cells = code_cells(page)
        said = "".join(o["text"] for o in cells[1]["outputs"])
        assert "questions shown for id 'grace'" in said, said
        assert "comes from: typed in the first cell" in said, said
        shown = "\n".join(o["text"] for o in cells[2]["outputs"])
        v = quiz.variant(name, ("practice", 0), "q2")
        assert "Practice variant 0 of q2" in shown and v.code.splitlines()[0] in shown, shown
        drawing = page.locator(DRAWINGS)
        assert drawing.count() == 1 and drawing.first.bounding_box()["height"] > 20
        keys = __import__(f"autograder.verdicts.hidden.{name}", fromlist=["KEYS"]).KEYS
        right = keys["q2"].key(v)
        type_into_cell(page, 3, f"p.answer({right!r})")
        said = "\n".join(o["text"] for o in code_cells(page)[3]["outputs"])
        assert said.startswith("✓ Right.") and "Why: " in said, said
        page.screenshot(path=str(shots / "quiz-practice-right.png"))
        type_into_cell(page, 3, f"p.answer({right + 2!r})")
        said = "\n".join(o["text"] for o in code_cells(page)[3]["outputs"])
        assert said.startswith("✗ Not right.") and "Why: " in said, said
        # the student's own question 2 shows their variant, not the practice one
        page.locator(".jp-Notebook .jp-CodeCell .cm-content").nth(4).click()
        page.keyboard.press("Shift+Enter")  # quiz.show("q1")
        wait_idle(page)
        own = quiz.variant(name, "grace", "q1")
        text = "\n".join(o["text"] for o in code_cells(page)[4]["outputs"])
        assert own.options[0][1].replace("`", "")[:20] in text, text
        assert not page.locator(ERROR_OUTPUT).count()
        assert not outside, f"the lab tried to reach the network: {outside[:5]}"
    finally:
        page.close()
