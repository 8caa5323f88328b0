"""Feedback pages every reader can read: the course's CSS (``accessible.css``) in nbgrader's
feedback template, where the template puts the page's other inlined CSS.

``AccessibleStyle`` is one of ``GenerateFeedback.preprocessors`` (nbgrader_config.py),
after nbconvert's ``CSSHTMLHeaderPreprocessor``, which writes the code's colours: the
template renders what it adds as one ``<style>`` element of the page's own, so the inert
exporter keeps it (``inert.InertHTMLExporter.trusted_elements``). The page's language is
set by ``inert.final_pass``.
"""

from __future__ import annotations

from pathlib import Path

from nbgrader.preprocessors import NbGraderPreprocessor

CSS = (Path(__file__).resolve().parent / "accessible.css").read_text(encoding="utf-8")


class AccessibleStyle(NbGraderPreprocessor):  # (enabled by default, as nbgrader's are)
    """Adds ``accessible.css`` to the CSS nbgrader's feedback template inlines."""

    def preprocess(self, nb, resources):
        inlining = resources.setdefault("inlining", {})
        inlining["css"] = [*inlining.get("css", []), CSS]
        return nb, resources
