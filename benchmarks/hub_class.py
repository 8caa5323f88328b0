"""Benchmark: what a hub takes on this machine, N students of one course through its API.

    sudo .venv/bin/python benchmarks/hub_class.py            # 10 students, then 30
    sudo .venv/bin/python benchmarks/hub_class.py --n 10     # one class of 10

For each N, a new hub, started as README "Run it on a JupyterHub" and tests/test_hub.py
start it (`python -m autograder hub --plan hub.toml`, as root, on free ports of
127.0.0.1; test_hub's helpers make the users and the course): one course (a copy of this
checkout owned by its grader, 01_value released by README's commands), its formgrader and
watch services, N students who are unix users (prefix ``bm-``, removed at the end, also on
failure or Ctrl-C) logging in with their passwords (PAM). Then, all students at once:

  log in:  POST /hub/api/users/<name>/tokens with their username and password (PAM);
  spawn:   POST /hub/api/users/<name>/server with their token, then GET the user until
           the server is ready (all N asked for at once, as a class arriving);
  work:    on their own server, as the Assignments tab does (nbgrader's assignment list
           extension): POST assignments/fetch, the solved notebook (solutions/01_value/)
           PUT through the contents API, then all N POST assignments/submit in one burst;
  wait:    POST assignments/fetch_feedback every --poll seconds until the submission
           has its feedback here (the course's watch service graded it and released it).

Printed per N: the hub's start (until its services answer), spawn time per server
(median, p95) and for all N, submit to feedback (median, p95, max) and the submissions
graded per minute (N over the burst's first submit to its last feedback), memory (RSS of
each user server's process tree, after start and at its peak, and its PSS after the work:
shared pages split among the processes that share them; the hub, the proxy, the
formgrader and the watch service with its grading workers and kernels, at their peak)
and the load average. Then the projection for a class of 300 from the largest N: memory
300 x the median server at its peak (and by PSS) + the services, and minutes for 300
submissions in one burst at the measured rate (and the cores for that in 3 minutes, if
grading scales with cores). The machine may be shared: read the load average. Not a
test; root only.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import common

common.on_path(common.ROOT, common.TESTS)

import test_hub as th  # noqa: E402

from autograder.hub.config import free_port  # noqa: E402

A = th.A
COURSE = th.COURSES[0]
PREFIX = "bm-"
PROJECT = 300  # the class the docs size a machine for
WITHIN = 3  # minutes: the feedback within 3 minutes, for the cores projection
MiB = 1024 * 1024
RETRY = 10  # times a request is sent again after the proxy's 502-504
RETRIED: list[str] = []  # "503 POST server": requests sent again (append is thread-safe)
ABORT = threading.Event()  # set when one student fails or on Ctrl-C: the others stop


# ---- the hub ------------------------------------------------------------------------------


def write_plan(root: Path, port: int, users: dict[str, str], students: list[str]) -> Path:
    """One course, tests/test_hub.py's keys (autograder/hub/example-hub.toml shows all)."""
    names = ", ".join(f'"{s}"' for s in students)
    plan = root / "hub.toml"
    plan.write_text(
        f'[hub]\nip = "127.0.0.1"\nport = {port}\nstate = "state"\n'
        f'exchange_root = "exchange"\npython = "{th.environment(root)}"\nstart_timeout = 900\n\n'
        '[authenticator]\nkind = "pam"\n\n'
        f'[[courses]]\nid = "{COURSE}"\nfolder = "courses/{COURSE}"\n'
        f'grader = "{users["g1"]}"\ninstructors = ["{users["i1"]}"]\n'
        f'students = [{names}]\nexchange = "filesystem"\n',
        encoding="utf-8",
    )
    return plan


def class_hub(root: Path, n: int) -> th.Hub:
    """The hub of a class of ``n`` in ``root``, named (its users made by ``start_hub``)."""
    tag = secrets.token_hex(2)
    users = {"g1": f"{PREFIX}{tag}-g", "i1": f"{PREFIX}{tag}-i"}
    users |= {f"s{i:03d}": f"{PREFIX}{tag}-s{i:03d}" for i in range(n)}
    password = secrets.token_urlsafe(12)
    return th.Hub(root, "", password, users, {COURSE: root / "courses" / COURSE}, root / "hub.log")


def start_hub(hub: th.Hub, procs: list, timeout: float) -> float:
    """The users and the course made, the hub started as test_hub starts it (its process
    added to ``procs``) and 01_value released: seconds from the hub's command to its
    services answering."""
    root, users = hub.root, hub.users
    for name in users.values():
        th.useradd(name, root / "home" / name, hub.password)
    folder = hub.courses[COURSE]
    th.copy_course(folder)
    th.chown_tree(folder, users["g1"])
    port = free_port()
    plan = write_plan(root, port, users, [users[r] for r in students_of(hub)])
    hub.url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    proc = th.start_hub(plan, hub.log)
    procs.append(proc)
    deadline = time.monotonic() + timeout
    while not (th.service_up(hub, COURSE) and th.watching(hub, COURSE)):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the hub did not start in {timeout:.0f} s")
        time.sleep(0.5)
    seconds = time.perf_counter() - started
    for line in th.RELEASE_COMMANDS:
        hub.grader_run(COURSE, *line.split())
    return seconds


def students_of(hub: th.Hub) -> list[str]:
    return sorted(r for r in hub.users if r.startswith("s"))


# ---- the API ------------------------------------------------------------------------------


def call(url: str, token: str = "", method: str = "GET", body=None, timeout: float = 300):
    """(status, the JSON answer or None) of one request; again, up to RETRY times, when
    the proxy answers 502-504 (it could not reach the hub or the server in time)."""
    data = None if body is None else json.dumps(body).encode()
    for attempt in range(RETRY + 1):
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", f"token {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                text = answer.read()
                return answer.status, json.loads(text) if text else None
        except urllib.error.HTTPError as exc:
            if exc.code not in (502, 503, 504) or attempt == RETRY:
                return exc.code, exc.read()[:500]
            RETRIED.append(f"{exc.code} {method} {url.rsplit('/', 1)[-1]}")
            time.sleep(2)
    raise AssertionError("not reached")


def login(hub: th.Hub, user: str) -> str:
    """A token for ``user``, from the hub's API with their password (PAM)."""
    body = {"auth": {"username": user, "password": hub.password}, "note": "hub_class.py"}
    status, answer = call(f"{hub.url}/hub/api/users/{user}/tokens", method="POST", body=body)
    if status != 201:
        raise SystemExit(f"{user} could not log in ({status}): {answer}")
    return answer["token"]


def spawn(hub: th.Hub, user: str, token: str, timeout: float) -> float:
    """Seconds from asking for ``user``'s server to the hub saying it is ready."""
    started = time.perf_counter()
    status, answer = call(f"{hub.url}/hub/api/users/{user}/server", token, "POST", {})
    already = status == 400 and b"already running" in answer  # a retry after a 503
    if status not in (201, 202) and not already:
        raise SystemExit(f"{user}'s server was refused ({status}): {answer}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not ABORT.is_set():
        _, model = call(f"{hub.url}/hub/api/users/{user}", token)
        server = (model or {}).get("servers", {}).get("", {})
        if server.get("ready"):
            return time.perf_counter() - started
        time.sleep(0.5)
    raise SystemExit(f"{user}'s server did not start in {timeout:.0f} s (or stopped)")


def nbgrader(hub: th.Hub, user: str, token: str, action: str) -> list[dict]:
    """POST assignments/<action> on ``user``'s server, as the Assignments tab does: the
    course's assignments as the extension lists them after it."""
    url = f"{hub.url}/user/{user}/assignments/{action}"
    status, answer = call(url, token, "POST", {"course_id": COURSE, "assignment_id": A})
    if status != 200 or not isinstance(answer, dict) or not answer.get("success"):
        raise SystemExit(f"{user}: {action} failed ({status}): {str(answer)[:500]}")
    return answer["value"]


def has_feedback(listing: list[dict]) -> bool:
    return any(
        s.get("has_local_feedback")
        for a in listing
        if a.get("status") == "submitted" and a.get("assignment_id") == A
        for s in a.get("submissions", [])
    )


class Student:
    """One student's requests; the times they measured."""

    def __init__(self, hub: th.Hub, user: str, solved: dict):
        self.hub, self.user, self.solved = hub, user, solved
        self.token = ""
        self.spawn = self.submitted = self.feedback = 0.0

    def start(self, timeout: float) -> None:
        self.token = login(self.hub, self.user)
        self.spawn = spawn(self.hub, self.user, self.token, timeout)

    def work(self, burst: threading.Barrier, poll: float, timeout: float) -> None:
        hub, user = self.hub, self.user
        nbgrader(hub, user, self.token, "fetch")
        path = f"{hub.url}/user/{user}/api/contents/{COURSE}/{A}/value.ipynb"
        body = {"type": "notebook", "format": "json", "content": self.solved}
        status, answer = call(path, self.token, "PUT", body)
        if status != 200:
            raise SystemExit(f"{user}: saving the notebook failed ({status}): {answer}")
        burst.wait(timeout)
        self.submitted = time.perf_counter()
        nbgrader(hub, user, self.token, "submit")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not ABORT.is_set():
            time.sleep(poll)
            if has_feedback(nbgrader(hub, user, self.token, "fetch_feedback")):
                self.feedback = time.perf_counter()
                return
        raise SystemExit(f"{user}: no feedback {timeout:.0f} s after submitting (or stopped)")


# ---- memory -------------------------------------------------------------------------------


def tree_rss(proc, pss: bool = False) -> int:
    """RSS of ``proc`` and its descendants; with ``pss``, their PSS (shared pages split
    among the processes sharing them: servers' sum is what the machine holds)."""
    import psutil

    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            total += p.memory_full_info().pss if pss else p.memory_info().rss
    return total


def role_of(proc, students: dict[int, str]) -> str | None:
    """What a child of the hub is: a student's server, the proxy, formgrader or watch."""
    import psutil

    try:
        uid, cmdline = proc.uids().real, " ".join(proc.cmdline())
    except psutil.Error:
        return None
    if uid in students:
        return students[uid]
    if "configurable-http-proxy" in cmdline or "hub/proxy.py" in cmdline:
        return "proxy"
    if "autograder watch" in cmdline:
        return "watch"
    if "jupyterhub-singleuser" in cmdline:
        return "formgrader"
    return None


class Memory:
    """The peak RSS (bytes) of the hub (itself), the proxy, formgrader, watch and each
    student's server (their process trees), sampled every ``every`` seconds."""

    def __init__(self, hub: th.Hub, pid: int, every: float = 1.0):
        import psutil

        self.proc, self.every = psutil.Process(pid), every
        self.students = {pwd.getpwnam(hub.users[r]).pw_uid: r for r in students_of(hub)}
        self.peak: dict[str, int] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def sample(self, pss: bool = False) -> dict[str, int]:
        """Each role's memory now (RSS, or PSS), the peaks kept (RSS only)."""
        if pss:
            return {
                role: tree_rss(child, pss=True)
                for child in self.proc.children()
                if (role := role_of(child, self.students))
            }
        now = {"hub": self.proc.memory_info().rss}
        for child in self.proc.children():
            role = role_of(child, self.students)
            if role:
                now[role] = tree_rss(child)
        for role, rss in now.items():
            self.peak[role] = max(rss, self.peak.get(role, 0))
        return now

    def _run(self) -> None:
        while not self.done.wait(self.every):
            self.sample()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


# ---- one class ----------------------------------------------------------------------------


def quantiles(values: list[float]) -> tuple[float, float, float]:
    """(median, p95, max); p95 by the nearest rank."""
    ordered = sorted(values)
    rank = max(0, -(-95 * len(ordered) // 100) - 1)
    return statistics.median(ordered), ordered[rank], ordered[-1]


def mib(values) -> str:
    return f"{statistics.median(values) / MiB:.0f} MiB median, {max(values) / MiB:.0f} max"


def one_class(n: int, args) -> dict:
    with common.scratch("bm-hub-", keep=args.keep) as root:
        root.chmod(0o755)
        hub, procs = class_hub(root, n), []
        try:
            hub_start = start_hub(hub, procs, args.timeout)
            return measure(hub, procs[0], hub_start, n, args)
        except BaseException:
            if hub.log.exists():
                print(f"the hub's log ends:\n{hub.log.read_text()[-4000:]}", file=sys.stderr)
            raise
        finally:
            for proc in procs:
                th.stop(proc)
            th.remove_users(list(hub.users.values()))
            th.unmount_environment(root)


def measure(hub: th.Hub, proc: subprocess.Popen, hub_start: float, n: int, args) -> dict:
    solved = th.solved_release(hub.courses[COURSE])
    students = [Student(hub, hub.users[r], solved) for r in students_of(hub)]
    print(f"N={n}: hub started in {hub_start:.1f} s; load average {common.load_average(3)}")
    burst = threading.Barrier(n)
    RETRIED.clear()
    with Memory(hub, proc.pid) as memory, ThreadPoolExecutor(n) as pool:
        try:
            started = time.perf_counter()
            list(pool.map(lambda s: s.start(args.timeout), students))
            all_spawned = time.perf_counter() - started
            idle = memory.sample()
            list(pool.map(lambda s: s.work(burst, args.poll, args.timeout), students))
        except BaseException:
            ABORT.set()
            burst.abort()
            raise
    roles = students_of(hub)
    after = memory.sample(pss=True)
    shared = [after[r] for r in roles if r in after]
    spawns = quantiles([s.spawn for s in students])
    waits = quantiles([s.feedback - s.submitted for s in students])
    span = max(s.feedback for s in students) - min(s.submitted for s in students)
    rate = n / span * 60
    print(
        f"  spawn {n} servers at once: all ready in {all_spawned:.1f} s; per server "
        f"median {spawns[0]:.1f} s, p95 {spawns[1]:.1f} s"
    )
    print(
        f"  submit to feedback (polled every {args.poll:g} s): median {waits[0]:.1f} s, "
        f"p95 {waits[1]:.1f} s, max {waits[2]:.1f} s; {rate:.1f} submissions graded a minute"
    )
    print(f"  user server RSS after start: {mib([idle[r] for r in roles if r in idle])}")
    peaks = [memory.peak[r] for r in roles]
    print(f"  user server RSS at its peak: {mib(peaks)} ({len(peaks)} servers)")
    print(f"  user server PSS after the work: {mib(shared)}")
    services = {k: memory.peak.get(k, 0) for k in ("hub", "proxy", "formgrader", "watch")}
    print(
        "  services at their peak: "
        + ", ".join(f"{k} {v / MiB:.0f} MiB" for k, v in services.items())
    )
    again = ", ".join(f"{RETRIED.count(c)} x {c}" for c in sorted(set(RETRIED))) or "none"
    print(f"  requests sent again (the proxy's 502-504): {again}")
    print(f"  load average now {common.load_average(3)}")
    return {
        "n": n,
        "peak_median": statistics.median(peaks),
        "pss_median": statistics.median(shared),
        "services": sum(services.values()),
        "rate": rate,
    }


def project(result: dict) -> None:
    memory = PROJECT * result["peak_median"] + result["services"]
    shared = PROJECT * result["pss_median"] + result["services"]
    minutes = PROJECT / result["rate"]
    cores = common.cores()
    print(
        f"projection for {PROJECT} students (from N={result['n']}): memory "
        f"{memory / 1024**3:.1f} GiB ({PROJECT} x {result['peak_median'] / MiB:.0f} MiB + "
        f"services {result['services'] / MiB:.0f} MiB), {shared / 1024**3:.1f} GiB by PSS; "
        f"a burst of {PROJECT} submissions "
        f"graded in {minutes:.0f} min on {cores} cores; {cores * minutes / WITHIN:.0f} cores "
        f"for {WITHIN} min, if grading scales with cores"
    )


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[10, 30], help="class sizes")
    parser.add_argument("--poll", type=float, default=5.0, help="seconds between polls")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per step")
    common.add_keep(parser)
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("the hub starts servers as its users: run it as root")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # clean up as on Ctrl-C
    print(f"{common.cores()} cores; load average {common.load_average(3)}")
    results = [one_class(n, args) for n in args.n]
    project(max(results, key=lambda r: r["n"]))


if __name__ == "__main__":
    main()
