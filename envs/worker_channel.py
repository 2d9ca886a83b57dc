"""A Unix socket between the driver and a Ray env worker on its machine, for its steps.

A call to a Ray actor costs ~2.3 ms of latency on a 2-core machine however little it carries
(task submission, gRPC both ways, the actor's task loop), and a vector env pays it every step:
at 16 envs an actor it was a third of the step (docs/results/ray_envs.md). A round trip over a
Unix socket costs ~11 µs. So Ray still places, starts and replaces the worker, and a worker that
finds the driver's socket (it is on the same machine) serves its ``reset`` / ``step`` over it:
one message each way a step, the request and its answer pickled, the large observation arrays
beside it in shared memory (``pixelrl.envs.shared_obs``). A worker on another machine does not
find the socket and answers through Ray as before.

In the worker the socket is served by the thread its envs run on (``EnvThread``), which also
runs the calls that come through Ray: a step costs no hand-over between threads, each a wake-up
that waits for a free core on a busy machine.

The socket lives in a directory only this user can enter, and its name is removed as soon as
the worker has connected (or never will): no other user can speak on it, nothing is left
behind. The other end is our own worker, started by this driver from the same code: its answers
are unpickled as Ray's own are.
"""

from __future__ import annotations

import os
import pickle
import queue
import selectors
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import cloudpickle  # gymnasium's own dependency: an env's info may hold classes sent by value

SOCKET_DIR: str | None = None  # where listeners go (None: the system's temporary directory)
_HEADER = struct.Struct("!Q")  # the length of the pickle that follows


def encode(message: Any) -> bytes:
    """``message`` as a channel sends it: its pickle, preceded by its length."""
    payload = cloudpickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(payload)) + payload


class Channel:
    """One end of a connected socket: whole pickled messages, each preceded by its length."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, message: Any) -> None:
        self.send_encoded(encode(message))

    def send_encoded(self, data: bytes) -> None:
        """Send a message ``encode`` made (in one write: the other end wakes once, for the
        whole message, not for its length first)."""
        self.sock.sendall(data)

    def recv(self, timeout: float | None = None) -> Any:
        """The next message; ``TimeoutError`` when none came within ``timeout`` seconds (the
        stream is then mid-message: close it), ``EOFError`` when the other end is gone."""
        self.sock.settimeout(timeout)
        (size,) = _HEADER.unpack(self._read(_HEADER.size))
        return pickle.loads(self._read(size))

    def _read(self, size: int) -> bytearray:
        buffer = bytearray(size)
        view, got = memoryview(buffer), 0
        while got < size:
            count = self.sock.recv_into(view[got:])
            if count == 0:
                raise EOFError("the other end closed the channel")
            got += count
        return buffer

    def close(self) -> None:
        self.sock.close()


class Listener:
    """The driver's side before the worker connects: a listening socket in a private dir."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, "worker")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(1)

    @classmethod
    def create(cls) -> Listener | None:
        """A new listener, or None where no Unix socket can be made (then Ray carries all)."""
        if not hasattr(socket, "AF_UNIX") or (SOCKET_DIR and not os.path.isdir(SOCKET_DIR)):
            return None
        directory = tempfile.mkdtemp(prefix="pixelrl-env-", dir=SOCKET_DIR)  # mode 0700
        try:
            return cls(directory)
        except OSError:  # a path too long for a socket name, a filesystem without sockets
            shutil.rmtree(directory, ignore_errors=True)
            return None

    def accept(self, timeout: float) -> Channel | None:
        """The worker's connection (it connected before it answered, so this does not wait
        long), or None; the listener is closed and its name removed either way."""
        try:
            self.sock.settimeout(timeout)
            conn, _ = self.sock.accept()
        except OSError:
            return None
        finally:
            self.close()
        conn.settimeout(None)
        return Channel(conn)

    def close(self) -> None:
        self.sock.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def connect(path: str) -> Channel | None:
    """The worker's side: the driver's socket at ``path``, or None when it is not on this
    machine (or not there any more)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return Channel(sock)


class EnvThread:
    """The one thread a worker's envs run on: it runs the calls handed to it (``submit``, from
    Ray's thread) and answers the requests of the channels it serves (``serve``) itself."""

    def __init__(self, name: str = "env") -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._wake, self._waker = socket.socketpair()  # a byte on it: a job is waiting
        self._wake.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._wake, selectors.EVENT_READ)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def here(self) -> bool:
        """Whether the caller is this thread."""
        return threading.get_ident() == self._thread.ident

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future:
        """Run ``fn(*args, **kwargs)`` on this thread; its result (or error) in the future."""
        future: Future = Future()
        self._jobs.put((future, fn, args, kwargs))
        self._waker.send(b"\0")
        return future

    def serve(self, channel: Channel, answer: Callable[[Channel], bool]) -> None:
        """From now on call ``answer(channel)`` on this thread whenever a request is waiting on
        ``channel`` (it reads the request and sends the answer), until it returns False."""
        served = (channel, answer)
        self.submit(self._selector.register, channel.sock, selectors.EVENT_READ, served).result()

    def _run(self) -> None:
        while True:
            for key, _ in self._selector.select():
                if key.data is None:
                    self._run_jobs()
                    continue
                channel, answer = key.data
                try:
                    more = answer(channel)
                except Exception:  # noqa: BLE001 - a request it cannot read: the driver sees EOF
                    more = False
                if not more:  # the channel is done; the jobs from Ray still run here
                    self._selector.unregister(channel.sock)
                    channel.close()

    def _run_jobs(self) -> None:
        try:
            self._wake.recv(4096)
        except BlockingIOError:  # drained by an earlier turn
            pass
        while True:
            try:
                future, fn, args, kwargs = self._jobs.get_nowait()
            except queue.Empty:
                return
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as err:  # noqa: BLE001 - the caller's future raises it
                    future.set_exception(err)
