"""HTML, Markdown and SVG fragments with nothing active in them, for feedback pages.

``clean_html`` (HTML outputs, rendered Markdown) keeps an allow-list of tags, attributes,
URL schemes (``data:image/...`` only for images) and CSS properties, using bleach, which
parses as a browser does; what is refused is shown as text. Classes are limited to those
Markdown and code highlighting use, so nothing can pose as the page's own panels, scores
or labels. ``clean_svg`` keeps the shapes and text of an SVG drawing and drops scripts,
handlers, foreign objects, animations and links out of it. Neither ever raises: input too
deeply nested or too long to parse quickly is shown as text.
"""

from __future__ import annotations

import functools
import html
import re
import string
import xml.etree.ElementTree as ET

MAX_DEPTH = 200  # HTML nested deeper than this is shown as text (bleach is quadratic in it)
MAX_FRAGMENT = 2_000_000  # characters of HTML or Markdown parsed; longer is shown as text
MAX_MARKDOWN_INDENT = 400  # a line indented (or quoted, or bulleted) more is not parsed


def words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# ---- HTML fragments (HTML outputs, rendered Markdown) --------------------------------------

TAGS = words("""
a abbr acronym b bdi bdo blockquote br caption cite code col colgroup dd del details dfn div
dl dt em figcaption figure h1 h2 h3 h4 h5 h6 hr i img ins kbd li mark ol p pre q rp rt ruby
s samp small span strike strong sub summary sup table tbody td tfoot th thead tr tt u ul var
wbr
""")
# Presentation MathML, as offline_math.py writes it for $...$ (no links, actions, glyphs
# or embedded HTML: no href, maction, mglyph, annotation-xml).
MATHML = words("""
math mrow mi mo mn ms mtext mspace msup msub msubsup mfrac msqrt mroot mover munder
munderover mtable mtr mtd mstyle menclose mpadded mphantom merror
""")
MATHML_ATTRIBUTES = words("""
display mathvariant stretchy fence separator form lspace rspace columnalign rowalign
columnspacing rowspacing columnlines rowlines linethickness accent accentunder width height
depth movablelimits largeop symmetric minsize maxsize displaystyle scriptlevel notation
""")
TAGS = TAGS | MATHML
ATTRIBUTES = {
    **dict.fromkeys(MATHML, MATHML_ATTRIBUTES),
    "math": MATHML_ATTRIBUTES | {"xmlns"},
    "*": {"class", "title", "style", "lang", "dir"},
    "a": {"href", "name"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan", "align", "valign"},
    "th": {"colspan", "rowspan", "align", "valign", "scope"},
    "col": {"span", "align"},
    "colgroup": {"span", "align"},
    "ol": {"start", "type", "reversed"},
    "li": {"value"},
    "details": {"open"},
    "table": {"border", "cellpadding", "cellspacing"},
    **{f"h{n}": {"id"} for n in range(1, 7)},
}
IMAGE_URL = re.compile(r"^data:image/(png|jpeg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)
# Classes Markdown and code highlighting use; never the page's own (panels, scores, labels).
CLASS = re.compile(r"^(highlight|anchor-link|hl-[a-z0-9-]+|[a-z][a-z0-9]{0,3})$")


def _allowed_attribute(tag: str, name: str, value: str) -> bool:
    if name not in ATTRIBUTES["*"] and name not in ATTRIBUTES.get(tag, ()):
        return False
    if name == "class":
        return all(CLASS.match(c) for c in value.split())
    if tag == "img" and name == "src":
        return bool(IMAGE_URL.match(squeeze(value)))
    if tag == "a" and name == "href":
        return not squeeze(value).lower().startswith("data:")
    if name == "xmlns":
        return value == "http://www.w3.org/1998/Math/MathML"
    return True


@functools.cache
def _cleaner():
    from bleach.css_sanitizer import ALLOWED_CSS_PROPERTIES, CSSSanitizer
    from bleach.sanitizer import Cleaner

    return Cleaner(
        tags=TAGS,
        attributes=_allowed_attribute,
        protocols={"http", "https", "mailto", "data"},
        strip=False,
        strip_comments=True,
        css_sanitizer=CSSSanitizer(allowed_css_properties=ALLOWED_CSS_PROPERTIES),
    )


def as_text(text: str) -> str:
    """``text`` shown as it is, in a ``<pre>``."""
    return f"<pre>{html.escape(text)}</pre>"


def clean_html(fragment) -> str:
    """An HTML fragment with only the allowed tags, attributes and URLs (others shown as
    text). Never raises: what cannot be cleaned is shown as text."""
    text = fix_text(
        fragment.decode("utf-8", "replace") if isinstance(fragment, bytes) else str(fragment)
    )
    if len(text) > MAX_FRAGMENT or _depth(text) > MAX_DEPTH:
        return as_text(text)
    try:
        return _cleaner().clean(text)
    except Exception:
        return as_text(text)


VOID = words("area base br col embed hr img input link meta param source track wbr")
LETTERS = frozenset(string.ascii_letters)
NAME = LETTERS | frozenset(string.digits + ":-")


def _depth(text: str) -> int:
    """How deep the elements of ``text`` nest (an over-estimate: unclosed tags count).

    A tag is ``<``, maybe ``/``, a letter, and everything up to the first ``>`` after it
    (what ``<(/?)([A-Za-z][A-Za-z0-9:-]*)[^>]*?(/?)>`` matches). Found in one pass: the
    first ``>`` after a ``<`` is looked up once for all the ``<`` before it, where that
    regular expression searched to the end of the text again from every ``<`` (quadratic:
    50,000 ``<a`` without a ``>`` took 73 s)."""
    depth = deepest = 0
    at, end = text.find("<"), -1
    while at >= 0:
        if end < at:
            end = text.find(">", at)
            if end < 0:
                break
        closing = text[at + 1 : at + 2] == "/"
        start = at + 1 + closing
        if start < end and text[start] in LETTERS:
            stop = start + 1
            while stop < end and text[stop] in NAME:
                stop += 1
            if text[start:stop].lower() not in VOID and text[end - 1] != "/":
                depth += -1 if closing else 1
                deepest = max(deepest, depth)
            at = text.find("<", end + 1)
        else:
            at = text.find("<", at + 1)
    return deepest


def markdown_too_deep(source: str) -> bool:
    if len(source) > MAX_FRAGMENT:
        return True
    for line in source.splitlines():
        stripped = line.lstrip(" \t>*+-0123456789.)")
        if len(line) - len(stripped) > MAX_MARKDOWN_INDENT:
            return True
    return False


# ---- SVG drawings -------------------------------------------------------------------------

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
XML_NS = "http://www.w3.org/XML/1998/namespace"
SVG_TAGS = words("""
svg g defs title desc path polygon polyline ellipse circle rect line text tspan textPath
marker linearGradient radialGradient stop clipPath mask pattern symbol use style image a
""")
ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)


def clean_svg(text) -> str | None:
    """An SVG drawing without scripts, handlers, foreign objects, animations or links out
    of it; None if it is not an SVG document."""
    if not isinstance(text, str) or "<!entity" in text.lower():
        return None
    try:
        root = ET.fromstring(fix_text(text))
    except (ET.ParseError, ValueError):
        return None
    if _local(root.tag) != "svg":
        return None
    stack = [root]
    while stack:
        element = stack.pop()
        for child in list(element):
            if not isinstance(child.tag, str) or _local(child.tag) not in SVG_TAGS:
                element.remove(child)
                continue
            if _local(child.tag) == "style" and not safe_css(child.text or ""):
                element.remove(child)
                continue
            stack.append(child)
        for name, value in list(element.attrib.items()):
            if not _safe_svg_attribute(_local(element.tag), name, value):
                del element.attrib[name]
    try:
        return ET.tostring(root, encoding="unicode")
    except (ValueError, RecursionError):
        return None


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _safe_svg_attribute(tag: str, name: str, value: str) -> bool:
    namespace = name[1:].split("}", 1)[0] if name.startswith("{") else ""
    local = _local(name).lower()
    if namespace not in ("", XLINK_NS, XML_NS) or local.startswith("on"):
        return False
    if local == "href":
        url = squeeze(value)
        return url.startswith("#") or (tag == "image" and bool(IMAGE_URL.match(url)))
    if local == "style":
        return safe_css(value)
    return "javascript:" not in squeeze(value).lower()


def safe_css(css: str) -> bool:
    text = squeeze(css).lower().replace("\\", "")
    if any(
        bad in text
        for bad in ("@import", "expression(", "javascript:", "behavior:", "-moz-binding")
    ):
        return False
    return all(url.startswith(("#", "'#", '"#')) for url in re.findall(r"url\(([^)]*)", text))


def squeeze(value: str) -> str:
    """A URL as a browser reads it: without spaces, tabs, newlines or control characters."""
    return re.sub(r"[\x00-\x20\x7f]+", "", html.unescape(str(value)))


# ---- text scans in one pass (feedback/pages.py) -------------------------------------------

HEX = frozenset("0123456789abcdef")


def strip_tags(text: str) -> str:
    """``text`` without what looks like tags: what ``re.sub(r"<[^>]+>", "", text)``
    removes, in one pass (that expression searched to the end again from every ``<``: a
    megabyte of ``<`` took 12 minutes)."""
    out, done = [], 0
    at = text.find("<")
    while at >= 0:
        end = text.find(">", at + 1)
        if end < 0:
            break
        if end > at + 1:
            out.append(text[done:at])
            done = end + 1
        at = text.find("<", end + 1 if end > at + 1 else at + 1)
    return "".join([*out, text[done:]])


def blank_paths_through(text: str, marker: str, blank: str, reach: int = 300) -> str:
    """``text`` with each path through ``marker`` into a hex-named folder replaced by
    ``blank``: what ``re.sub(rf"[^\\s'\"]{{0,{reach}}}{marker}[0-9a-f]+", blank, text)``
    does (``marker`` without special characters), in one pass where that expression
    took ``reach`` steps a character (3 s a megabyte)."""

    def in_path(c: str) -> bool:
        return not c.isspace() and c not in "'\""

    def hex_after(at: int) -> bool:
        return text[at + len(marker) : at + len(marker) + 1] in HEX

    out, done = [], 0
    at = text.find(marker)
    while at >= 0:
        if not hex_after(at):
            at = text.find(marker, at + 1)
            continue
        start = at  # where the path starts: back over at most ``reach`` of its characters
        while start > done and at - start < reach and in_path(text[start - 1]):
            start -= 1
        run = start  # how far it goes, and the last marker it reaches (re is greedy)
        while run < min(len(text), start + reach) and in_path(text[run]):
            run += 1
        last, found = at, text.find(marker, at + 1, run + len(marker))
        while found >= 0:
            last = found if hex_after(found) else last
            found = text.find(marker, found + 1, run + len(marker))
        end = last + len(marker)
        while end < len(text) and text[end] in HEX:
            end += 1
        out += [text[done:start], blank]
        done, at = end, text.find(marker, end)
    return "".join([*out, text[done:]])


def fix_text(text: str) -> str:
    """``text`` with anything UTF-8 cannot hold (lone surrogates) replaced."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
