"""A grading kernel's client or manager that the garbage collector finds in a reference
cycle never hangs the process that collects it (autograder/kernel/channels.py, release).

Both keep a zmq context of their own. Collected with one of that context's sockets in the
same cycle, the context's record of its sockets is already empty (weak references are
cleared before any finalizer runs), so jupyter_client's and pyzmq's finalizers, which
destroy the context on the collecting thread, wait forever for a socket they cannot see.
It happened in the watcher's process, in the middle of writing a feedback page. Each case
runs in a child process of its own, so that a hang fails the test instead of the suite."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT

CYCLE = """
import gc, os, time, types, zmq
gc.disable()
threads = lambda: len(os.listdir("/proc/self/task"))  # libzmq's threads too
before = threads()
{make}
context = owner.context
holder = types.SimpleNamespace(owner=owner)
holder.sockets = [context.socket(kind) for kind in (zmq.PUSH, zmq.DEALER, zmq.SUB)]
for n, socket in enumerate(holder.sockets):
    socket.connect(f"tcp://127.0.0.1:{{9 + n}}")
owner.holder = holder  # a cycle: the owner, its sockets and its context
assert threads() > before
del owner, holder, context, socket
started = time.monotonic()
gc.collect()
collected = time.monotonic() - started
# and the context was terminated: its I/O threads are gone
print("ok" if threads() == before else f"{{threads() - before}} threads left", collected)
"""

OWNERS = {
    "client": "from autograder.kernel.channels import LimitedKernelClient\n"
    "owner = LimitedKernelClient()",
    "sandboxed client": "from autograder.kernel.sandbox import SandboxedKernelClient\n"
    "owner = SandboxedKernelClient()",
    "manager": "from autograder.kernel.sandbox import LimitedKernelManager\n"
    "owner = LimitedKernelManager(kernel_name='python3')",
}


def child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize("owner", list(OWNERS))
def test_collecting_a_cycle_with_open_sockets_returns(owner):
    try:
        proc = child(CYCLE.format(make=OWNERS[owner]))
    except subprocess.TimeoutExpired:
        pytest.fail(f"collecting a {owner} with open sockets hung the process")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split()[:1] == ["ok"], proc.stdout + proc.stderr[-2000:]


def test_a_closed_client_releases_nothing_twice():
    """The usual way: channels stopped, context destroyed; collecting it does nothing."""
    code = (
        "import gc\n"
        "from autograder.kernel.channels import LimitedKernelClient\n"
        "kc = LimitedKernelClient()\n"
        "kc.stop_channels()\n"
        "assert kc.context.closed\n"
        "del kc\n"
        "gc.collect()\n"
        "from autograder.kernel import channels\n"
        "print(len(channels._after_collection))\n"
    )
    proc = child(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "0"
