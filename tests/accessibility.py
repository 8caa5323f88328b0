"""axe-core, the accessibility engine, run on a page open in Playwright's Chromium.

axe-core comes inside the Python package ``axe-playwright-python`` (requirements-test.txt:
the package's own code is MIT, the ``axe.min.js`` it ships is axe-core's, MPL-2.0); only
that file is used here, injected into the page, and ``axe.run`` is called directly.

A page passes when axe finds no *serious* or *critical* violation in it, and no image
carries nbconvert's stand-in text: nbconvert gives every ``<img>`` without an ``alt`` the
text "No description has been provided for this image", which satisfies axe but tells a
reader nothing, so it counts here as the missing alternative it is (``image-alt``).
"""

from __future__ import annotations

SEVERE = ("serious", "critical")
PLACEHOLDER = "No description has been provided for this image"  # nbconvert's stand-in

# Every image in ``roots`` (CSS selectors; the whole page if none) whose alt is the stand-in.
_PLACEHOLDERS = """([roots, text]) => {
    const within = roots.length ? roots.flatMap(s => [...document.querySelectorAll(s)])
                                : [document];
    const found = new Set(within.flatMap(r => [...r.querySelectorAll('img')]));
    return [...found].filter(i => i.getAttribute('alt') === text).map((img, n) => ({
        target: [img.id ? '#' + img.id : `img[alt="${text}"] >> nth=${n}`],
        html: img.outerHTML.slice(0, 80)}));
}"""


def axe_script() -> str:
    from axe_playwright_python.base import AXE_SCRIPT

    return AXE_SCRIPT


def severe_violations(page, include: list[str] | None = None, exclude: list[str] = ()) -> list:
    """The serious and critical violations axe finds on ``page`` (as axe reports them:
    id, impact, help, helpUrl, nodes), in the elements ``include`` selects (default: the
    whole page) less those ``exclude`` selects, plus images with nbconvert's stand-in
    alt text as ``image-alt`` violations."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe_script())
    context = {"include": [[s] for s in include] if include else [["html"]]}
    if exclude:
        context["exclude"] = [[s] for s in exclude]
    results = page.evaluate(
        "([context, options]) => axe.run(context, options)",
        [context, {"resultTypes": ["violations"]}],
    )
    found = [v for v in results["violations"] if v.get("impact") in SEVERE]
    stand_ins = page.evaluate(_PLACEHOLDERS, [include or [], PLACEHOLDER])
    if stand_ins:
        found.append(
            {
                "id": "image-alt",
                "impact": "critical",
                "help": f"Images must have alternative text (not nbconvert's {PLACEHOLDER!r})",
                "helpUrl": "https://dequeuniversity.com/rules/axe/4.12/image-alt",
                "nodes": stand_ins,
            }
        )
    return found


def violation_lines(violations: list) -> list[str]:
    """One line per element that fails a rule: the rule's id, its impact, the element's
    selector and the rule's help page."""
    return [
        f"{v['id']} ({v['impact']}) {' '.join(map(str, node['target']))} {v['helpUrl']}"
        for v in violations
        for node in v["nodes"]
    ]


def assert_accessible(page, what: str, include=None, exclude=()) -> None:
    found = severe_violations(page, include, exclude)
    lines = violation_lines(found)
    assert not found, (
        f"{what}: {len(lines)} serious or critical accessibility violations:\n" + "\n".join(lines)
    )
