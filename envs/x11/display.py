"""The X display an env acts on: a private Xvfb it starts, or an existing one it was allowed to use.

A private display is the default, and when we are root it runs as ``nobody``: ``Xvfb -displayfd`` picks a free display number itself (no race
between two envs choosing the same ``:N``) and writes it back on a pipe once the server accepts
connections. Attaching to a display someone else owns (a desktop at ``:0``) needs
``allow_existing_display=True``: the env would move that user's real mouse and type into their
windows.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import time

from pixelrl.envs.processes import ChildProcess

XVFB_INSTALL_HINT = (
    "install the X virtual framebuffer: `apt-get install xvfb` on Debian/Ubuntu "
    "(or run scripts/install_system_deps.sh)"
)
XVFB_MEMORY_BYTES = 2 << 30  # address space of a private Xvfb: its clients are the task's apps
_DISPLAY_NAME = re.compile(r"^(?:[\w.-]*):(\d+)(?:\.\d+)?$")


class DisplayError(RuntimeError):
    """The display cannot be started or used (Xvfb missing, refused, or died)."""


def find_xvfb(xvfb_path: str | None = None) -> str:
    """The Xvfb executable: ``xvfb_path``, else ``$PIXELRL_XVFB``, else ``Xvfb`` on PATH."""
    wanted = xvfb_path or os.environ.get("PIXELRL_XVFB") or "Xvfb"
    found = shutil.which(wanted)
    if found is None:
        raise DisplayError(f"Xvfb not found (looked for {wanted!r}): {XVFB_INSTALL_HINT}")
    return found


class XDisplay:
    """One X display: ``name`` (``":N"``), ``size`` (W, H) and ``depth``; :meth:`close` stops it."""

    def __init__(
        self,
        size: tuple[int, int] = (1280, 800),
        depth: int = 24,
        display: str | None = None,
        allow_existing_display: bool = False,
        xvfb_path: str | None = None,
        start_timeout_s: float = 10.0,
    ) -> None:
        self.size = (int(size[0]), int(size[1]))
        self.depth = int(depth)
        self.server: ChildProcess | None = None
        if display is not None:
            if not allow_existing_display:
                raise DisplayError(
                    f"refusing to drive the existing display {display!r}: the env would move its "
                    "mouse and type into its windows. Pass allow_existing_display=True to do so "
                    "on purpose, or leave display=None to get a private Xvfb."
                )
            if not _DISPLAY_NAME.match(display):
                raise DisplayError(f"display must look like ':0' or 'host:0.0', got {display!r}")
            self.name = display
            self.owned = False
            self.size = _screen_size(display, start_timeout_s)
            return
        if self.depth not in (8, 16, 24, 30):
            raise DisplayError(f"depth must be one of 8, 16, 24, 30, got {depth}")
        if min(self.size) < 16 or max(self.size) > 8192:
            raise DisplayError(f"screen size must lie in 16..8192 pixels a side, got {self.size}")
        self.owned = True
        self.name = self._start_xvfb(find_xvfb(xvfb_path), start_timeout_s)

    def _start_xvfb(self, xvfb: str, timeout_s: float) -> str:
        read_fd, write_fd = os.pipe()
        width, height = self.size
        argv = [
            xvfb,
            "-displayfd",
            str(write_fd),
            "-screen",
            "0",
            f"{width}x{height}x{self.depth}",
            "-nolisten",
            "tcp",
            "-noreset",
        ]
        if os.geteuid() == 0:
            # The task's apps are this server's clients: whatever a bug in it lets a client do,
            # it must not do as root. /tmp/.X11-unix is made here, as root, as Xvfb would.
            from pixelrl.envs.x11.sandbox import drop_root_argv

            os.makedirs("/tmp/.X11-unix", exist_ok=True)
            os.chmod("/tmp/.X11-unix", 0o1777)  # as on a desktop (1755 when root's Xvfb made it)
            argv = drop_root_argv() + argv
        # Clients allocate the server's memory (pixmaps, windows): bound it like a task process.
        prlimit = shutil.which("prlimit")
        if prlimit is not None:
            argv = [prlimit, f"--as={XVFB_MEMORY_BYTES}", "--"] + argv
        try:
            self.server = ChildProcess(argv, pass_fds=(write_fd,), name="Xvfb")
        except OSError as e:
            raise DisplayError(f"cannot start {xvfb}: {e}; {XVFB_INSTALL_HINT}") from None
        finally:
            os.close(write_fd)
        try:
            number = b""
            deadline = time.monotonic() + timeout_s
            while not number.endswith(b"\n"):
                left = deadline - time.monotonic()
                ready, _, _ = select.select([read_fd], [], [], max(left, 0))
                if not ready:
                    raise DisplayError(f"Xvfb did not start within {timeout_s:.0f} s")
                chunk = os.read(read_fd, 16)
                if not chunk:
                    raise DisplayError(
                        f"Xvfb exited before it was ready (exit code {self.server.popen.poll()}); "
                        f"command: {' '.join(argv)}"
                    )
                number += chunk
        except BaseException:
            self.server.kill()
            raise
        finally:
            os.close(read_fd)
        return f":{int(number.strip())}"

    def alive(self) -> bool:
        return self.server.alive() if self.server is not None else True

    def close(self) -> None:
        """Stop the private Xvfb (an attached display is left alone)."""
        if self.server is not None:
            self.server.kill()
            self.server = None

    def __repr__(self) -> str:
        owner = "private Xvfb" if self.owned else "attached"
        return f"XDisplay({self.name!r}, {self.size[0]}x{self.size[1]}, {owner})"


def _screen_size(name: str, timeout_s: float) -> tuple[int, int]:
    """The display's size, asked through a window reader (a helper with a deadline: whoever
    else is on that display may hold its server)."""
    from pixelrl.envs.x11.helper import DisplayTimeout, HelperError
    from pixelrl.envs.x11.windows import Windows

    try:
        windows = Windows(name, timeout_s=timeout_s)
    except HelperError as e:
        raise DisplayError(f"cannot connect to display {name!r}: {e}") from None
    except DisplayTimeout:
        raise DisplayError(
            f"display {name!r} did not answer within {timeout_s:.0f} s (one of its clients may "
            "hold its X server)"
        ) from None
    try:
        return windows.size
    finally:
        windows.close()
