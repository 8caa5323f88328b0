"""Math in feedback pages and in the formgrader without a network.

nbgrader's HTML templates load MathJax from a CDN, so whoever reads a feedback page
offline sees raw LaTeX. Instead, ``MathToMathML`` (an nbconvert preprocessor) turns every
``$...$`` and ``$$...$$`` in markdown cells into MathML, which browsers draw themselves,
and ``templates/base/mathjax.html.j2`` replaces nbconvert's MathJax macro with a comment,
so a feedback page loads no script at all. ``configure(c)`` in nbgrader_config.py sets
both up for ``generate_feedback`` and for the formgrader's submission view.

A formula that latex2mathml cannot read stays as it was (LaTeX), in a ``<code>`` span.
"""

from __future__ import annotations

import html
import os
import re

from nbconvert.preprocessors import Preprocessor

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")

# Code is left alone: fenced blocks, indented blocks are rare in the lessons and contain
# no dollar signs, inline code spans.
_CODE = re.compile(r"(^```.*?^```[ \t]*$|`[^`\n]+`)", re.M | re.S)
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE = re.compile(r"(?<![\\$])\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\$)")
# Characters markdown would act on inside the MathML's text: made into entities.
_MARKDOWN = str.maketrans({ch: f"&#{ord(ch)};" for ch in "*_`[]~|\\$"})


def to_mathml(tex: str, display: bool) -> str:
    """``tex`` as one line of MathML (or as escaped LaTeX code if it cannot be read)."""
    from latex2mathml.converter import convert

    try:
        mathml = convert(tex.strip(), display="block" if display else "inline")
    except Exception:
        return f"<code>{html.escape(tex.strip())}</code>"
    mathml = " ".join(mathml.split())
    return re.sub(r">([^<]+)<", lambda m: ">" + _inert(m.group(1)) + "<", mathml)


def _inert(text: str) -> str:
    """Text between MathML tags, which nbconvert's renderer still reads as markdown: every
    character that markdown would act on becomes a character reference."""
    text = html.escape(html.unescape(text), quote=False)
    return text.translate(_MARKDOWN)


def markdown_with_mathml(text: str) -> str:
    """``text`` (markdown) with each formula outside code replaced by MathML."""
    parts = _CODE.split(text)
    for i in range(0, len(parts), 2):  # the even parts are outside code
        part = _DISPLAY.sub(lambda m: to_mathml(m.group(1), True), parts[i])
        parts[i] = _INLINE.sub(lambda m: to_mathml(m.group(1), False), part)
    return "".join(parts)


class MathToMathML(Preprocessor):
    """Replace the LaTeX in markdown cells by MathML."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown" and "$" in cell.source:
            cell.source = markdown_with_mathml(cell.source)
        return cell, resources


def configure(c, nbgrader_templates: str | None = None) -> None:
    """Offline math for nbgrader's HTML: the preprocessor, and the template folder that
    drops MathJax, ahead of nbgrader's own templates (which nbgrader then keeps)."""
    if nbgrader_templates is None:
        import nbgrader

        nbgrader_templates = os.path.join(
            os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates"
        )
    c.HTMLExporter.preprocessors = ["autograder.feedback.offline_math.MathToMathML"]
    c.HTMLExporter.extra_template_basedirs = [TEMPLATES, nbgrader_templates]
