"""The allocator setting every training process shares (the learner and its env worker)."""

from __future__ import annotations


def keep_freed_memory() -> None:
    """Ask glibc's malloc to keep freed blocks of up to 32 MB for reuse (Linux only; no-op else).

    By default glibc hands big freed blocks back to the kernel, so every training step page-faults
    its activations back in. The threshold adapts, but by chance: of two identical GUI runs, one
    paid 4.7M minor faults, the other 71.6M (114 s of system time in a 15-minute budget). With a
    fixed threshold a behaviour-cloning step of the pointer policy took 0.2 faults instead of
    10,200 and 179 ms of CPU instead of 197 (issue 5)."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # malloc.h
        libc.mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024)  # glibc's largest
        libc.mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024)
    except (OSError, AttributeError):  # not glibc (musl has no mallopt): nothing to tune
        return
