"""Limits on connections that uvicorn lacks: a deadline for reading each request, and a cap on the connections
one peer address holds open.

uvicorn (0.55) closes a connection only when it sits idle *after* a response (``timeout_keep_alive``). A client
that connects and sends nothing, or trickles a request header a byte at a time, holds its socket forever: 200
such sockets stayed open for more than 20 s in the issue-45 audit. Its ``limit_concurrency`` counts every
connection and answers the next *request* 503, so held sockets would lock real clients out rather than be
dropped. So the server's HTTP protocol is uvicorn's own h11 protocol with two additions:

- **request deadline**: from the moment a connection opens (or the first byte of its next request arrives), the
  request line, headers and body must all arrive within ``request_timeout_s``, else the connection is closed;
- **per-peer cap**: a connection that would be the peer address's ``max_per_client + 1``-th open one is answered
  ``503`` and closed at once, before anything is read.

Waiting for a request after a response stays uvicorn's ``timeout_keep_alive`` (``serve --idle-timeout``).
"""
from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

_BUSY = b"too many open connections from this address"
REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
           b"retry-after: 5\r\ncontent-length: %d\r\n\r\n%s" % (len(_BUSY), _BUSY))
# the request is read completely once the client's side of h11's state machine is past sending its body
_READ = frozenset({h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR})


def guarded_protocol(request_timeout_s: float, max_per_client: int) -> type[H11Protocol]:
    """An h11 protocol class for ``uvicorn.Config(http=...)`` with these limits; its count of open connections
    per peer address belongs to the class, so make one class per server."""
    open_by_peer: Counter[str] = Counter()

    class GuardedH11Protocol(H11Protocol):
        _peer: str | None = None  # set while this connection counts against its peer's cap
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            peer = self.client[0] if self.client else ""
            if open_by_peer[peer] >= max_per_client:
                transport.write(REFUSED)
                transport.close()
                return
            open_by_peer[peer] += 1
            self._peer = peer
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            if self._peer is not None:
                open_by_peer[self._peer] -= 1
                if open_by_peer[self._peer] <= 0:
                    del open_by_peer[self._peer]
                self._peer = None
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            if self._deadline is None and self.conn.their_state not in _READ:
                self._arm()  # the first bytes of the next request on a kept-alive connection
            super().data_received(data)
            if self.conn.their_state in _READ:
                self._disarm()

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(request_timeout_s, self._request_timed_out)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _request_timed_out(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
