"""The hub's proxy (autograder/hub/proxy.py) under a class arriving at once: every request
is forwarded, none answered 503 for waiting in the proxy's queue. A slow target stands for
the hub holding server starts open; the plain configurable-http-proxy command, run the
same way, shows that the burst is one that its default of 10 requests in flight fails."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from helpers import ROOT

from autograder.hub.config import free_port

pytestmark = [pytest.mark.hub, pytest.mark.slow]  # make hub: the hub lane

PROXY = ROOT / "autograder" / "hub" / "proxy.py"
PLAIN = Path(sys.executable).parent / "configurable-http-proxy"
HELD = 11.0  # s the target holds each request: past 2 x 10 in flight, a queue waits > 20 s
BURST = 25


class Slow(BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(HELD)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *_):
        pass


def burst(command: list[str]) -> list[int]:
    """The status of each of BURST requests sent at once through the proxy ``command``."""
    target = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=target.serve_forever, daemon=True).start()
    port, api = free_port(), free_port()
    args = ["--ip", "127.0.0.1", "--port", str(port), "--api-ip", "127.0.0.1"]
    args += ["--api-port", str(api)]
    args += ["--default-target", f"http://127.0.0.1:{target.server_address[1]}"]
    env = {**os.environ, "CONFIGPROXY_AUTH_TOKEN": "test"}
    proxy = subprocess.Popen([*command, *args], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        routes = urllib.request.Request(
            f"http://127.0.0.1:{api}/api/routes", headers={"Authorization": "token test"}
        )
        while True:  # until its API answers
            try:
                urllib.request.urlopen(routes, timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "the proxy did not start"
                time.sleep(0.2)

        def get(_):
            try:
                return urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=120).status
            except urllib.error.HTTPError as exc:
                return exc.code

        with concurrent.futures.ThreadPoolExecutor(BURST) as pool:
            return list(pool.map(get, range(BURST)))
    finally:
        os.killpg(proxy.pid, signal.SIGTERM)
        proxy.wait(timeout=10)
        target.shutdown()


def test_the_hubs_proxy_forwards_a_whole_class_at_once_and_the_plain_one_does_not():
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # both at once: 12 s, not 35
        ours = pool.submit(burst, [sys.executable, "-I", str(PROXY)])
        plain = pool.submit(burst, [str(PLAIN)])
        ours, plain = ours.result(), plain.result()
    assert ours == [200] * BURST, ours
    assert 503 in plain, plain  # the burst is one the default fails
