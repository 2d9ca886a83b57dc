"""ASGI middleware that keeps the clients of ``pixelrl serve`` in bounds, whatever they send.

The server (:mod:`pixelrl.serve`) has no authentication, so every request is a stranger's:

- :class:`RefuseForeignOrigins`: a request that carries an ``Origin`` header comes from a web
  page in a browser; unless the page is on loopback (or its origin was allowed by name) it gets
  403, HTTP and WebSocket handshakes alike. Without this, any site open in a local browser could
  open ``ws://127.0.0.1:8000/ws`` and drive an env (browsers do not apply CORS to WebSockets).
  Clients that are not browsers send no ``Origin`` and pass.
- :class:`RefuseForeignHosts`: on a loopback server, a request whose ``Host`` header names
  anything but loopback gets 403. That is DNS rebinding: a page of ``evil.example`` whose name
  now resolves to 127.0.0.1 is same-origin with the server, so its GETs carry no ``Origin``.
- :class:`BodyLimit`: an HTTP body over the cap gets 413 before anything parses it, one that is
  not UTF-8 400 (WebSocket messages are capped by the server's ``ws_max_size``).
- :class:`CloseIdleWebSockets`: a WebSocket that sends nothing for ``timeout_s`` while the server
  waits for it is closed, and its session (and env) with it, so forgotten clients cannot hold
  every session.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Iterable
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
# a policy thinks for seconds between steps; a client gone for minutes has forgotten its session
DEFAULT_IDLE_TIMEOUT_S = 300


# -- origins ------------------------------------------------------------------------------------
def origin(text: str) -> str:
    """``text`` as a browser writes an ``Origin``: ``scheme://host[:port]``, lower case, the
    scheme's default port and a trailing ``/`` left out; ``ValueError`` if it is not one (a path,
    a user, ``null``)."""
    if not isinstance(text, str) or len(text) > 2048:
        raise ValueError(f"not an origin: {str(text)[:60]!r}")
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError:
        raise ValueError(f"not an origin (bad host or port): {text[:60]!r}") from None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError(f"not an origin: {text[:60]!r} (expected http(s)://host[:port])")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username is not None:
        raise ValueError(f"an origin has no path, query or user: {text[:60]!r}")
    host = parts.hostname.lower()
    shown = f"[{host}]" if ":" in host else host
    if port is None or port == DEFAULT_PORTS[parts.scheme]:
        return f"{parts.scheme}://{shown}"
    return f"{parts.scheme}://{shown}:{port}"


def is_loopback_name(host: str) -> bool:
    """``localhost`` or a loopback address, by name only (never resolved: a name that resolves to
    loopback is how DNS rebinding gets in)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_loopback_origin(value: str) -> bool:
    """A page served from this machine (:func:`is_loopback_name` of the origin's host)."""
    return is_loopback_name(urlsplit(value).hostname or "")


class RefuseForeignOrigins:
    """403 for an HTTP request or WebSocket handshake whose ``Origin`` is neither loopback nor in
    ``allowed``."""

    def __init__(self, app, allowed: Iterable[str] = ()) -> None:
        self.app, self.allowed = app, frozenset(origin(o) for o in allowed)

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            refused = self._refused(scope)
            if refused is not None:
                detail = (
                    f"Origin {refused[:100]} is not allowed: this server takes requests from "
                    "pages on loopback and from clients that are not browsers (pixelrl serve "
                    "--allow-origin ORIGIN adds one)"
                )
                return await _forbid(scope, send, detail)
        return await self.app(scope, receive, send)

    def _refused(self, scope) -> str | None:
        """The first ``Origin`` header that is not allowed, as sent; ``None`` if all are."""
        for name, raw in scope.get("headers", ()):
            if name != b"origin":
                continue
            text = raw.decode("latin-1")
            try:
                value = origin(text)
            except ValueError:
                return text
            if not (is_loopback_origin(value) or value in self.allowed):
                return text
        return None


def is_loopback_host(header: str) -> bool:
    """A ``Host`` header (``host[:port]``, ``[v6][:port]``) that names loopback, by name only."""
    try:
        return is_loopback_name(urlsplit("//" + header.strip()).hostname or "")
    except ValueError:
        return False


class RefuseForeignHosts:
    """403 for an HTTP request or WebSocket handshake whose ``Host`` is not loopback by name: for
    a server that listens on loopback only, where every real client writes a loopback ``Host``."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] in ("http", "websocket"):
            for name, raw in scope.get("headers", ()):
                text = raw.decode("latin-1")
                if name == b"host" and not is_loopback_host(text):
                    detail = (
                        f"Host {text[:100]} is not this loopback server's name (a page whose "
                        "name was made to point here?): use localhost or 127.0.0.1"
                    )
                    return await _forbid(scope, send, detail)
        return await self.app(scope, receive, send)


async def _forbid(scope, send, detail: str) -> None:
    """403 with ``detail``: an HTTP response, or the refusal of a WebSocket handshake."""
    if scope["type"] == "http":
        return await refuse(send, 403, detail)
    return await _refuse_handshake(scope, send, detail)


async def _refuse_handshake(scope, send, detail: str) -> None:
    if "websocket.http.response" in scope.get("extensions", {}):  # 403 with the reason
        body = json.dumps({"detail": detail}).encode()
        headers = [(b"content-type", b"application/json")]
        await send({"type": "websocket.http.response.start", "status": 403, "headers": headers})
        await send({"type": "websocket.http.response.body", "body": body})
    else:  # closing before the handshake is a plain 403
        await send({"type": "websocket.close", "code": 1008})


# -- request bodies -----------------------------------------------------------------------------
class BodyLimit:
    """An HTTP request body over ``limit`` bytes gets 413, one that is not UTF-8 400, before any
    parsing."""

    def __init__(self, app, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.limit:
                return await refuse(send, 413, f"request body over {self.limit} bytes")
        body = b"".join(chunks)
        try:  # FastAPI answers a non-UTF-8 body with a 500 (it cannot encode its own error)
            body.decode("utf-8")
        except UnicodeDecodeError:
            return await refuse(send, 400, "request body is not UTF-8")
        done = False

        async def replay():
            nonlocal done
            if not done:
                done = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


async def refuse(send, status: int, detail: str) -> None:
    """An HTTP answer ``{"detail": detail}`` with ``status``, sent before the app sees anything."""
    text = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(text)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text})


# -- idle WebSockets ----------------------------------------------------------------------------
class CloseIdleWebSockets:
    """Closes a WebSocket (code 1000, reason ``idle for more than N s``) once the app has waited
    ``timeout_s`` for its next message: the app sees a client disconnect and ends the session as
    it ends any other. Only the time the server waits on the client counts, so a long step never
    closes its session; pings (answered by the protocol, below the app) do not keep it open."""

    def __init__(self, app, timeout_s: float) -> None:
        self.app, self.timeout_s = app, timeout_s

    async def __call__(self, scope, receive, send):
        import asyncio  # here: every pixelrl command imports this module for serve's flags

        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        idle = False
        accepted = False

        async def receive_or_time_out():
            nonlocal idle
            if not accepted:  # the handshake's own "websocket.connect"
                return await receive()
            try:
                # cancelling the server's receive loses nothing (uvicorn's is a queue's get),
                # and the connection closes next anyway
                return await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                idle = True
                return {"type": "websocket.disconnect", "code": 1000}

        async def send_with_reason(message):
            nonlocal accepted
            if message["type"] == "websocket.accept":
                accepted = True
            elif message["type"] == "websocket.close" and idle:
                reason = f"idle for more than {self.timeout_s:g} s"
                message = {**message, "code": 1000, "reason": reason}
            await send(message)

        return await self.app(scope, receive_or_time_out, send_with_reason)


# -- clients that leave ---------------------------------------------------------------------------
class QuietDisconnects:
    """A client that leaves is one info line, not a traceback: OpenEnv closes the WebSocket after
    the client has already gone, and uvicorn raised ``ClientDisconnected`` for that close (an
    ERROR with a traceback, once a client). A close sent after the client's own disconnect is
    dropped (nobody is there to get it). Outside :class:`CloseIdleWebSockets`, so it hears real
    disconnects only, not idle ones, whose close must be sent."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)
        from uvicorn.protocols.utils import ClientDisconnected

        gone = False

        async def receive_noting_departure():
            nonlocal gone
            message = await receive()
            gone = gone or message["type"] == "websocket.disconnect"
            return message

        async def send_unless_gone(message):
            if message["type"] != "websocket.close":
                return await send(message)
            if gone:
                return None
            try:
                await send(message)
            except ClientDisconnected:  # it left while the app was closing
                pass

        try:
            return await self.app(scope, receive_noting_departure, send_unless_gone)
        finally:
            client = scope.get("client") or ("?", "?")
            logging.getLogger("uvicorn.error").info(  # beside uvicorn's own lines
                "session of %s:%s ended", client[0], client[1]
            )


# -- validation errors that say why -------------------------------------------------------------
class SayWhyInvalid:
    """OpenEnv answers a WebSocket message its models refuse with the message "Invalid message"
    (code VALIDATION_ERROR) and the reasons in a field its clients do not show; here the first
    reasons join the message, so a client reads e.g. "Invalid message: data.seed: Input should
    be a valid integer"."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":
            return await self.app(scope, receive, send)

        async def send_with_reasons(message):
            text = message.get("text") if message["type"] == "websocket.send" else None
            if text and '"VALIDATION_ERROR"' in text:
                message = {**message, "text": _with_reasons(text)}
            await send(message)

        return await self.app(scope, receive, send_with_reasons)


def _with_reasons(text: str) -> str:
    try:
        reply = json.loads(text)
        data = reply["data"]
        reasons = [
            f"{'.'.join(str(part) for part in error.get('loc', ())) or 'message'}: "
            f"{error.get('msg', '?')}"
            for error in data.get("errors", [])[:3]
        ]
    except (ValueError, KeyError, TypeError, AttributeError):
        return text  # not the reply we know: left as it is
    if reasons:
        data["message"] = f"{data.get('message', 'Invalid message')}: {'; '.join(reasons)}"
    return json.dumps(reply)
