"""A seccomp filter that keeps a task's processes from making user namespaces.

Inside a user namespace of its own a process is root there: it can mount, make network
namespaces and reach kernel code that an unprivileged process never reaches (most recent
privilege-escalation bugs start with ``unshare -Ur``). Running as root, the sandbox drops to the
real ``nobody``, which the host's kernel still lets make user namespaces; bwrap's own
``--disable-userns`` needs ``--unshare-user``, which as root would map the sandbox to the host's
uid 0. So the sandbox loads this filter (``bwrap --seccomp FD``), as Flatpak does:

- ``unshare`` and ``clone`` with ``CLONE_NEWUSER`` in their flags fail with ``EPERM``;
- ``clone3`` fails with ``ENOSYS`` (its flags sit in memory a filter cannot read), so libc falls
  back to ``clone``, which the filter can check;
- a system call of another ABI (32-bit, x32) fails with ``EPERM``: its numbers differ.

The program is classic BPF, written out here (no libseccomp binding on PyPI is needed).
"""

from __future__ import annotations

import errno
import platform
import struct

CLONE_NEWUSER = 0x10000000

# (AUDIT_ARCH_*, unshare, clone, clone3) for each machine we know.
_ARCHES = {
    "x86_64": (0xC000003E, 272, 56, 435),
    "aarch64": (0xC00000B7, 97, 220, 435),
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


def no_user_namespaces(machine: str | None = None) -> bytes:
    """The compiled filter (``struct sock_filter`` array) for ``machine`` (default: this one)."""
    machine = machine or platform.machine()
    if machine not in _ARCHES:
        raise SeccompUnavailable(f"no seccomp filter for {machine!r}; known: {sorted(_ARCHES)}")
    arch, unshare, clone, clone3 = _ARCHES[machine]
    eperm, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.ENOSYS
    prog = [
        _insn(_LD_W_ABS, _ARCH),
        _insn(_JEQ_K, arch, jt=1),  # our ABI: go on; else refuse
        _insn(_RET_K, eperm),
        _insn(_LD_W_ABS, _NR),
        _insn(_JGE_K, _X32_BIT, jt=0, jf=1),
        _insn(_RET_K, eperm),
        _insn(_JEQ_K, clone3, jt=0, jf=1),
        _insn(_RET_K, enosys),
        _insn(_JEQ_K, unshare, jt=2),  # -> check the flags
        _insn(_JEQ_K, clone, jt=1),  # -> check the flags
        _insn(_RET_K, _ALLOW),
        _insn(_LD_W_ABS, _ARG0),  # the flags' low 32 bits hold CLONE_NEWUSER
        _insn(_JSET_K, CLONE_NEWUSER, jt=0, jf=1),
        _insn(_RET_K, eperm),
        _insn(_RET_K, _ALLOW),
    ]
    return b"".join(prog)
