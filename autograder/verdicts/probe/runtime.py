"""The probe's runtime, inside the kernel: loading, running a request in a forked copy,
plain values and graphs of Values.

See ``autograder/verdicts/probe/__init__.py`` for what the probe is and why it holds no secret.

The kernel is the student's process, so nothing the probe says is believed for what it
claims: the grader validates every answer (``autograder/verdicts/answers.py``) and compares it with
its own reference. What the probe does guard is its own word. It is loaded once, before
any student cell runs (``install``): it then binds every module, builtin and function it
uses, so that a student cell that later replaces ``json.dumps``, ``builtins.len`` or the
display publisher changes nothing the probe does; and it draws a key that never appears
in any cell, which it sends to the grader once. Each answer is signed with that key
(HMAC-SHA256 over the request's nonce and the answer's bytes) in the forked copy, so an
answer written by anything but the probe, or an old answer replayed, is recognised.
"""

from __future__ import annotations

import contextlib
import json
import numbers
import operator
import os
import resource
import select
import signal
import sys
import time
import types
import warnings

MIME = "application/vnd.autograder.probe+json"
MAX_ANSWER = 64 * 1024**2  # bytes of answer read back from the forked copy
ENTRY = "autograder_probe"  # sys.modules[ENTRY].serve(request) runs a request

BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
OPERATIONS: dict = {}  # name -> operation(ns, **args), filled by engine.py and nn.py


# ---- loading: everything bound once, before any student cell ---------------------------


def _hmac():
    """HMAC-SHA256 from OpenSSL's C function, so no Python code a student can patch."""
    try:
        from _hashlib import hmac_digest

        return lambda key, message: hmac_digest(key, message, "sha256")
    except ImportError:  # a Python without OpenSSL's HMAC: the library's, bound now
        import hmac

        digest = hmac.digest
        return lambda key, message: digest(key, message, "sha256")


def _codec():
    """(encode, decode) of JSON by the C encoder and scanner, built now: later changes to
    the ``json`` module (a student's ``json.dumps = ...``) do not reach them."""
    from json import decoder, encoder, scanner

    make_encoder, make_scanner = encoder.c_make_encoder, scanner.c_make_scanner
    if make_encoder is None or make_scanner is None:  # no C accelerator: bind the library
        dumps, loads = json.dumps, json.loads
        return (lambda obj: dumps(obj, allow_nan=True)), loads

    def refuse(obj):
        raise TypeError(f"{type(obj).__name__} is not a plain value")

    encode_chunks = make_encoder(
        None, refuse, encoder.c_encode_basestring_ascii, None, ":", ",", False, False, True
    )
    scan = make_scanner(decoder.JSONDecoder())

    def encode(obj) -> str:
        return "".join(encode_chunks(obj, 0))

    def decode(text: str):
        return scan(text, 0)[0]

    return encode, decode


KEY = os.urandom(32)  # drawn when the probe is loaded; never in any cell's text
SIGN = _hmac()
ENCODE, DECODE = _codec()
PUBLISH = USER_NS = None  # the display publisher's publish, the kernel's namespace


def _frozen(module: types.ModuleType) -> types.SimpleNamespace:
    """A copy of a module's attributes as they are now."""
    return types.SimpleNamespace(
        **{name: getattr(module, name) for name in dir(module) if not name.startswith("__")}
    )


def install() -> None:
    """Run once by the load cell, before any student cell (which execs the probe with a
    private copy of the builtins): bind the modules the probe uses (``sys`` stays itself:
    the probe sets ``sys.stdout`` in its copies) and the kernel's namespace, register
    ``serve`` as ``sys.modules[ENTRY].serve``, and send the grader the key."""
    from IPython import get_ipython

    global PUBLISH, USER_NS
    scope = globals()
    for name, obj in list(scope.items()):
        if isinstance(obj, types.ModuleType) and obj is not sys:
            scope[name] = _frozen(obj)
    shell = get_ipython()
    PUBLISH, USER_NS = shell.display_pub.publish, shell.user_ns
    course_walks()  # noqa: F821 (engine.py's, in the same namespace once loaded)
    entry = types.ModuleType(ENTRY)
    entry.serve = serve
    sys.modules[ENTRY] = entry
    PUBLISH(data={MIME: {"key": KEY.hex()}}, metadata={})


# ---- running a request -------------------------------------------------------------------


def serve(request_json: str) -> None:
    """Run a request against the kernel's namespace and publish the signed answer."""
    PUBLISH(data={MIME: run_isolated(USER_NS, DECODE(request_json))}, metadata={})


def run_isolated(ns: dict, request: dict) -> dict:
    """``run(ns, request)`` in a forked copy of this process, within ``request["timeout"]``
    seconds. Returns {"answer": JSON text, "tag": its signature} from the copy, or
    {"timeout": s} / {"crashed": "..."} (which score nothing, so they need no signature)."""
    timeout = float(request.get("timeout", 30))
    nonce = str(request.get("nonce", "")).encode()
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns about forking with threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the copy: answer, then vanish without running any cleanup
        status = 0
        try:
            os.close(read_end)
            os.setpgid(0, 0)
            _quiet()
            text = _encode_answer(_run_guarded(ns, request)).encode()
            data = SIGN(KEY, nonce + text) + text
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view) :]
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    chunks, size, started = [], 0, time.monotonic()
    answer: dict | None = None
    try:
        while True:
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                answer = {"timeout": timeout}
                break
            ready, _, _ = select.select([read_end], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > MAX_ANSWER:
                answer = {"crashed": f"the answer grew past {MAX_ANSWER // 1024**2} MB"}
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        for kill in (os.killpg, os.kill):  # the copy, and anything it started
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if answer is not None:
        return answer
    data = b"".join(chunks)
    if len(data) > 32:
        try:
            return {"answer": data[32:].decode("ascii"), "tag": data[:32].hex()}
        except UnicodeDecodeError:
            pass
    if os.WIFSIGNALED(status):
        return {"crashed": f"killed by {signal.Signals(os.WTERMSIG(status)).name}"}
    return {"crashed": "it ended without an answer"}


def _quiet() -> None:
    """In the copy: output goes nowhere, and no file can be written."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def _run_guarded(ns: dict, request: dict) -> dict:
    try:
        for given in request.get("given", []):
            attach(ns, given)
        return {"result": OPERATIONS[request["op"]](ns, **request.get("args", {}))}
    except BaseException as exc:
        return {"error": error_text(exc)}


def _encode_answer(answer: dict) -> str:
    try:
        return ENCODE(answer)
    except (TypeError, ValueError, RecursionError) as exc:
        return ENCODE({"error": f"the answer could not be encoded: {error_text(exc)}"})


def attach(ns: dict, given: dict) -> None:
    """Put the course's version of an earlier exercise in place: ``given["target"]`` is a
    name in the notebook ("topological_order") or a class attribute ("Value.__add__");
    ``given["source"]`` defines ``given["name"]``, with the notebook's names visible.
    Several names, comma-separated in both ("Value,MLP"), come from one run of the
    source (so that the course's MLP is made of the course's Value)."""
    scope = dict(ns)
    exec(compile(given["source"], "<course code>", "exec"), scope)
    for target, name in zip(given["target"].split(","), given["name"].split(",")):
        obj = scope[name]
        if "." in target:
            owner, attr = target.split(".", 1)
            if owner in ns:
                setattr(ns[owner], attr, obj)
        else:
            ns[target] = obj


# ---- plain values ------------------------------------------------------------------------


def plain(x, depth: int = 0):
    """``x`` as JSON: numbers as floats (ints and bools kept), lists and strings (cut
    short), and anything else as {"repr", "type"}."""
    if x is None or isinstance(x, bool):
        return x
    if isinstance(x, numbers.Integral):
        return int(x) if abs(int(x)) < 2**53 else float(x)
    if isinstance(x, numbers.Real):
        return float(x)
    if isinstance(x, str):
        return x[:400]
    if isinstance(x, (list, tuple)) and depth < 4 and len(x) <= 100_000:
        return [plain(v, depth + 1) for v in x]
    return {"repr": short_repr(x), "type": type(x).__name__}


def short_repr(x, width: int = 60) -> str:
    try:
        text = repr(x)
    except BaseException:
        text = f"<{type(x).__name__}>"
    return text if len(text) <= width else text[: width - 3] + "..."


def error_text(exc: BaseException, width: int = 160) -> str:
    """``TypeError: message``, cut to ``width`` characters."""
    try:
        message = str(exc)
    except BaseException:
        message = ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def data_of(node):
    return plain(getattr(node, "data", node))


def grad_of(node):
    return plain(getattr(node, "grad", None))


def lookup(ns: dict, name: str):
    """The notebook's ``name``, or a NameError that says which name is missing."""
    if name not in ns:
        raise NameError(f"{name} is not defined (did its cell run?)")
    return ns[name]


# ---- graphs of Values --------------------------------------------------------------------


def graph_nodes(root) -> list:
    """Every node ``root`` depends on through ``_prev``, each after its parents. (The same
    walk as coursekit's: the probe must not rely on a module the student can change.)"""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, parents_done = stack.pop()
        if parents_done:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            for parent in getattr(node, "_prev", ()) or ():
                if id(parent) not in seen:
                    stack.append((parent, False))
    return order


def run_closures(root, seed: float = 1.0) -> None:
    """Lesson 1's backpropagation: root.grad = seed, then each node's ``_backward()``,
    outputs first (for engines that have no backward() yet)."""
    root.grad = seed
    for node in reversed(graph_nodes(root)):
        fn = getattr(node, "_backward", None)
        if callable(fn):
            fn()


def apply_step(op: str, args: list, nodes: list):
    """One step of a program: ``op`` on ``args``, where an int is an earlier node (except
    the exponent of ``**``) and a float is a plain number."""
    operands = [
        nodes[a] if isinstance(a, int) and not (op == "**" and i == 1) else a
        for i, a in enumerate(args)
    ]
    if op in BINARY:
        return BINARY[op](*operands)
    if op == "**":
        return operands[0] ** operands[1]
    if op == "neg":
        return -operands[0]
    return getattr(operands[0], op)()


class StepFailed(Exception):
    def __init__(self, step: int, error: BaseException):
        super().__init__(error_text(error))
        self.step, self.error = step, error


def build(Value, program: dict, leaves: list | None = None) -> tuple[list, list]:
    """(leaf nodes, all nodes) of ``program`` ({"leaves": [...], "steps": [[op, args]]})
    built with ``Value``; the leaves may be given (to build the program again on them)."""
    xs = leaves if leaves is not None else [Value(v) for v in program["leaves"]]
    nodes = list(xs)
    for i, (op, args) in enumerate(program["steps"]):
        try:
            nodes.append(apply_step(op, args, nodes))
        except Exception as exc:
            raise StepFailed(i, exc) from None
    return xs, nodes


def failure(stage: str, exc: BaseException, step: int | None = None) -> dict:
    return {
        "failed": stage,
        "step": step,
        "error": error_text(exc),
        "type": type(exc).__name__,
        "message": error_text(exc, 400).partition(": ")[2],
    }
