"""The seccomp filter of the task sandbox: no user namespaces, no reach into the command server,
no kernel interfaces a task never needs.

Inside a user namespace of its own a process is root there: it can mount, make network
namespaces and reach kernel code that an unprivileged process never reaches (most recent
privilege-escalation bugs start with ``unshare -Ur``). Running as root, the sandbox drops to an
unprivileged uid, which the host's kernel still lets make user namespaces; bwrap's own
``--disable-userns`` needs ``--unshare-user``, which as root would map the sandbox to the host's
uid 0. So the sandbox loads this filter (``bwrap --seccomp FD``), as Flatpak does:

- ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` in their flags fail with ``EPERM``;
- ``clone3`` fails with ``ENOSYS`` (its flags sit in memory a filter cannot read), so libc falls
  back to ``clone``, which the filter can check;
- ``ptrace``, ``pidfd_getfd`` and ``process_vm_readv``/``writev`` fail with ``EPERM``: the command
  server runs as the task's uid, and a task must not take over its pipes to the host (the server
  is also not dumpable, which the kernel checks for the same calls);
- ``keyctl``, ``add_key``, ``request_key`` (``EPERM``) and ``io_uring_*`` (``ENOSYS``, so programs
  fall back to plain reads): kernel surface no task needs, with a long record of bugs;
- with ``shared_memory=False`` (a sandbox without a cgroup, whose memory pages nothing counts in
  total), ``memfd_create`` and System V ``shmget`` fail with ``ENOSYS`` too; ``/dev/shm`` is a
  size-capped tmpfs either way;
- a system call of another ABI (32-bit, x32) fails with ``EPERM``: its numbers differ.

The program is classic BPF, written out here (no libseccomp binding on PyPI is needed).
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

CLONE_NEWUSER = 0x10000000


@dataclass(frozen=True)
class _Numbers:
    """One machine's ``AUDIT_ARCH_*`` and the system call numbers the filter names."""

    arch: int
    unshare: int
    clone: int
    clone3: int
    ptrace: int
    process_vm_readv: int
    process_vm_writev: int
    add_key: int
    request_key: int
    keyctl: int
    memfd_create: int
    shmget: int
    pidfd_getfd: int = 438
    io_uring: tuple[int, ...] = (425, 426, 427)  # setup, enter, register


_ARCHES = {
    "x86_64": _Numbers(0xC000003E, 272, 56, 435, 101, 310, 311, 248, 249, 250, 319, 29),
    "aarch64": _Numbers(0xC00000B7, 97, 220, 435, 117, 270, 271, 217, 218, 219, 279, 194),
}
_X32_BIT = 0x40000000  # x86_64's x32 ABI: same arch word, numbers with this bit set

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian)
_NR, _ARCH, _ARG0 = 0, 4, 16


class SeccompUnavailable(RuntimeError):
    """No filter for this machine's architecture."""


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def refused_calls(machine: str | None = None, shared_memory: bool = True) -> dict[int, int]:
    """System call number -> the errno the filter answers it with (flag checks aside)."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise SeccompUnavailable(f"no seccomp filter for {machine!r}; known: {sorted(_ARCHES)}")
    n = _ARCHES[machine]
    refused = {nr: errno.ENOSYS for nr in (n.clone3, *n.io_uring)}
    for nr in (n.ptrace, n.pidfd_getfd, n.process_vm_readv, n.process_vm_writev):
        refused[nr] = errno.EPERM
    for nr in (n.add_key, n.request_key, n.keyctl):
        refused[nr] = errno.EPERM
    if not shared_memory:
        refused[n.memfd_create] = refused[n.shmget] = errno.ENOSYS
    return refused


def sandbox_filter(machine: str | None = None, shared_memory: bool = True) -> bytes:
    """The compiled filter (``struct sock_filter`` array) for ``machine`` (default: this one);
    ``shared_memory=False`` also refuses ``memfd_create`` and ``shmget``."""
    machine = machine or platform.machine()
    refused = refused_calls(machine, shared_memory)
    n = _ARCHES[machine]
    eperm = _ERRNO | errno.EPERM
    prog = [
        _insn(_LD_W_ABS, _ARCH),
        _insn(_JEQ_K, n.arch, jt=1),  # our ABI: go on; else refuse
        _insn(_RET_K, eperm),
        _insn(_LD_W_ABS, _NR),
        _insn(_JGE_K, _X32_BIT, jt=0, jf=1),
        _insn(_RET_K, eperm),
    ]
    for nr, code in refused.items():
        prog += [_insn(_JEQ_K, nr, jt=0, jf=1), _insn(_RET_K, _ERRNO | code)]
    prog += [
        _insn(_JEQ_K, n.unshare, jt=2),  # -> check the flags
        _insn(_JEQ_K, n.clone, jt=1),  # -> check the flags
        _insn(_RET_K, _ALLOW),
        _insn(_LD_W_ABS, _ARG0),  # the flags' low 32 bits hold CLONE_NEWUSER
        _insn(_JSET_K, CLONE_NEWUSER, jt=0, jf=1),
        _insn(_RET_K, eperm),
        _insn(_RET_K, _ALLOW),
    ]
    return b"".join(prog)
