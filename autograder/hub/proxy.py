"""The hub's proxy: the Python port of configurable-http-proxy, with room for a class that
arrives at once. Run as a script (``python proxy.py ARGS``, what JupyterHub starts): it
needs only tornado and the proxy's package, not the course.

The proxy forwards with tornado's ``AsyncHTTPClient``, which by default has 10 requests in
flight and lets a queued one wait 20 s before answering 503. The hub holds a request to
start a server open for up to 10 s, so 30 students starting theirs together got 503s
(benchmarks/hub_class.py counted 7 of 30). Here the client may have ``MAX_CLIENTS``
requests in flight: none waits in a queue.
"""

from __future__ import annotations

MAX_CLIENTS = 1000  # requests the proxy forwards at once (tornado's default: 10)


def main() -> None:
    from configurable_http_proxy.cli import main as proxy
    from tornado.httpclient import AsyncHTTPClient

    AsyncHTTPClient.configure(None, max_clients=MAX_CLIENTS)
    proxy()


if __name__ == "__main__":
    main()
