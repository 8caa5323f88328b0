"""Benchmark: how much a CPU hog graded alongside slows an honest student, measured in one run.

    .venv/bin/python benchmarks/cpu_fairness.py             # 2 rounds
    .venv/bin/python benchmarks/cpu_fairness.py --rounds 4  # steadier numbers

An honest notebook (a sleep, then 15 million additions) is run by ``GuardedExecute`` in a
process of its own, as a grading worker runs it, three ways, interleaved by round:

  (a) alone;
  (b) alongside a hog graded at the same time (its kernel starts six spinners in sessions
      of their own and a double-forked daemon, then spins itself), kernels' CPU confined
      (cgroups.py: one core per kernel's group);
  (c) the same with confinement turned off (AUTOGRADER_CPU=none, the fallback).

Printed: the honest notebook's seconds each way, (b)/(a) (target <= 1.3 on 2 cores) and
(c)/(a) for comparison, and the cores the hog's processes got meanwhile. The machine may be
shared: the load average is printed, and only ratios measured in the same run mean
anything. Not a test (tests/test_starve.py checks the confinement itself).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
import uuid

import common
import psutil

from autograder.kernel import cgroups

HONEST = """
import time
time.sleep(2)
x = 0
for i in range(15_000_000):
    x += i
"""
SPIN = "import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
HOG = """
import os, subprocess, sys
spin = {spin!r}
for _ in range(6):
    subprocess.Popen([sys.executable, "-c", spin, "{token}"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", spin, "{token}"])
    os._exit(0)
os.wait()
while True: pass
"""
RUNNER = """
import json, sys, time
import nbformat
from autograder.kernel.limits import Limits
from autograder.preprocessors.execute import GuardedExecute
cells, folder, timeout = json.loads(sys.argv[1])
nb = nbformat.v4.new_notebook(
    cells=[nbformat.v4.new_code_cell(s) for s in cells],
    metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "py"}})
for cell in nb.cells:
    cell.metadata["nbgrader"] = {}
ex = GuardedExecute(config=Limits(cell_timeout=timeout).as_config(), shutdown_kernel="immediate",
                    iopub_timeout=10, extra_arguments=["--HistoryManager.hist_file=:memory:"])
start = time.monotonic()
ex.preprocess(nb, {"nbgrader": {"notebook": "n"}, "metadata": {"path": folder}})
print(json.dumps(time.monotonic() - start))
"""


def start(code: str, folder: str, timeout: int, confined: bool) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != cgroups.CPU_ENV}
    env["PYTHONPATH"] = str(common.ROOT)
    if not confined:
        env[cgroups.CPU_ENV] = "none"
    return subprocess.Popen(
        [sys.executable, "-c", RUNNER, json.dumps([[code], folder, timeout])],
        cwd=common.ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def tagged(token: str) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]


def cpu(procs: list[psutil.Process]) -> float:
    total = 0.0
    for proc in procs:
        try:
            times = proc.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def stop(proc: subprocess.Popen, token: str) -> None:
    for child in [*psutil.Process(proc.pid).children(recursive=True), *tagged(token)]:
        with contextlib.suppress(psutil.Error):
            child.kill()
    proc.kill()
    proc.communicate()


def honest(folder: str) -> float:
    run = start(HONEST, folder, 300, confined=True)
    out, err = run.communicate(timeout=600)
    if run.returncode:
        sys.exit(f"the honest notebook failed: {err.strip().splitlines()[-1:]}")
    return json.loads(out.strip().splitlines()[-1])


def beside_hog(folder: str, confined: bool) -> tuple[float, float]:
    """(the honest notebook's seconds, cores the hog's processes got meanwhile)."""
    token = uuid.uuid4().hex
    hog = start(HOG.format(spin=SPIN.format(seconds=120), token=token), folder, 200, confined)
    try:
        deadline = time.monotonic() + 30
        while len(tagged(token)) < 7 and time.monotonic() < deadline:
            time.sleep(0.2)
        spinning = tagged(token)
        before, began = cpu(spinning), time.monotonic()
        seconds = honest(folder)
        return seconds, (cpu(spinning) - before) / (time.monotonic() - began)
    finally:
        stop(hog, token)


def main() -> None:
    parser = common.parser(__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    status = cgroups.cpu_status()
    print(f"CPU confinement here: {status.level} {status.reason}".rstrip())
    print(f"load average before: {common.load_average(digits=2)}, cores: {os.cpu_count()}")
    times: dict[str, list[float]] = {"alone": [], "confined": [], "unconfined": []}
    cores: dict[str, list[float]] = {"confined": [], "unconfined": []}
    with common.scratch("cpu-fairness-") as work:
        folder = str(work)
        for r in range(args.rounds):
            for way in common.alternate(["alone", "confined", "unconfined"], r):
                if way == "alone":
                    times[way].append(honest(folder))
                else:
                    seconds, used = beside_hog(folder, confined=way == "confined")
                    times[way].append(seconds)
                    cores[way].append(used)
                print(f"  round {r + 1} {way:>10}: {times[way][-1]:6.1f} s", flush=True)
    alone = statistics.median(times["alone"])
    print(f"\nhonest notebook alone:            {alone:6.1f} s")
    for way in ("confined", "unconfined"):
        seconds = statistics.median(times[way])
        print(
            f"beside a hog, CPU {way:>10}: {seconds:6.1f} s  ratio {seconds / alone:4.2f}x"
            f"  (hog got {statistics.median(cores[way]):.2f} cores)"
        )
    print("target: confined ratio <= 1.3x")
    print(f"load average after: {common.load_average(digits=2)}")


if __name__ == "__main__":
    main()
