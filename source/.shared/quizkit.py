"""The checkpoint quizzes' helpers: your variant of each question, the form check of an
answer, and the practice round. Only a quiz's folder has this file (beside coursekit.py,
whose checks and drawing it uses).
"""

from __future__ import annotations

import math

__all__ = ["Quiz", "answer_problem", "check_answer"]  # what a quiz notebook uses
__all__ += [  # what the grader reads too
    "FUNCTION_TOL",
    "NUMBER_TOL",
    "QUIZ_MIME",
    "STUDENT_ID_ENV",
    "Pick",
    "Practice",
    "Variant",
    "decode",
    "encode",
    "is_right",
    "load_questions",
    "quiz_id",
    "quiz_variant",
    "student_id",
]


def _coursekit():
    """coursekit.py beside this file (it finds its own siblings the same way)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).absolute().with_name("coursekit.py")
    found = sys.modules.get("coursekit")
    if found is not None and Path(getattr(found, "__file__", None) or "").absolute() == path:
        return found
    key = f"_coursekit_beside_{abs(hash(str(path)))}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


_kit = _coursekit()
CheckFailed = _kit.CheckFailed  # what a failed form check raises
WIDTH, expect, is_close, draw_graph = _kit.WIDTH, _kit.expect, _kit.is_close, _kit.draw_graph
_num, _error, _fit = _kit._num, _kit._error, _kit._fit


# ---- quiz answers: is an answer well-formed? (never whether it is right) ---------------

def _shown(value: object, width: int = 30) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _is_number(x: object) -> bool:
    from numbers import Real

    return isinstance(x, Real) and not isinstance(x, bool)


def _listed(options) -> str:
    quoted = [f'"{o}"' if isinstance(o, str) else str(o) for o in options]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def answer_problem(name: str, value: object, *, choices=None, kind=None, items=None,
                   calls=()) -> tuple[str | None, object]:
    """(problem, answer): why ``value`` is not a well-formed answer to question ``name``
    (None if it is), and the answer in its usual form (``" B"`` becomes ``"b"``).

    ``choices="abcd"``: one of these letters. ``kind=bool``: True or False. ``kind=float``:
    a number. ``kind=int, choices=range(1, 9)``: a whole number from the range.
    ``kind=list, items=[...]``: every item once, in some order. ``kind=callable``: a
    function that returns a number for each argument tuple in ``calls``.
    """
    if value is None and kind is callable:
        return f"{name} is not written yet: def {name}(...) in its answer cell.", None
    if value is None:
        return f"{name} is not answered yet: set it in its answer cell.", None
    got = f"; got {_shown(value)}."
    if isinstance(choices, str):
        letter = value.strip().lower() if isinstance(value, str) else None
        if letter is None or len(letter) != 1 or letter not in choices:
            return f"{name} must be {_listed(choices)} (a letter in quotes){got}", None
        return None, letter
    if kind is bool:
        if not isinstance(value, bool):
            return f"{name} must be True or False (no quotes){got}", None
        return None, value
    if kind is float:
        if not _is_number(value) or not math.isfinite(value):
            return f"{name} must be a number such as 1.5 (no quotes){got}", None
        return None, float(value)
    if kind is int:
        whole = _is_number(value) and math.isfinite(value) and float(value).is_integer()
        if not whole or (choices is not None and int(value) not in choices):
            span = f" from {min(choices)} to {max(choices)}" if choices is not None else ""
            return f"{name} must be a whole number{span}{got}", None
        return None, int(value)
    if kind is list:
        if not isinstance(value, (list, tuple)):
            example = ", ".join(f'"{i}"' for i in sorted(items)[:2])
            return f"{name} must be a list such as [{example}, ...]{got}", None
        labels = [v.strip() if isinstance(v, str) else v for v in value]
        for label in labels:
            if label not in items:
                return f"{name}: {_shown(label)} is not one of {', '.join(sorted(items))}.", None
            if labels.count(label) > 1:
                return f"{name} lists {_shown(label)} more than once.", None
        missing = [i for i in sorted(items) if i not in labels]
        if missing:
            return f"{name} leaves out {_shown(missing[0])}: list all {len(items)}.", None
        return None, labels
    if kind is callable:
        if not callable(value):
            return f"{name} must be a function (def {name}(...): ...){got}", None
        for args in calls:
            where = f"{name}({', '.join(map(_num, args))})"
            try:
                result = value(*args)
            except Exception as exc:
                return f"{where} raised {_error(exc, 86 - len(where))}", None
            if not _is_number(result) or not math.isfinite(result):
                return f"{where} must return a number; got {_shown(result)}.", None
        return None, value
    raise ValueError(f"answer_problem: no kind of answer given for {name}")


def check_answer(name: str, value: object, **spec) -> None:
    """Stop with one line if ``value`` is not a well-formed answer to question ``name``
    (see ``answer_problem`` for ``spec``); otherwise say so. It never tells whether the
    answer is right: that is graded after you submit."""
    problem, answer = answer_problem(name, value, **spec)
    expect(problem is None, problem)
    if callable(answer):
        print(f"✓ {name} runs and returns numbers; it is graded after you submit.")
    else:
        print(f"✓ {name} = {_shown(answer, 40)}: a valid answer (graded after you submit).")


# ---- checkpoint quizzes: a variant for every student, and a practice round ------------
#
# A quiz's questions are written once, in questions.py beside the quiz notebook: each is a
# function that draws one variant (its numbers, its wording, the order of its options)
# from a ``Pick``. Your variant is drawn from your student id and the quiz, so it is the
# same every time you open the notebook and differs from your classmates'. Practice
# variants come from the same functions with practice seeds and pools of their own (no
# practice variant shows the wording, options or numbers of a graded one); their answers are
# worked out by the course beforehand and kept in the notebook, so a practice answer is
# checked at once. Your graded variant gets only the form check: it is graded after you
# submit, against your id's variant.

QUIZ_MIME = "application/vnd.autograd-course.quiz+json"  # which id a notebook showed
STUDENT_ID_ENV = "COURSEKIT_STUDENT_ID"  # set while grading: the id a submission is graded under
TYPED = "typed in the first cell"
NUMBER_TOL = 1e-3  # a number answer counts within this of the exact value
FUNCTION_TOL = 1e-6  # a function answer: relative tolerance at every point
LETTERS = "abcdefgh"


class Pick:
    """The seeded choices behind one variant of one question. The same seed gives the
    same variant on any computer and any Python version (only ``random()`` is used)."""

    def __init__(self, seed: str, practice: bool = False):
        import hashlib
        import random

        digest = hashlib.sha256(seed.encode()).digest()
        self._rng = random.Random(int.from_bytes(digest[:8], "big"))
        self.practice = practice  # a practice variant: drawn from the practice pools

    def pool(self, graded, practice):
        """One of ``graded`` or, for a practice variant, one of ``practice``. What decides
        a question's answer (its wordings, option sets, statements, listings) is split in
        these two pools: no practice variant shows what a graded variant shows."""
        return self.one(practice if self.practice else graded)

    def one(self, options):
        """One of ``options``."""
        options = list(options)
        return options[min(int(self._rng.random() * len(options)), len(options) - 1)]

    def several(self, options, k: int) -> list:
        """``k`` different items of ``options``, in a random order."""
        return self.shuffled(options)[:k]

    def shuffled(self, items) -> list:
        """``items`` in a random order."""
        items = list(items)
        for i in range(len(items) - 1, 0, -1):
            j = min(int(self._rng.random() * (i + 1)), i)
            items[i], items[j] = items[j], items[i]
        return items


def _seed(assignment: str, who: str, question: str) -> str:
    return f"{assignment}\0{who}\0{question}"


def _graded(student: str) -> str:
    return f"graded\0{student}"


def _practice(n: int) -> str:
    return f"practice\0{n}"


def load_questions(assignment: str, folder=None):
    """questions.py of ``assignment``: beside the notebook (the current folder), beside
    this file, or in ``folder``."""
    import importlib.util
    from pathlib import Path

    places = [Path(folder)] if folder is not None else [Path.cwd(), Path(__file__).parent]
    for place in places:
        path = place / "questions.py"
        if path.is_file():
            name = f"_quiz_questions_{assignment}_{abs(hash(str(path.resolve())))}"
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if getattr(module, "ASSIGNMENT", None) == assignment:
                return module
    raise FileNotFoundError(
        f"questions.py of {assignment} is not beside this notebook: open the quiz from its "
        "own folder"
    )


class Variant:
    """One variant of one question: what it shows, the form its answer takes, and its
    numbers (``v.values``, or ``v.a`` for ``v.values["a"]``)."""

    def __init__(self, question: str, drawn: dict, seed: str):
        self.question = question
        self.seed = seed
        self.kind = drawn["kind"]
        self.text = drawn["text"]
        self.code = drawn.get("code", "")
        self.figure = drawn.get("figure")
        self.stem = drawn.get("stem", "")
        self.options = list(drawn.get("options", ()))  # [(id, text)], in the order shown
        self.listing = list(drawn.get("listing", ()))
        self.template = drawn.get("template", "")
        self.items = list(drawn.get("items", ()))
        self.asks = drawn.get("asks", "")
        self.calls = [tuple(c) for c in drawn.get("calls", ())]
        self.name = drawn.get("name", question)  # the answer's name in the notebook
        self.values = dict(drawn.get("values", {}))

    def __getattr__(self, name: str):
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError(f"this variant of {self.question} has no number {name!r}")

    def spec(self) -> dict:
        """The form of a well-formed answer (the keywords of ``answer_problem``)."""
        if self.kind == "choice":
            return {"choices": LETTERS[: len(self.options)]}
        if self.kind == "truth":
            return {"kind": bool}
        if self.kind == "number":
            return {"kind": float}
        if self.kind == "line":
            return {"kind": int, "choices": range(1, len(self.listing) + 1)}
        if self.kind == "order":
            return {"kind": list, "items": sorted(self.items)}
        if self.kind == "function":
            return {"kind": callable, "calls": self.calls}
        raise ValueError(f"{self.question}: no such kind of question: {self.kind!r}")

    def letter(self, option: str) -> str:
        """The letter of the option with this id, as this variant orders them."""
        ids = [i for i, _ in self.options]
        return LETTERS[ids.index(option)]

    def letter_of(self, words: str) -> str:
        """The letter of the one option whose text contains ``words``."""
        found = [LETTERS[i] for i, (_, text) in enumerate(self.options) if words in text]
        if len(found) != 1:
            raise ValueError(f"{len(found)} options of {self.question} contain {words!r}")
        return found[0]

    def line_of(self, words: str) -> int:
        """The number of the one line of the listing that contains ``words``."""
        found = [i + 1 for i, line in enumerate(self.listing) if words in line]
        if len(found) != 1:
            raise ValueError(f"{len(found)} lines of {self.question} contain {words!r}")
        return found[0]

    def markdown(self) -> str:
        """The question as the notebook shows it."""
        parts = [self.text]
        if self.code:
            parts.append("```python\n" + self.code.strip("\n") + "\n```")
        if self.listing:
            width = len(str(len(self.listing)))
            numbered = [f"{i + 1:>{width}}  {line}".rstrip() for i, line in
                        enumerate(self.listing)]
            parts.append("```\n" + "\n".join(numbered) + "\n```")
        if self.options:
            parts.append("\n".join(f"- **{LETTERS[i]}**: {text}"
                                   for i, (_, text) in enumerate(self.options)))
        return "\n\n".join(parts)

    def draw(self):
        """The figure of the question, if it has one: its graph, drawn."""
        if not self.figure:
            return None
        return draw_graph(_sketch(self.figure["code"], self.figure["root"]))


def quiz_id(who: object) -> str:
    """A student id as a variant is drawn from it: Unicode compatibility forms, case and
    spacing do not count (``" Bob "``, ``"bob"`` and ``"BOB"`` are one id; the grader's
    roster compares ids the same way, ``roster.fold``)."""
    import unicodedata

    return " ".join(unicodedata.normalize("NFKC", str(who)).casefold().split())


def _numbers_half(values: dict) -> bool:
    """The half of a question's numbers ``values`` belongs to: False for graded variants,
    True for practice ones (a hash of the numbers), so that no practice variant has the
    numbers of any student's graded variant."""
    import hashlib
    import json

    text = json.dumps(values, sort_keys=True)
    return bool(hashlib.sha256(text.encode()).digest()[0] & 1)


def quiz_variant(assignment: str, who, question: str, questions=None) -> Variant:
    """The variant of ``question`` for the student id ``who`` (graded; see ``quiz_id``)
    or, with ``who=("practice", n)``, practice variant ``n``. Graded and practice variants
    are drawn from apart: wordings, option sets, statements and listings from the two
    pools of ``Pick.pool``, numbers from the two halves of ``_numbers_half`` (or, for a
    question with ``numbers_in_pools``, from its pools too)."""
    questions = questions or load_questions(assignment)
    draw = questions.QUESTIONS[question]
    base = getattr(draw, "same_numbers_as", question)  # a question that reuses another's
    halves = not getattr(draw, "numbers_in_pools", False)  # else pick.pool splits them
    practice = isinstance(who, tuple)
    seed = _seed(assignment, _practice(who[1]) if practice else _graded(quiz_id(who)), base)
    pick = Pick(seed, practice=practice)
    for _ in range(200):  # numbers of the other half: draw again (a half in 2**200 fails)
        drawn = draw(pick)
        if not (halves and drawn.get("values")) or _numbers_half(drawn["values"]) == practice:
            return Variant(question, drawn, seed)
    raise ValueError(f"{question}: no {'practice' if practice else 'graded'} numbers drawn")


# ---- drawings of a question's code ------------------------------------------------------


class _Sketch:
    """A box of a drawing: data, parents and op, computed as the question's code says.
    It builds graphs and nothing else (every box shows grad 0)."""

    def __init__(self, data, _parents=(), _op="", label=""):
        self.data = float(data)
        self.grad = 0.0
        self._prev = tuple(dict.fromkeys(_parents))  # c * c: one arrow from c
        self._op = _op
        self.label = label


def _sketch_method(symbol: str, fn, reflected: bool = False):
    def method(self, other):
        other = other if isinstance(other, _Sketch) else _Sketch(other)
        left, right = (other, self) if reflected else (self, other)
        return _Sketch(fn(left.data, right.data), (left, right), symbol)

    return method


def _install_sketch_operators() -> None:
    import operator

    table = {"+": ("add", operator.add), "*": ("mul", operator.mul),
             "-": ("sub", operator.sub), "/": ("truediv", operator.truediv)}
    for symbol, (name, fn) in table.items():
        setattr(_Sketch, f"__{name}__", _sketch_method(symbol, fn))
        setattr(_Sketch, f"__r{name}__", _sketch_method(symbol, fn, reflected=True))


_install_sketch_operators()


def _sketch(code: str, root: str) -> _Sketch:
    """Run ``code`` with ``Value`` drawing boxes; every box a name holds gets that name as
    its label, unless the code gave it one."""
    namespace = {"Value": _Sketch}
    exec(compile(code, "<question>", "exec"), namespace)
    for name, value in namespace.items():
        if isinstance(value, _Sketch) and not value.label:
            value.label = name
    return namespace[root]


# ---- whose variant: the student id ------------------------------------------------------


def _exchange_user():
    """The user name nbgrader's exchange would file a submission under, when this computer
    has nbgrader's exchange (its root, from nbgrader_config.py, exists); else None."""
    import os

    try:
        from jupyter_core.paths import jupyter_config_path
        from traitlets.config.loader import PyFileConfigLoader
    except ImportError:
        return None
    root = "/srv/nbgrader/exchange"  # nbgrader's default
    for folder in [*reversed(jupyter_config_path()), os.getcwd()]:
        if os.path.isfile(os.path.join(folder, "nbgrader_config.py")):
            try:
                config = PyFileConfigLoader("nbgrader_config.py", path=folder).load_config()
                root = str(config.Exchange.get("root", root))
            except Exception:
                continue
    if not os.path.isdir(root):
        return None
    try:
        from nbgrader.utils import get_username
        return get_username()
    except Exception:
        import getpass
        return getpass.getuser()


def student_id(typed: str = "") -> tuple[str, str]:
    """(id, where it came from): set by the grader, JupyterHub's user, nbgrader's exchange
    user, or what you typed in the quiz's first cell ("" if none of them)."""
    import os

    typed = typed.strip() if isinstance(typed, str) else ""
    if os.environ.get(STUDENT_ID_ENV):
        return os.environ[STUDENT_ID_ENV], "set by the grader"
    if os.environ.get("JUPYTERHUB_USER"):
        return os.environ["JUPYTERHUB_USER"], "your JupyterHub user"
    exchange = _exchange_user()
    if exchange:
        return exchange, "your user name on nbgrader's exchange"
    return typed, TYPED if typed else ""


class Quiz:
    """A checkpoint quiz as you see it: your variant of each question (``show``), the
    form check of your answers (``check``) and the practice round (``practice``)."""

    def __init__(self, assignment: str, typed_id: str = ""):
        self.assignment = assignment
        self.questions = load_questions(assignment)
        given, found = student_id(typed_id)
        self.student = quiz_id(given)  # the id the variants are drawn from
        self._practised: dict[str, int] = {}
        if not self.student:
            print('✗ No student id yet: type yours in the first cell, such as my_id = "ada",')
            print("  run that cell, then this one. Until then no question can be shown.")
            return
        lines = [f"Your variant of this quiz: questions shown for id {self.student!r}.",
                 f"Where that id comes from: {found}."]
        if given != self.student:
            lines[-1] = (f"Where that id comes from: {found}, as {given!r} (case and spaces in "
                         "an id do not count).")
        typed = quiz_id(typed_id) if isinstance(typed_id, str) else ""
        if found != TYPED and typed not in ("", self.student):
            lines.append(f"{typed_id.strip()!r}, typed in the first cell, is not used.")
        lines.append("Your classmates' numbers differ.")
        _display({"text/plain": "\n".join(_fit(line, WIDTH, most=4) for line in lines),
                  QUIZ_MIME: {"assignment": assignment, "id": self.student}})

    def variant(self, question: str) -> Variant:
        """Your variant of ``question``."""
        expect(self.student, 'no student id yet: type yours in the first cell (my_id = "...").')
        return quiz_variant(self.assignment, self.student, question, self.questions)

    def show(self, question: str) -> None:
        """Show your variant of ``question``."""
        if not self.student:
            print('(type your id in the first cell, my_id = "...", to see this question)')
            return
        _show(self.variant(question))

    def check(self, question: str, answer: object) -> None:
        """The form check of your answer to ``question`` (never whether it is right)."""
        variant = self.variant(question)
        check_answer(variant.name, answer, **variant.spec())

    def practice(self, question: str, n: int | None = None) -> Practice:
        """A practice variant of ``question`` (the next one, or number ``n``): other
        numbers than yours, and its answer is checked at once, with the worked answer."""
        bank = _practice_bank(self.assignment).get(question)
        expect(bank, f"no practice round for {question} here: is this the quiz's own notebook?")
        if n is None:
            n = self._practised.get(question, 0) % len(bank)
            self._practised[question] = n + 1
        expect(isinstance(n, int) and 0 <= n < len(bank),
               f"practice variants of {question} are numbered 0 to {len(bank) - 1}.")
        variant = quiz_variant(self.assignment, ("practice", n), question, self.questions)
        print(f"Practice variant {n} of {question} (not graded; your own variant is above):")
        _show(variant)
        return Practice(variant, bank[n])


class Practice:
    """A practice variant: ``answer(value)`` checks an answer at once and explains."""

    def __init__(self, variant: Variant, entry: dict):
        self.variant = variant
        self._entry = entry
        self.right = None  # not answered yet

    def __repr__(self) -> str:
        return f"<practice variant of {self.variant.question}: call .answer(...)>"

    def answer(self, value: object) -> None:
        """Check ``value`` against this practice variant: say whether it is right, and
        show the worked answer (``.right`` keeps the verdict)."""
        variant = self.variant
        self.right = False
        if value is None:  # the cell as handed out: here the answer goes in the call
            print(f"✗ {variant.name} is not answered yet: put your answer in .answer(...)")
            return
        problem, value = answer_problem(variant.name, value, **variant.spec())
        if problem is not None:
            print(f"✗ {problem}")
            return
        self.right = is_right(variant, value, decode(self._entry["key"]))
        print("✓ Right." if self.right else "✗ Not right.")
        for line in _fit(f"Why: {decode(self._entry['why'])}", WIDTH, most=12).splitlines():
            print(line)


def is_right(variant: Variant, answer: object, key) -> bool:
    """Whether a well-formed ``answer`` is right, given the key the course worked out."""
    if variant.kind == "number":
        return abs(answer - key) <= NUMBER_TOL
    if variant.kind == "order":
        done: set = set()
        for label in answer:
            if set(key.get(label, ())) - done:
                return False
            done.add(label)
        return True
    if variant.kind == "function":
        for args, expected in key:
            try:
                got = answer(*args)
            except Exception:
                return False
            if not is_close(got, expected, FUNCTION_TOL):
                return False
        return True
    return answer == key


def _show(variant: Variant) -> None:
    _display({"text/markdown": variant.markdown(), "text/plain": variant.markdown()})
    figure = variant.draw()
    if figure is not None:
        from IPython.display import display

        display(figure)


def _display(bundle: dict) -> None:
    try:
        from IPython.display import display
    except ImportError:
        print(bundle.get("text/plain", ""))
        return
    display(bundle, raw=True)


# ---- the practice round's answers, kept in the quiz notebook's metadata ----------------

PRACTICE_KEY = "practice"  # metadata.course.practice: {"assignment": ..., "questions": ...}


def encode(value) -> str:
    """A value as the practice round keeps it: not plain text, so that nobody reads the
    practice answers by accident (a study aid, not a secret: they are no graded key)."""
    import base64
    import json
    import zlib

    return base64.b64encode(zlib.compress(json.dumps(value).encode())).decode()


def decode(text: str):
    """A value kept by ``encode``."""
    import base64
    import json
    import zlib

    return json.loads(zlib.decompress(base64.b64decode(text)))


def _practice_bank(assignment: str) -> dict:
    """{question: [entry, ...]} from the quiz notebook beside this kernel (or this file)."""
    import json
    from pathlib import Path

    for place in (Path.cwd(), Path(__file__).parent):
        for path in sorted(place.glob("*.ipynb")):
            try:
                meta = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
            except (OSError, ValueError):
                continue
            bank = meta.get("course", {}).get(PRACTICE_KEY, {})
            if bank.get("assignment") == assignment:
                return bank.get("questions", {})
    return {}
