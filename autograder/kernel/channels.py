"""What a grading kernel sends the grader is capped before the grader parses it.

The grader's sockets to a kernel (its client's and its manager's) take no message part
larger than ``Limits.message``: libzmq drops the connection without reading it (ZeroMQ's
``MAXMSGSIZE``), so a 200 MB output never reaches the worker's memory. The client's iopub
and shell channels (``GuardedChannel``) also measure each message before it is parsed:
one larger than ``Limits.message`` in all, or more than ``Limits.sent`` bytes while one
cell runs, is not parsed. Then, as when the kernel's group has used its CPU time
(``Limits.cpu_seconds``) or a channel was dropped while the kernel lives, its manager's
``Guard`` stops the kernel (killed with everything it started) and the cell gets one
error output saying why, before the grader finds the kernel dead (the notebook stops
there, as after any crash). The worker goes on grading.
"""

from __future__ import annotations

import contextlib
import gc
import sys
import time
import uuid
from datetime import UTC, datetime
from queue import Empty

import zmq
import zmq.asyncio
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.channels import AsyncZMQSocketChannel
from traitlets import Type

STOPPED = "KernelStopped"  # the ename of the note a stopped kernel's cell gets
TICK = 0.25  # seconds between checks while the grader waits for a kernel
GRACE = 1.0  # seconds a kernel may live on after a channel was dropped (it may be exiting)
MiB = 1024**2


def release(context: zmq.Context | None) -> None:
    """Destroy ``context`` now, or, inside a garbage collection, once it is over.

    A client or manager collected with others in a reference cycle finds its context's
    record of sockets already empty (weak references are cleared before any finalizer
    runs), so destroying the context there closes none of them and ``term()`` waits forever
    for sockets still open: the grader, or the watcher, would hang in the middle of
    whatever allocated (jupyter/jupyter_client#482). Once the collection is over, those
    sockets' own finalizers have closed them."""
    if context is None or context.closed or sys.is_finalizing():
        return
    if _collecting:
        _after_collection.append(context)  # kept alive until then
        return
    with contextlib.suppress(Exception):
        context.destroy(linger=0)


_collecting = False
_after_collection: list[zmq.Context] = []


def _on_collection(phase: str, info: dict) -> None:
    global _collecting
    _collecting = phase == "start"
    while not _collecting and _after_collection:
        release(_after_collection.pop())


gc.callbacks.append(_on_collection)


class _ReleasedWhenCollected:
    """A zmq context that, collected unclosed, is destroyed by ``release`` (pyzmq's own
    ``__del__`` destroys it on the collecting thread)."""

    def __del__(self) -> None:
        if not self._shadow and not self.closed:
            release(self)


class AsyncContext(_ReleasedWhenCollected, zmq.asyncio.Context):
    """The context of a grading kernel's client, and of its manager."""


def capped_context(context: zmq.Context, message: int) -> zmq.Context:
    """``context``, whose sockets from now on refuse parts over ``message`` bytes."""
    if message > 0:
        context.setsockopt(zmq.MAXMSGSIZE, int(message))
    return context


class Guard:
    """Watches one kernel for its manager (``km``, with ``stop_kernel_now()`` and
    ``cpu_used()``), under ``limits``: counts what it sends per cell and stops it past
    the limits; ``why`` says why it was stopped."""

    def __init__(self, km, limits):
        self.km = km
        self.limits = limits
        self.sent = 0
        self.parent: str | None = None
        self.why = ""
        self.told = False
        self.dropped_at: float | None = None
        self._next_cpu_check = 0.0

    def begin(self, msg_id: str) -> None:
        """A new request to the kernel (a cell, or a probe): its bytes are counted anew."""
        self.sent = 0
        self.parent = msg_id

    def received(self, size: int) -> bool:
        """Count a message of ``size`` bytes; False if it must not be parsed."""
        self.sent += size
        if size > self.limits.message:
            self.stop(
                f"it sent a message of {size / MiB:.0f} MiB (limit "
                f"{self.limits.message / MiB:g} MiB)"
            )
        elif self.sent > self.limits.sent:
            self.stop(f"it sent over {self.limits.sent / MiB:g} MiB while one cell ran")
        return not self.why

    def dropped(self) -> None:
        """One of the client's connections was dropped (libzmq drops one that carries a
        message part over the limit)."""
        if self.dropped_at is None:
            self.dropped_at = time.monotonic()

    def check(self) -> None:
        """Stop the kernel if it broke a limit that is watched rather than counted."""
        now = time.monotonic()
        if self.why:
            return
        if self.dropped_at is not None and now - self.dropped_at > GRACE and self._alive():
            self.stop(f"it sent a message over the {self.limits.message / MiB:g} MiB limit")
            return
        limit = self.limits.cpu_seconds()
        if limit and now >= self._next_cpu_check:
            self._next_cpu_check = now + 0.5
            used = self.km.cpu_used()
            if used is not None and used > limit:
                self.stop(f"it used its {limit} s of CPU time")

    def note(self) -> dict | None:
        """Once, after the kernel was stopped: an iopub error message for its cell."""
        if not self.why or self.told or self.parent is None:
            return None
        self.told = True
        text = f"the grading kernel was stopped: {self.why}"
        header = {
            "msg_id": uuid.uuid4().hex,
            "msg_type": "error",
            "date": datetime.now(UTC),
            "session": "",
            "username": "",
            "version": "5.3",
        }
        return {
            "header": header,
            "msg_id": header["msg_id"],
            "msg_type": "error",
            "parent_header": {"msg_id": self.parent},
            "metadata": {},
            "buffers": [],
            "content": {"ename": STOPPED, "evalue": text, "traceback": [f"{STOPPED}: {text}"]},
        }

    def stop(self, why: str) -> None:
        if not self.why:
            self.why = why
            self.km.stop_kernel_now()

    def _alive(self) -> bool:
        process = getattr(getattr(self.km, "provisioner", None), "process", None)
        return process is not None and process.poll() is None


class GuardedChannel(AsyncZMQSocketChannel):
    """A client channel whose messages are measured before they are parsed and which,
    while the grader waits on it, has the kernel's ``Guard`` check the kernel."""

    guard: Guard | None = None
    iopub = False
    monitor = None
    checked = 0.0  # when the guard last checked the kernel (at most once a TICK)

    def watch(self, guard: Guard | None, iopub: bool) -> None:
        if guard is None or self.guard is not None:
            return
        self.guard, self.iopub = guard, iopub
        with contextlib.suppress(zmq.ZMQError):
            self.monitor = self.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    async def get_msg(self, timeout: float | None = None) -> dict:  # type: ignore[override]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.guard is not None:
                await self._check()
                note = self.guard.note() if self.iopub else None
                if note is not None:
                    return note
            wait = TICK if deadline is None else max(0.0, min(TICK, deadline - time.monotonic()))
            if await self.socket.poll(int(wait * 1000)):
                msg = await self._recv()
                if msg is not None:
                    return msg
            elif deadline is not None and time.monotonic() >= deadline:
                raise Empty

    async def _check(self) -> None:
        if time.monotonic() - self.checked < TICK and not self.guard.why:
            return
        self.checked = time.monotonic()
        if self.monitor is not None:
            with contextlib.suppress(zmq.ZMQError):
                while await self.monitor.poll(0):
                    await self.monitor.recv_multipart()
                    self.guard.dropped()
        self.guard.check()

    async def _recv(self, **kwargs) -> dict | None:  # type: ignore[override]
        frames = await self.socket.recv_multipart(**kwargs)
        if self.guard is not None and not self.guard.received(sum(map(len, frames))):
            return None  # not parsed: the kernel is stopped and the note comes next
        try:
            _, message = self.session.feed_identities(frames)
            msg = self.session.deserialize(message)
        except Exception:  # not a message at all: nbclient would fail on it
            return None
        fields = ("header", "parent_header", "metadata", "content")
        return msg if all(isinstance(msg.get(k), dict) for k in fields) else None

    def close(self) -> None:
        if self.monitor is not None:
            with contextlib.suppress(zmq.ZMQError):
                self.socket.disable_monitor()
            self.monitor.close(linger=0)
            self.monitor = None
        super().close()


class LimitedKernelClient(AsyncKernelClient):
    """The client of a grading kernel: its sockets, iopub and shell channels capped and
    watched as the module docstring says (the ``Guard`` is its manager's, ``parent``)."""

    shell_channel_class = Type(GuardedChannel)
    iopub_channel_class = Type(GuardedChannel)

    def _context_default(self) -> zmq.asyncio.Context:
        self._created_context = True
        guard = self._guard()
        context = AsyncContext()
        return capped_context(context, guard.limits.message) if guard else context

    def _guard(self) -> Guard | None:
        return getattr(self.parent, "guard", None)

    def __del__(self) -> None:
        """Nothing: jupyter_client's own destroys the context on the collecting thread,
        which can wait forever (``release``); the context, an ``AsyncContext``, is
        released when it is collected."""

    def start_channels(self, shell=True, iopub=True, stdin=True, hb=True, control=True):
        """Never stdin or control: grading reads neither, and what a kernel sent there
        would pile up unread in the worker's memory."""
        super().start_channels(shell=shell, iopub=iopub, stdin=False, hb=hb, control=False)

    @property
    def shell_channel(self):
        channel = AsyncKernelClient.shell_channel.fget(self)
        channel.watch(self._guard(), iopub=False)
        return channel

    @property
    def iopub_channel(self):
        channel = AsyncKernelClient.iopub_channel.fget(self)
        channel.watch(self._guard(), iopub=True)
        return channel

    def execute(self, *args, **kwargs) -> str:
        msg_id = super().execute(*args, **kwargs)
        guard = self._guard()
        if guard is not None:
            guard.begin(msg_id)
        return msg_id
