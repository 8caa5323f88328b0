"""What a student's shell on the hub can reach: run as a student unix user, it lists every
listening socket on the machine (/proc/net/tcp, tcp6; /proc/net/unix, abstract ones too)
and tries each with the client that speaks its protocol:

- HTTP: ``GET`` of each of PATHS (redirects followed on the same port): closed when every
  answer is 401, 403, 404 or 405, or a redirect to a login (the hub's, its OAuth);
- Dask: ``distributed``'s own connect and an ``identity`` request: closed when refused
  (a TLS cluster refuses a client without its certificate);
- ZeroMQ (a Jupyter kernel's channels): a ``kernel_info_request`` without the key on a
  DEALER socket and a subscription to everything on a SUB socket: closed when nothing
  comes back but our own frames (the heartbeat's echo);
- anything else: a raw connect: closed when refused, or when nothing but a TLS alert or
  silence comes back.

``python hub_probe.py [--path PATH]... [--socket PATH]... [INODE...]``: the unix sockets
at these paths, then only the sockets with these inodes, in this order; without inodes,
every socket but the user's own. One JSON line per socket: kind,
address, inode, protocol, served (bool), detail.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import sys
from pathlib import Path

TIMEOUT = 1.5  # s per attempt
LISTEN = "0A"  # /proc/net/tcp's state for a listening socket
ACCEPTS = 0x10000  # /proc/net/unix's flag for a listening socket (__SO_ACCEPTCON)
ZMTP = b"\xff\x00\x00\x00\x00\x00\x00\x00"  # a ZeroMQ peer's greeting begins so
LOGIN = re.compile(r"/login|oauth", re.I)
# What a student would ask for: the root, JupyterHub's and the proxy's APIs, a Jupyter
# server's; ``--path`` adds more (a classmate's server, a course's formgrader).
PATHS = ["/", "/hub/api/users", "/api/routes", "/api/contents", "/api/kernels", "/api/status"]


def own_inodes() -> set[int]:
    """The sockets of this user's own processes (the only ones /proc lets it see)."""
    found = set()
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(int(target[8:-1]))
    return found


def tcp_listeners() -> list[dict]:
    found = []
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != LISTEN:
                continue
            hexhost, hexport = fields[1].split(":")
            raw = bytes.fromhex(hexhost)
            # /proc prints each 32-bit word in host order (little-endian here)
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            host = socket.inet_ntop(family, raw)
            if host in ("0.0.0.0", "::"):
                host = "127.0.0.1" if family == socket.AF_INET else "::1"
            found.append(
                {"kind": name, "address": (host, int(hexport, 16)), "inode": int(fields[9])}
            )
    return found


def unix_listeners() -> list[dict]:
    found = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) < 8 or not int(fields[3], 16) & ACCEPTS:
            continue
        path = fields[7]
        address = "\0" + path[1:] if path.startswith("@") else path
        found.append({"kind": "unix", "address": address, "inode": int(fields[6]), "path": path})
    return found


def connect(entry: dict) -> socket.socket:
    if entry["kind"] == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    else:
        family = socket.AF_INET6 if entry["kind"] == "tcp6" else socket.AF_INET
        s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(TIMEOUT)
    try:
        s.connect(entry["address"])
    except BaseException:
        s.close()
        raise
    return s


def first_bytes(entry: dict, send: bytes = b"") -> bytes:
    """What the socket says after ``send`` (or on its own), within the timeout."""
    with connect(entry) as s:
        if send:
            s.sendall(send)
        data = b""
        try:
            while len(data) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (TimeoutError, ConnectionResetError):
            pass
        return data


def http_get(entry: dict, path: str, hops: int = 4) -> tuple[bool, str]:
    reply = first_bytes(entry, f"GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
    head = reply.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    status = int(head.split()[1]) if head.startswith("HTTP/") else 0
    location = re.search(r"^location:\s*(\S+)", head, re.I | re.M)
    where = location.group(1) if location else ""
    if status in (401, 403, 404, 405):
        return False, f"{path} {status}"
    if 300 <= status < 400 and LOGIN.search(where):
        return False, f"{path} {status} to a login"
    if 300 <= status < 400 and hops and where.startswith("/"):
        return http_get(entry, where, hops - 1)
    return True, f"{path} {status} -> {where[:60]}"


def http(entry: dict) -> tuple[bool, str]:
    """Every path of PATHS (and the ones given): served when any page is."""
    said = []
    for path in PATHS:
        served, detail = http_get(entry, path)
        if served:
            return True, f"HTTP {detail}"
        said.append(detail.split()[-1] if detail.endswith(("401", "403", "404", "405")) else detail)
    return False, "HTTP " + ", ".join(sorted(set(said)))


def dask(entry: dict) -> tuple[bool, str]:
    from distributed.comm import connect as dask_connect

    host, port = entry["address"][:2]

    async def attempt(scheme: str) -> str:
        comm = await dask_connect(f"{scheme}://{host}:{port}", timeout=TIMEOUT * 2)
        try:
            await comm.write({"op": "identity"})
            return str(await comm.read())[:80]
        finally:
            comm.abort()

    try:
        return True, f"Dask answered: {asyncio.run(attempt('tcp'))}"
    except Exception as exc:  # refused: a TLS cluster, or not Dask
        return False, f"Dask refused ({type(exc).__name__})"


def zmq_kernel(entry: dict) -> tuple[bool, str]:
    import zmq

    if entry["kind"] == "unix":
        url = "ipc://" + entry["address"]
    else:
        url = "tcp://{}:{}".format(*entry["address"][:2])
    context = zmq.Context()
    try:
        header = json.dumps({"msg_id": "probe", "msg_type": "kernel_info_request"}).encode()
        ours = [b"<IDS|MSG>", b"", header, b"{}", b"{}", b"{}"]
        dealer = context.socket(zmq.DEALER)
        sub = context.socket(zmq.SUB)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        for s in (dealer, sub):
            s.linger = 0
            s.connect(url)
        dealer.send_multipart(ours)
        poller = zmq.Poller()
        poller.register(dealer, zmq.POLLIN)
        poller.register(sub, zmq.POLLIN)
        for s, _ in poller.poll(TIMEOUT * 2000):
            frames = s.recv_multipart()
            if frames != ours:  # the heartbeat echoes what it gets: nothing of a kernel's
                return True, f"ZeroMQ answered: {frames[:3]!r}"[:120]
        return False, "ZeroMQ: no answer without the key"
    finally:
        context.destroy(linger=0)


def probe(entry: dict) -> dict:
    out = {k: v for k, v in entry.items() if k != "address"}
    out["address"] = entry.get("path") or "{}:{}".format(*entry["address"][:2])
    try:
        greeting = first_bytes(entry)
    except OSError as exc:
        return {**out, "protocol": "none", "served": False, "detail": f"refused: {exc}"}
    if greeting.startswith(ZMTP[:1]) and len(greeting) >= 10 and greeting[9:10] == b"\x7f":
        served, detail = zmq_kernel(entry)
        return {**out, "protocol": "zmq", "served": served, "detail": detail}
    if greeting:  # a server that speaks first: Dask's comm greets with its handshake
        if entry["kind"] != "unix" and dask(entry)[0]:
            return {**out, "protocol": "dask", "served": True, "detail": dask(entry)[1]}
        return {**out, "protocol": "raw", "served": True, "detail": f"says {greeting[:40]!r}"}
    try:
        reply = first_bytes(entry, b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
    except OSError as exc:
        return {**out, "protocol": "none", "served": False, "detail": f"refused: {exc}"}
    if reply.startswith(b"HTTP/"):
        served, detail = http(entry)
        return {**out, "protocol": "http", "served": served, "detail": detail}
    if entry["kind"] != "unix":  # a TLS server (Dask's) waits for a client's hello
        served, detail = dask(entry)
        if served or not reply or reply.startswith(b"\x15\x03"):  # nothing, or TLS's alert
            return {**out, "protocol": "dask", "served": served, "detail": detail}
    if reply:
        return {**out, "protocol": "raw", "served": True, "detail": f"said {reply[:40]!r}"}
    return {**out, "protocol": "raw", "served": False, "detail": "accepted, said nothing"}


def main(argv: list[str]) -> int:
    while "--path" in argv:
        at = argv.index("--path")
        PATHS.append(argv[at + 1])
        del argv[at : at + 2]
    named = []  # sockets of another network namespace (a sandboxed kernel's): by path
    while "--socket" in argv:
        at = argv.index("--socket")
        named.append({"kind": "unix", "address": argv[at + 1], "inode": 0, "path": argv[at + 1]})
        del argv[at : at + 2]
    for entry in named:
        print(json.dumps(probe(entry)), flush=True)
    wanted = [int(a) for a in argv]
    every = {e["inode"]: e for e in tcp_listeners() + unix_listeners()}
    if not wanted:
        mine = own_inodes()
        wanted = [inode for inode in every if inode not in mine]
    for inode in wanted:  # in the order given
        if inode in every:
            print(json.dumps(probe(every[inode])), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
