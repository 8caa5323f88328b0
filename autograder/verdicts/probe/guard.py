"""The probe's guard, inside the kernel (see runtime.py's docstring): the audit hook that
is the probe's only entry and refuses, and records, what would reach the probe; ctypes'
raw memory functions taken away; no new signal handlers (seccomp)."""

from __future__ import annotations

import contextlib
import signal
import sys
import types

from .runtime import (
    COURSE_FILE,
    ENTRY,
    GETFRAME,
    IDENT,
    MAX_NOTES,
    NOTES,
    PRIVILEGED,
    PROBE_FILE,
    SHELL,
    serve,
)


def probe_codes(scope: dict) -> frozenset[int]:
    """The ids of every code object of the probe (functions, methods, nested code)."""
    found: set[int] = set()
    todo = []
    for obj in scope.values():
        if isinstance(obj, types.FunctionType) and obj.__code__.co_filename == PROBE_FILE:
            todo.append(obj.__code__)
        elif isinstance(obj, type):
            for attr in vars(obj).values():
                fn = getattr(attr, "__func__", attr)
                if isinstance(fn, types.FunctionType):
                    todo.append(fn.__code__)
    while todo:
        code = todo.pop()
        if IDENT(code) not in found:
            found.add(IDENT(code))
            todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return frozenset(found)


def no_raw_memory() -> None:
    """ctypes is loaded in every kernel (by ipykernel); its functions that read or write
    memory at an address without an audit event are taken away, and importing it anew is
    refused by the guard."""
    for name in ("ctypes", "_ctypes"):
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr in (
            "memmove",
            "memset",
            "cast",
            "_cast",
            "string_at",
            "wstring_at",
            "_string_at",
            "_wstring_at",
            "_memmove_addr",
            "_memset_addr",
            "_cast_addr",
            "_string_at_addr",
            "_wstring_at_addr",
            "pythonapi",
        ):
            with contextlib.suppress(AttributeError):
                delattr(module, attr)


def keep_sigint() -> None:
    """SIGINT stays settable (ipykernel sets it around each request): to the handlers it
    may have and no other, through every reference to ``signal.signal`` the kernel's
    modules hold; a new ``_signal`` module (with a signal function of its own) is refused."""
    import _imp
    import _signal

    original, create = _signal.signal, _imp.create_builtin
    allowed = {signal.SIG_DFL, signal.SIG_IGN, signal.default_int_handler}
    allowed.add(signal.getsignal(signal.SIGINT))

    def guarded_signal(signum, handler):
        if signum == signal.SIGINT and handler not in allowed:
            if len(NOTES) < MAX_NOTES:
                NOTES.append("a signal handler (signal.signal): refused")
            raise OSError("signal handlers cannot be set while grading")
        return original(signum, handler)

    def guarded_create(spec):
        if getattr(spec, "name", None) in ("_signal", "signal"):
            raise ImportError("the signal module cannot be loaded again while grading")
        return create(spec)

    for module in list(sys.modules.values()):
        for name, value in list(getattr(module, "__dict__", {}).items()):
            if value is original:
                with contextlib.suppress(Exception):
                    setattr(module, name, guarded_signal)
    _imp.create_builtin = guarded_create


# seccomp: rt_sigaction with a new action fails with EPERM (a query still works), on the
# two architectures grading machines have; any other ABI's calls fail (x32, i386).
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 13), "aarch64": (0xC00000B7, 134)}


def no_signal_handlers() -> bool:
    """Forbid, for good, new signal handlers in this process and its children (Linux): a
    Python signal handler is called with the frame that runs, and no audit event says so.
    The kernel's own handlers, set at its start, stay. False where it cannot be done."""
    import ctypes
    import platform
    import struct

    arch = _SECCOMP_ARCH.get(platform.machine())
    if not sys.platform.startswith("linux") or arch is None:
        return False
    audit_arch, nr = arch
    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO|EPERM
    skip_x32 = (0x45, 0, 1, 0x40000000) if audit_arch == 0xC000003E else (0x05, 0, 0, 1)
    program = [
        (ld, 0, 0, 4),  # arch
        (jeq, 1, 0, audit_arch),
        (ret, 0, 0, deny),
        (ld, 0, 0, 0),  # syscall number
        skip_x32,  # x86_64: numbers with bit 30 (x32) are denied; elsewhere a jump over
        (ret, 0, 0, deny),
        (jeq, 0, 7, nr),
        (ld, 0, 0, 16),  # args[0], the signal: SIGINT's handlers are kept in Python
        (jeq, 5, 0, int(signal.SIGINT)),
        (ld, 0, 0, 24),  # args[1] (the new action), low half
        (jeq, 0, 2, 0),
        (ld, 0, 0, 28),  # high half
        (jeq, 1, 0, 0),
        (ret, 0, 0, deny),
        (ret, 0, 0, allow),
    ]
    raw = b"".join(struct.pack("HBBI", *ins) for ins in program)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    prog = Prog(len(program), ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(prog), 0, 0) == 0


# ---- the guard: the probe's only entry, and what no student code may do ----------------

# Events refused to everyone but the probe: lists of the process's objects, other threads'
# frames, trace and profile functions, more audit hooks, shared memory, ctypes.
ALWAYS = {
    "sys._current_frames": "other threads' frames",
    "sys._current_exceptions": "other threads' frames",
    "gc.get_objects": "the garbage collector's list of objects",
    "gc.get_referrers": "the garbage collector's list of objects",
    "gc.get_referents": "the garbage collector's list of objects",
    "sys.settrace": "a trace function",
    "sys.setprofile": "a profile function",
    "sys.addaudithook": "an audit hook",
    "mmap.__new__": "shared memory",
    "sys.monitoring.register_callback": "a monitoring callback",
}
FRAME_ATTRS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_code"})
CODE_ATTRS = frozenset({"__code__", "gi_code", "cr_code", "ag_code"})
WATCHED = frozenset(
    {*ALWAYS, ENTRY, "sys._getframe", "object.__getattr__", "import", "open", "compile"}
    | {"code.__new__", "function.__new__", "marshal.loads"}
)
NO_IMPORT = frozenset({"ctypes", "_ctypes", "cffi", "_cffi_backend", "_testcapi"})
# Library code that hands frames to whoever called it: the guard looks past it, at its
# caller (so inspect.currentframe() in a student's cell is the student's call).
PASS_THROUGH = (
    "/inspect.py",
    "/traceback.py",
    "/logging/__init__.py",
    "/bdb.py",
    "/pdb.py",
    "/dis.py",
    "/cgitb.py",
    "/asyncio/",
    "/stack_data/",
    "/executing/",
    "/pure_eval/",
)


def _library_roots() -> tuple[str, ...]:
    import sysconfig

    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots |= {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted(root.rstrip("/") + "/" for root in roots if root))


def _proc_memory(path) -> bool:
    if isinstance(path, bytes):
        path = path.decode(errors="replace")
    if not isinstance(path, str):
        return False
    path = "/" + path.strip().lstrip("/")
    return path in ("/dev/mem", "/dev/kmem", "/proc/kcore") or (
        path.startswith("/proc/") and path.rsplit("/", 1)[-1] in ("mem", "pagemap")
    )


def guard(key: bytes, codes: frozenset[int]):  # noqa: C901 (closures of one hook)
    """The audit hook (see the module's docstring). ``codes``: the probe's code objects."""
    import _thread

    thread_id = _thread.get_ident
    roots = _library_roots()
    busy: set[int] = set()  # threads inside the hook (its own events are not judged)
    notes = NOTES

    def kind(code) -> str:
        """ "probe", "student", "pass" (library that hands frames on) or "library"."""
        if IDENT(code) in codes:
            return "probe"
        name = code.co_filename
        if name.startswith("<frozen ") or (name.startswith(roots) and name != PROBE_FILE):
            return "pass" if any(part in name for part in PASS_THROUGH) else "library"
        return "student"

    def asker():
        """(kind, frame) of the code that asked: the first frame above the event that is
        not library code handing frames on; ("nobody", None) when only C code asked.
        (Frames 0 to 2 are this function, judge and the hook.)"""
        frame = GETFRAME(3)
        while frame is not None:
            found = kind(frame.f_code)
            if found != "pass":
                return found, frame
            frame = frame.f_back
        return "nobody", None

    def reaches_probe(frame) -> bool:
        while frame is not None:
            if IDENT(frame.f_code) in codes:
                return True
            frame = frame.f_back
        return False

    def where(frame) -> str:
        """'In [7], line 3' for a frame of a cell (or its file and line)."""
        while frame is not None and kind(frame.f_code) != "student":
            frame = frame.f_back
        if frame is None:
            return "code the kernel ran"
        filename, line = frame.f_code.co_filename, frame.f_lineno
        number = None
        with contextlib.suppress(Exception):
            number = SHELL.compile._filename_map.get(filename)
        place = f"In [{number}]" if isinstance(number, int) else "a file of the submission"
        return f"{place}, line {line}"

    def grader_code(code) -> bool:
        return IDENT(code) in codes or getattr(code, "co_filename", None) == COURSE_FILE

    def at_stake(event: str, args: tuple):
        """What the event would reach, decided from its arguments alone (cheap: most
        events are the kernel's own imports, files and compilations, let through here);
        None when it reaches nothing."""
        if event in ALWAYS:
            return ALWAYS[event]
        if event.startswith("ctypes."):
            return "raw memory (ctypes)"
        if event == "import":
            return "raw memory (ctypes)" if args and args[0] in NO_IMPORT else None
        if event == "open":
            return "the process's memory" if args and _proc_memory(args[0]) else None
        if event in ("compile", "code.__new__"):
            name = args[1] if len(args) > 1 else None
            return "code dressed as the grader's" if name in (PROBE_FILE, COURSE_FILE) else None
        if event == "function.__new__":
            return "the grader's code" if args and grader_code(args[0]) else None
        if event == "marshal.loads":
            return "code from bytes"
        if event == "sys._getframe":
            return "a frame of the running code"
        if event == "object.__getattr__" and len(args) == 2:
            if args[1] in CODE_ATTRS:
                return "the grader's code" if grader_code(getattr(args[0], args[1], None)) else None
            if args[1] in FRAME_ATTRS:
                return "a frame of the running code"
        return None

    def judge(event: str, args: tuple):
        """None (allowed) or (what the event would reach, the asking frame, who asked)."""
        what = at_stake(event, args)
        if what is None:
            return None
        who, frame = asker()
        if who == "probe" and thread_id() in PRIVILEGED:
            return None
        if event == "marshal.loads" and who in ("library", "probe"):
            return None  # importlib loading a module's cached bytecode
        if event in ("compile", "code.__new__") and who == "probe":
            return None  # the probe compiling course code for a request (attach)
        if what != "a frame of the running code":
            return what, frame, who
        if event == "sys._getframe":
            found = args[0] if args else None
        else:
            found = args[0] if args[1] == "f_code" else getattr(args[0], args[1], None)
        if who in ("student", "nobody") or reaches_probe(found):
            return what, frame, who
        return None

    def hook(event: str, args: tuple) -> None:
        if event not in WATCHED and not event.startswith("ctypes."):
            return
        me = thread_id()
        if me in busy:
            return
        if event == ENTRY:  # whoever asks, the answer is to the request it was given
            serve(key, notes, args[0] if args else None)
            return
        busy.add(me)
        try:
            found = judge(event, args)
            if found is None:
                return
            what, frame, who = found
            if who in ("student", "nobody") and len(notes) < MAX_NOTES:
                notes.append(f"{where(frame)}: reaches {what} ({event})")
        finally:
            busy.discard(me)
        raise RuntimeError(f"{event} is not available while grading: it reaches {what}")

    return hook
