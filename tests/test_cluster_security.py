"""The local grading cluster (autograder/grade/cluster.py) speaks mutual TLS only: on a
shared machine, another user who finds its ports (/proc/net/tcp) cannot connect a
``distributed.Client`` and run code as the grader (``client.run``). Refused: a plain TCP
client, a TLS client without a certificate, and one with a certificate of its own making;
the grader's own client runs code on every worker. No dashboard listens."""

from __future__ import annotations

import asyncio
import socket
import ssl

import pytest
from distributed.security import Security

from autograder.grade.cluster import Cluster, run_token

REFUSED_WITHIN = 5  # s: a client without the cluster's certificate gives up


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(None, 1, tmp_path_factory.mktemp("cluster"), run_token())
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


def addresses(client) -> list[str]:
    info = client.scheduler_info()
    workers = list(info["workers"])
    nannies = [w["nanny"] for w in info["workers"].values() if w.get("nanny")]
    return [info["address"], *workers, *nannies]


def refused(address: str, security: Security | None = None) -> bool:
    """Whether Dask's own connect, with ``security``'s client certificate (None: none),
    fails at the handshake (the comm's first message)."""
    from distributed.comm import connect

    async def attempt() -> None:
        kwargs = security.get_connection_args("client") if security else {}
        comm = await connect(address, timeout=REFUSED_WITHIN, **kwargs)
        try:
            await comm.write({"op": "identity"})
            await comm.read()
        finally:
            comm.abort()

    try:
        asyncio.run(attempt())
    except (OSError, TimeoutError, TypeError):
        return True
    return False


def tls_without_certificate(address: str) -> bool:
    """Whether a TLS client that presents no certificate (and checks none) is refused."""
    host, port = address.removeprefix("tls://").rsplit(":", 1)
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        raw = socket.create_connection((host, int(port)), REFUSED_WITHIN)
        with raw, context.wrap_socket(raw) as tls:
            tls.sendall(b"\0" * 8)
            return tls.recv(1) == b""
    except (OSError, ssl.SSLError):
        return True


def test_the_local_cluster_refuses_a_client_without_its_certificate(cluster):
    client = cluster.client()
    every = addresses(client)
    assert len(every) == 3 and all(a.startswith("tls://127.0.0.1:") for a in every), every
    assert set(client.run(lambda: 42).values()) == {42}  # the grader's own client
    for address in every:  # the scheduler, the worker, its nanny
        assert refused(address.replace("tls://", "tcp://", 1)), address
        assert refused(address, Security.temporary()), address  # a certificate of its own
        assert tls_without_certificate(address), address
    for port in http_ports(client):  # Dask's HTTP servers: not the dashboard, no page
        for path in ("/", "/health", "/metrics", "/info/main/workers.html", "/proxy/8787/x"):
            with socket.create_connection(("127.0.0.1", port), REFUSED_WITHIN) as s:
                s.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
                reply = s.recv(100)
            assert reply.startswith(b"HTTP/1.1 404"), (port, path, reply)


def http_ports(client) -> list[int]:
    """The ports Dask's HTTP servers listen on: the scheduler's and each worker's."""
    info = client.scheduler_info()
    ports = [info.get("services", {}).get("dashboard")]
    ports += [w.get("services", {}).get("dashboard") for w in info["workers"].values()]
    ports = [p for p in ports if p]
    assert 8787 not in ports and ports, ports
    return ports
