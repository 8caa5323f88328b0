"""Where ``grade`` runs its jobs: a Dask cluster (``Cluster``).

By default a local cluster of process workers (one per core or ``--jobs``, one thread
each), started quietly in the background while the grader reads the gradebook, and shut
down at the end (also on Ctrl-C), with whatever its workers left; its workers fork from a
server that imported Dask and the grader once. With ``--scheduler`` a client of an
existing cluster (an address, a scheduler file, a dask-gateway cluster, or from Python a
``Client`` or cluster object of dask-jobqueue, dask-kubernetes...). ``dispatch.py`` runs
the jobs on it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path

from ..errors import GraderError
from ..kernel import limits as oslimits

CONNECT_SECONDS = 60  # to reach a scheduler
# A local worker's own memory (its kernels have theirs): what kernels send it is capped
# (channels.py), and a worker that still passes this is restarted by its nanny.
WORKER_MEMORY = 2 * oslimits.GiB
GATEWAY = "dask-gateway:"  # --scheduler dask-gateway:CLUSTER_NAME
LOCAL_CONFIG = {
    # One task per worker at a time: when a worker dies, only the task it ran is suspect.
    "distributed.scheduler.worker-saturation": 1.0,
    "distributed.scheduler.work-stealing": False,
    "distributed.scheduler.allowed-failures": 2,
    "distributed.worker.multiprocessing-method": "forkserver",
    # Grading is kernels' work: no sampling profiler or monitors competing for the cores.
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.admin.system-monitor.disk": False,
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.tick.interval": "200ms",
    "distributed.admin.tick.limit": "1h",
    # The scheduler and each worker listen for HTTP too (Dask's health, metrics, info pages
    # and a proxy to the workers', none of it behind TLS): no route, so every page is 404.
    "distributed.scheduler.http.routes": [],
    "distributed.worker.http.routes": [],
    # Workers hold no data to spill: past WORKER_MEMORY x 0.95 the nanny restarts one.
    "distributed.worker.memory.target": False,
    "distributed.worker.memory.spill": False,
    # Dask's default also sets MALLOC_TRIM_THRESHOLD_, which kernels would inherit (and run
    # slower with); launch.py drops it on other clusters' workers.
    "distributed.nanny.pre-spawn-environ": {
        "OMP_NUM_THREADS": 1,
        "MKL_NUM_THREADS": 1,
        "OPENBLAS_NUM_THREADS": 1,
    },
}


class Cluster:
    """A Dask client (``start`` begins, ``client`` waits for it) on

    - a local cluster of ``jobs`` process workers, when ``address`` is None;
    - the scheduler at ``address`` (``tcp://host:8786``, or ``tls://...`` with Dask's TLS
      settings), or the one a scheduler file names (``/path/scheduler.json``);
    - a running dask-gateway cluster, ``dask-gateway:CLUSTER_NAME`` (the gateway's address
      and credentials come from the dask-gateway settings, as on a JupyterHub);
    - or, from Python, a ``distributed.Client`` or any Dask cluster object (dask-jobqueue,
      dask-kubernetes, dask-gateway), which stays open afterwards."""

    def __init__(self, address, jobs: int, work: Path, token: str):
        self.address = address
        self.jobs = max(1, jobs)
        self.work = work
        self.token = token  # local workers and their kernels carry it (limits.MARKER)
        self.local = None
        self.borrowed = False  # the caller's client or cluster: left open
        self._client = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._start, name="autograder-cluster", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            import dask
            from distributed import Client, LocalCluster

            if self.address is not None:
                self._client = connect(self.address)
                self.borrowed = not isinstance(self.address, str)
                return
            env = {oslimits.MARKER: self.token, "PYTHONDONTWRITEBYTECODE": "1"}
            dask.config.set(LOCAL_CONFIG)  # for this process's workers, restarted ones too
            # Dask's own scratch (its locks and the workers' folders) in the run's work
            # folder, removed with it, rather than a dask-scratch-space left in /tmp.
            dask.config.set({"temporary-directory": str(self.work / "dask")})
            _preload_workers()
            self.local = LocalCluster(
                n_workers=self.jobs,
                security=local_security(),
                threads_per_worker=1,
                processes=True,
                memory_limit=WORKER_MEMORY,
                dashboard_address=None,
                silence_logs=logging.CRITICAL,
                local_directory=str(self.work / "dask"),
                env=env,
                # its HTTP server (routes above) on a free port: not 8787, in use or not
                scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                protocol="tls",
                host="127.0.0.1",
            )
            self._client = Client(self.local, set_as_default=False)
            from ..worker.material import send_by_value
            from ..worker.plugins import QuietWorker

            send_by_value()
            self._client.register_plugin(QuietWorker())
        except BaseException as exc:  # reported by client()
            self._error = exc

    def scale(self, jobs: int) -> None:
        """At least ``jobs`` local workers (starting the cluster if it is not started)."""
        if self._thread is None:
            self.jobs = max(1, jobs)
            self.start()
        elif self.address is None and jobs > self.jobs:
            self._thread.join()
            if self.local is not None:
                self.local.scale(jobs)
                self.jobs = jobs

    def describe(self) -> str:
        if self.address is None:
            return f"with {self.jobs} worker(s)"
        where = self.address if isinstance(self.address, str) else type(self.address).__name__
        return f"on the Dask cluster at {where}"

    def client(self):
        if self._thread is not None:
            self._thread.join()
        if self._client is None:
            where = f"the scheduler at {self.address}" if self.address else "a local cluster"
            raise GraderError(
                f"could not start grading on {where}: {type(self._error).__name__}: {self._error}"
            )
        return self._client

    def threads(self) -> int:
        """Worker threads in the cluster now."""
        with contextlib.suppress(Exception):
            return sum(self._client.nthreads().values())
        return 0

    def close(self) -> None:
        if self._thread is not None:
            self._thread.join()
        if self._client is not None and not self.borrowed:
            with contextlib.suppress(Exception):
                self._client.close(timeout=10)
        if self.local is not None:
            with contextlib.suppress(Exception):
                self.local.close(timeout=10)
            oslimits.kill_marked(self.token)  # whatever is left of the local workers


def local_security():
    """Mutual TLS for a local cluster: a certificate authority made for this run alone, in
    memory, that signs the scheduler's, the workers', the nannies' and this client's
    certificates; every connection must present one (``require_encryption``). On a shared
    machine (a JupyterHub) another user who finds the ports is refused at the handshake:
    without it, ``client.run`` would run their code as the grader."""
    from distributed.security import Security

    return Security.temporary()


def connect(address):
    """A client on an existing cluster (see ``Cluster``)."""
    from distributed import Client

    if not isinstance(address, str):
        return address if isinstance(address, Client) else address.get_client()
    if address.startswith(GATEWAY):
        from dask_gateway import Gateway

        return Gateway().connect(address.removeprefix(GATEWAY)).get_client(set_as_default=False)
    if address.endswith(".json") or Path(address).is_file():
        return Client(scheduler_file=address, timeout=CONNECT_SECONDS, set_as_default=False)
    return Client(address, timeout=CONNECT_SECONDS, set_as_default=False)


def _preload_workers() -> None:
    """Local workers start as forks of a server process that has imported Dask and the
    grader (nbgrader included) once: seconds of CPU less per worker than a fresh Python."""
    import multiprocessing

    from distributed.utils import get_mp_context

    get_mp_context()  # Dask's own preload list, which this one replaces
    modules = [
        "distributed",
        "dask",
        "msgpack",
        "cloudpickle",
        "tornado",
        "toolz",
        "autograder.worker.task",
        "nbgrader.converters",
        "nbgrader.preprocessors",
    ]
    multiprocessing.get_context("forkserver").set_forkserver_preload(modules)


def run_token() -> str:
    return f"{os.getpid()}-{os.urandom(6).hex()}"
