"""The probe's runtime, inside the kernel: loading, the guard, running a request in a
forked copy, plain values and graphs of Values.

See ``autograder/verdicts/probe/__init__.py`` for what the probe is and why it holds no
secret a student could use.

The kernel is the student's process, so nothing the probe says is believed for what it
claims: the grader validates every answer (``autograder/verdicts/answers.py``) and compares
it with its own reference. What the probe does guard is its own word. It is loaded once,
before any student cell runs (``install``): it binds every module, builtin and function it
uses, so that a student cell that later replaces ``json.dumps``, ``builtins.len`` or the
display publisher changes nothing the probe does; it draws a key that never appears in any
cell and sends it to the grader once; and it installs an audit hook (``guard``), which
CPython never removes, before any student code exists:

- the hook is the probe's only entry (``sys.audit(ENTRY, request)``): no function, table
  or key of the probe is reachable from the kernel's modules or namespace; the key lives in
  the hook's closure and in the frames of a request being served;
- it refuses, and records with the cell and line that asked, every way CPython offers to
  reach those frames or the probe's code from Python: frames (``sys._getframe``,
  tracebacks' and generators' frames) whose callers include the probe, other threads'
  frames, the garbage collector's lists, trace and profile functions, a second audit
  hook, ctypes, ``/proc/*/mem``, shared memory, the code objects of the probe and of the
  course code given to a request; a signal handler (the one way to a frame that CPython
  does not audit) can no longer be installed (``no_signal_handlers``: a seccomp filter);
- each answer is signed with the key (HMAC-SHA256 over the request's nonce, the digest of
  the request as the probe received it, and the answer's bytes) and carries what the guard
  recorded, so that an answer written by anything but the probe, an answer to another
  request, or an answer of a kernel whose code reached for the probe scores nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
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
ENTRY = "autograder.probe"  # the audit event that runs a request (kernel_request)
PROBE_FILE = "<autograder probe>"  # the probe's code (kernel_load compiles it so)
COURSE_FILE = "<course code>"  # course code given to a request (attach)
MAX_NOTES = 20  # what the guard records, at most

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


SIGN = _hmac()
SHA256 = hashlib.sha256
ENCODE, DECODE = _codec()
PUBLISH = USER_NS = SHELL = None  # the display publisher's publish, the namespace, the shell
GETFRAME = sys._getframe
# Identity without an audit event (id() raises one, and each event costs the guard a call).
IDENT = object.__hash__


def signed(key: bytes, nonce: str, request_text: str, text: str) -> str:
    """The tag of an answer (answers.sign computes the same in the grader)."""
    digest = SHA256(request_text.encode()).hexdigest()
    return SIGN(key, f"{nonce}:{digest}:".encode() + text.encode()).hex()


def unseal(key: bytes, nonce: str, sealed: str) -> str:
    """Course code the grader sealed for this request (answers.seal): hex of the text
    XORed with HMAC-SHA256(key, nonce:seal:block) blocks, so that it never crosses the
    kernel in the clear."""
    data = bytes.fromhex(sealed)
    pad = b"".join(SIGN(key, f"{nonce}:seal:{i}".encode()) for i in range(0, len(data), 32))
    mixed = int.from_bytes(data, "big") ^ int.from_bytes(pad[: len(data)], "big")
    return mixed.to_bytes(len(data), "big").decode()


def _frozen(module: types.ModuleType) -> types.SimpleNamespace:
    """A copy of a module's attributes as they are now."""
    return types.SimpleNamespace(
        **{name: getattr(module, name) for name in dir(module) if not name.startswith("__")}
    )


def install() -> None:
    """Run once by the load cell, before any student cell (which execs the probe with a
    private copy of the builtins): bind the modules the probe uses (``sys`` stays itself:
    the probe sets ``sys.stdout`` in its copies) and the kernel's namespace, take ctypes'
    raw memory functions away, forbid new signal handlers, install the guard and send the
    grader the key."""
    from IPython import get_ipython

    global PUBLISH, USER_NS, SHELL
    scope = globals()
    for name, obj in list(scope.items()):
        if isinstance(obj, types.ModuleType) and obj is not sys:
            scope[name] = _frozen(obj)
    SHELL = get_ipython()
    PUBLISH, USER_NS = SHELL.display_pub.publish, SHELL.user_ns
    course_walks()  # noqa: F821 (engine.py's, in the same namespace once loaded)
    key = os.urandom(32)
    no_raw_memory()  # noqa: F821 (guard.py's: one namespace once loaded in a kernel)
    if no_signal_handlers():  # noqa: F821
        keep_sigint()  # noqa: F821
    sys.addaudithook(guard(key, probe_codes(scope)))  # noqa: F821
    PUBLISH(data={MIME: {"key": key.hex()}}, metadata={})


NOTES: list[str] = []  # what the guard recorded (guard.py)
PRIVILEGED: set[int] = set()  # threads in the probe's own use of a guarded call


@contextlib.contextmanager
def privileged():
    """The probe's own use of a call the guard refuses to students (its graph-walk traps,
    its recursion depth), with no collection meanwhile, so that no finalizer of a
    student's object runs inside it."""
    import _thread
    import gc

    me, was = _thread.get_ident(), gc.isenabled()
    gc.disable()
    PRIVILEGED.add(me)
    try:
        yield
    finally:
        PRIVILEGED.discard(me)
        if was:
            gc.enable()


# ---- running a request -------------------------------------------------------------------


def serve(key: bytes, notes: list, request_json) -> None:
    """Run a request against the kernel's namespace and publish the signed answer."""
    if not isinstance(request_json, str):
        return
    request = DECODE(request_json)
    answer = run_isolated(USER_NS, request, key, request_json, notes)
    PUBLISH(data={MIME: answer}, metadata={})


def run_isolated(
    ns: dict,
    request: dict,
    key: bytes,
    request_json: str,
    notes: list | None = None,
) -> dict:
    """``run(ns, request)`` in a forked copy of this process, within ``request["timeout"]``
    seconds. Returns {"answer": JSON text, "tag": its signature} from the copy, or
    {"timeout": s} / {"crashed": "..."} (which score nothing, so they need no signature).
    The answer carries what the guard recorded (``notes``) in this process and the copy."""
    timeout = float(request.get("timeout", 30))
    nonce = str(request.get("nonce", ""))
    notes = [] if notes is None else notes
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
            answer = _run_guarded(ns, request, key)
            if notes:
                answer = {"tampered": list(notes[:MAX_NOTES])}
            text = _encode_answer(answer)
            data = (signed(key, nonce, request_json, text) + text).encode()
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
    if len(data) > 64:
        try:
            return {"answer": data[64:].decode("ascii"), "tag": data[:64].decode("ascii")}
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
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def _run_guarded(ns: dict, request: dict, key: bytes) -> dict:
    try:
        for given in request.get("given", []):
            source = unseal(key, str(request.get("nonce", "")), given["source"])
            attach(ns, {**given, "source": source})
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
    exec(compile(given["source"], COURSE_FILE, "exec", optimize=2), scope)  # no docstrings
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
        elif IDENT(node) not in seen:
            seen.add(IDENT(node))
            stack.append((node, True))
            for parent in getattr(node, "_prev", ()) or ():
                if IDENT(parent) not in seen:
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
