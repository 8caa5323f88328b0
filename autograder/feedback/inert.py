"""Feedback pages in which nothing from a submission is active.

nbgrader's ``generate_feedback`` renders each autograded notebook with an nbconvert HTML
exporter; nbgrader_config.py makes that exporter ``InertHTMLExporter``
(``GenerateFeedback.exporter_class``), so pages made by ``python -m autograder feedback``,
by ``nbgrader generate_feedback`` and by formgrader's feedback button all come from here.
Three layers, each enough on its own for what it covers:

1. **The notebook**, before anything renders it (``make_inert``). Outputs keep only what
   displays as text or a picture (plain text, HTML, Markdown, LaTeX, PNG, JPEG, SVG):
   JavaScript, widgets and every other type become a one-line notice. PNG and JPEG data
   must be valid base64 of such an image; SVG drawings are parsed and lose scripts,
   event handlers, foreign objects, animations and links out of the drawing. Everything
   the templates paste into the page unescaped (image sizes, prompt numbers, cell ids,
   tags, nbgrader metadata) is checked, and text that cannot be written as UTF-8 is
   repaired.
2. **Rendering.** HTML outputs, Markdown cells and Markdown outputs go through
   ``sanitize.clean_html``: bleach (which parses as a browser does) with an allow-list of
   tags, attributes, URL schemes and CSS properties; what is not allowed is shown as text.
   nbconvert's own ``sanitize_html`` is on too, so its templates write no script for
   JavaScript or widget outputs. (It does not cover nbgrader's feedback template, whose
   Markdown cells are rendered without it, nor image sizes, which nbconvert's templates
   write into attributes unquoted; the layers above and below do.)
3. **The page** (``final_pass``). Every ``script``, ``style``, ``link``, ``meta``,
   ``base``, frame, object, embed, form or form control, ``svg``, ``math``, ``template``
   or ``noscript`` element that is not one the template writes for an *empty* notebook
   (MathJax's loader and configuration script, the page's CSS) is removed; so is every
   ``on*``, ``srcdoc`` and ``srcset`` attribute, every URL whose scheme is not http(s) or
   mailto (``data:image/...`` only in an image's ``src``), and every ``style`` attribute
   that could load or run something. The page is then stamped with ``STAMP``, which
   ``python -m autograder feedback`` requires of every page.

Nothing here raises because of what a notebook contains: what cannot be cleaned is
replaced by a notice, and pathological input (deeply nested HTML or Markdown) is shown
as text instead of being parsed.
"""

from __future__ import annotations

import base64
import binascii
import math
import re

from nbconvert.exporters import HTMLExporter
from traitlets import default

from .sanitize import (
    IMAGE_URL,
    as_text,
    clean_html,
    clean_svg,
    fix_text,
    markdown_too_deep,
    safe_css,
    squeeze,
    words,
)

try:  # jinja2 >= 3
    from jinja2 import pass_context
except ImportError:  # pragma: no cover
    from jinja2 import contextfilter as pass_context

STAMP = '<meta name="autograder-feedback" content="inert">'
NOTICE = "[{what} not shown in the feedback]"

SHOWN_TYPES = (
    "text/plain",
    "text/html",
    "text/markdown",
    "text/latex",
    "image/png",
    "image/jpeg",
    "image/svg+xml",
)
IMAGE_MAGIC = {
    "image/png": b"\x89PNG\r\n\x1a\n",
    "image/jpeg": b"\xff\xd8\xff",
    "image/gif": b"GIF8",
}
CELL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
GRADE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


# ---- the notebook ------------------------------------------------------------------------


def _text(value) -> str:
    if isinstance(value, list):
        value = "".join(v for v in value if isinstance(v, str))
    return fix_text(value) if isinstance(value, str) else ""


def make_inert(nb):
    """A copy of notebook ``nb`` holding only what can be displayed without running
    anything, in the shapes the templates expect (see the module docstring)."""
    import nbformat

    cells = nb.get("cells") if isinstance(nb, dict) else None
    out = []
    for i, cell in enumerate(cells if isinstance(cells, list) else []):
        if isinstance(cell, dict):
            out.append(_cell(cell, i))
    metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python", "pygments_lexer": "ipython3"},
    }
    return nbformat.from_dict(
        {"cells": out, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    )


def _cell(cell: dict, index: int) -> dict:
    kind = cell.get("cell_type")
    if kind not in ("code", "markdown", "raw"):
        kind = "raw"
    cid = cell.get("id")
    new = {
        "cell_type": kind,
        "id": cid if isinstance(cid, str) and CELL_ID.match(cid) else f"cell-{index}",
        "source": _text(cell.get("source")),
        "metadata": _cell_metadata(cell.get("metadata")),
    }
    if kind == "markdown":
        attachments = _attachments(cell.get("attachments"))
        if attachments:
            new["attachments"] = attachments
    if kind == "code":
        new["execution_count"] = _count(cell.get("execution_count"))
        outputs = cell.get("outputs")
        new["outputs"] = [
            _output(o)
            for o in (outputs if isinstance(outputs, list) else [])
            if isinstance(o, dict)
        ]
    return new


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cell_metadata(metadata) -> dict:
    metadata = metadata if isinstance(metadata, dict) else {}
    out = {}
    grader = metadata.get("nbgrader")
    if (
        isinstance(grader, dict)
        and isinstance(grader.get("grade_id"), str)
        and (GRADE_ID.match(grader["grade_id"]))
    ):
        out["nbgrader"] = {
            k: v for k, v in grader.items() if isinstance(v, (bool, int, float, str)) or v is None
        }
    tags = metadata.get("tags")
    if isinstance(tags, list):
        out["tags"] = [fix_text(t) for t in tags if isinstance(t, str)]
    return out


def _attachments(attachments) -> dict:
    out = {}
    for name, bundle in attachments.items() if isinstance(attachments, dict) else ():
        if not isinstance(name, str) or not isinstance(bundle, dict):
            continue
        kept = {m: d for m, d in bundle.items() if m in IMAGE_MAGIC and _valid_image(m, d)}
        if kept:
            out[fix_text(name)] = kept
    return out


def _valid_image(mime: str, data) -> bool:
    if not isinstance(data, str):
        return False
    try:
        raw = base64.b64decode("".join(data.split()), validate=True)
    except (binascii.Error, ValueError):
        return False
    return raw.startswith(IMAGE_MAGIC[mime])


def _output(out: dict) -> dict:
    kind = out.get("output_type")
    if kind == "stream":
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        return {"output_type": "stream", "name": name, "text": _text(out.get("text"))}
    if kind == "error":
        tb = out.get("traceback")
        return {
            "output_type": "error",
            "ename": _text(out.get("ename")) or "Error",
            "evalue": _text(out.get("evalue")),
            "traceback": [
                fix_text(t) for t in (tb if isinstance(tb, list) else []) if isinstance(t, str)
            ],
        }
    if kind not in ("display_data", "execute_result"):
        return _notice(f"an output of type {_short(kind)}")
    data = out.get("data") if isinstance(out.get("data"), dict) else {}
    kept = {}
    for mime in SHOWN_TYPES:
        value = _text(data.get(mime)) if mime in data else ""
        if not value:
            continue
        if mime in IMAGE_MAGIC:
            value = "".join(value.split())
            if not _valid_image(mime, value):
                continue
        elif mime == "image/svg+xml":
            value = clean_svg(value)
            if value is None:
                continue
        kept[mime] = value
    if not kept:
        shown = ", ".join(_short(m) for m in list(data)[:3]) or "empty"
        return _notice(f"an output of type {shown}")
    new = {"output_type": kind, "data": kept, "metadata": _image_sizes(out.get("metadata"), kept)}
    if kind == "execute_result":
        new["execution_count"] = _count(out.get("execution_count"))
    return new


def _image_sizes(metadata, kept: dict) -> dict:
    """Only numbers for the width and height of images (templates write them unquoted)."""
    out = {}
    metadata = metadata if isinstance(metadata, dict) else {}
    for mime in ("image/png", "image/jpeg"):
        given = metadata.get(mime)
        if mime not in kept or not isinstance(given, dict):
            continue
        size = {
            k: int(v)
            for k, v in given.items()
            if k in ("width", "height")
            and isinstance(v, (int, float))
            and not isinstance(v, bool)
            and math.isfinite(v)
            and 0 < v < 100_000
        }
        if size:
            out[mime] = size
    return out


def _short(value) -> str:
    text = str(value)[:60]
    return re.sub(r"[^\w/+.-]", "?", text) or "?"


def _notice(what: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": NOTICE.format(what=what) + "\n"}


# ---- the page -------------------------------------------------------------------------------

ACTIVE = words("""
script style link meta base iframe frame frameset object embed applet param form input
button select textarea option portal fencedframe svg template noscript noembed
noframes xmp plaintext
""")
URL_ATTRIBUTES = words("""
href src action formaction xlink:href background poster cite data codebase longdesc lowsrc
dynsrc usemap manifest icon profile
""")
DROPPED_ATTRIBUTES = frozenset({"srcdoc", "srcset", "imagesrcset", "ping", "http-equiv"})
SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):")


def final_pass(page: str, trusted: frozenset[str]) -> str:
    """``page`` without any active element except those in ``trusted`` (serialized the
    way BeautifulSoup writes them), any handler or any unsafe URL; stamped with STAMP."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, features="html.parser")
    for element in soup.find_all(ACTIVE):
        if element.decomposed:
            continue
        if str(element) not in trusted:
            element.decompose()
    for element in soup.find_all("math"):  # offline math: presentation MathML only
        if not element.decomposed and not mathml_only(element):
            element.decompose()
    for element in soup.find_all(True):
        for name in list(element.attrs):
            if not _safe_page_attribute(element.name, name, element.attrs[name]):
                del element.attrs[name]
    if soup.html is not None:  # the page's language, for screen readers (nbgrader's has none)
        soup.html["lang"] = "en"
    stamp = BeautifulSoup(STAMP, features="html.parser").meta
    (soup.head or soup).append(stamp)
    return str(soup)


def mathml_only(element) -> bool:
    """Whether a ``<math>`` element holds nothing but the MathML that offline_math.py
    writes (see sanitize.MATHML), with its attributes."""
    from .sanitize import MATHML, MATHML_ATTRIBUTES

    for node in [element, *element.find_all(True)]:
        if node.name not in MATHML:
            return False
        allowed = MATHML_ATTRIBUTES | ({"xmlns"} if node.name == "math" else set())
        if any(name not in allowed for name in node.attrs):
            return False
    return element.get("xmlns", "http://www.w3.org/1998/Math/MathML") == (
        "http://www.w3.org/1998/Math/MathML"
    )


def _safe_page_attribute(tag: str, name: str, value) -> bool:
    name = name.lower()
    if name.startswith("on") or name in DROPPED_ATTRIBUTES:
        return False
    value = " ".join(value) if isinstance(value, list) else str(value)
    if name == "style":
        return safe_css(value)
    if name in URL_ATTRIBUTES:
        url = squeeze(value).lower()
        match = SCHEME.match(url)
        if match is None:
            return True
        if tag == "img" and name == "src":
            return match.group(1) in ("http", "https") or bool(IMAGE_URL.match(url))
        return match.group(1) in ("http", "https", "mailto")
    return True


def is_stamp(element) -> bool:
    return element.name == "meta" and element.get("name") == "autograder-feedback"


def active_markup(page: str, trusted: frozenset[str] = frozenset()) -> list[str]:
    """What in ``page`` could run or load something (for tests): active elements not in
    ``trusted``, handlers, unsafe URLs."""
    from bs4 import BeautifulSoup

    found = []
    soup = BeautifulSoup(page, features="html.parser")
    for element in soup.find_all(ACTIVE):
        if str(element) not in trusted and not is_stamp(element):
            found.append(str(element)[:120])
    for element in soup.find_all(True):
        for name, value in element.attrs.items():
            if not _safe_page_attribute(element.name, name, value):
                found.append(f"<{element.name} {name}={str(value)[:80]!r}>")
    return found


# ---- the exporter ---------------------------------------------------------------------------


class InertHTMLExporter(HTMLExporter):
    """nbconvert's HTMLExporter, made safe for pages showing what students wrote (see the
    module docstring). ``GenerateFeedback.exporter_class`` in nbgrader_config.py."""

    @default("sanitize_html")
    def _sanitize_html_default(self):
        return True

    def default_filters(self):
        yield from super().default_filters()
        yield ("clean_html", clean_html)

    @pass_context
    def markdown2html(self, context, source):
        text = _text(source)
        if markdown_too_deep(text):
            return as_text(text)
        try:
            rendered = super().markdown2html(context, text)
        except Exception:
            return as_text(text)
        return clean_html(rendered)

    def from_notebook_node(self, nb, resources=None, **kw):
        page, resources = super().from_notebook_node(make_inert(nb), resources, **kw)
        return final_pass(page, self.trusted_elements(resources)), resources

    def trusted_elements(self, resources) -> frozenset[str]:
        """The active elements (scripts, styles...) this exporter's template writes, with
        these resources (the course's CSS, the scores), for a notebook without cells: the
        page's own, never a notebook's."""
        import nbformat
        from bs4 import BeautifulSoup

        empty = self.template.render(nb=nbformat.v4.new_notebook(), resources=resources)
        soup = BeautifulSoup(
            BeautifulSoup(empty, features="html.parser").decode(), features="html.parser"
        )
        return frozenset(str(e) for e in soup.find_all(ACTIVE))
