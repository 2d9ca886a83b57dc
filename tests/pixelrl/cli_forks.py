"""Run many command lines of ``pixelrl`` as separate processes, without paying Python's start-up
for each: one server process imports torch, transformers and pixelrl once, then forks a child per
command line. The child runs the same ``main(argv)`` that ``python -m pixelrl`` runs, in its own
folder, with its own stdout/stderr files; its exit status is the command's.

Why: the CLI error contract has ~150 cases, and a fresh ``python -m pixelrl`` spends ~1.3 s of CPU
importing torch before it reads its arguments: most of the case's cost, and 90 s of the suite.
``test_cli_errors.py`` still runs a few cases as real ``python -m`` subprocesses, so the entry
point itself stays covered.

The server reads one JSON request a line on stdin and answers one JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# "module:function" a request may name: what `python -m MODULE` calls
MAINS = {"pixelrl": "pixelrl.cli:main", "pixelrl.envs.grounding": "pixelrl.envs.grounding:main"}


class ForkedCLI:
    """A server process; ``run`` is thread-safe (requests are served one at a time)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, __file__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        self._lock = threading.Lock()

    def run(self, module: str, argv: list[str], cwd: Path, timeout: float = 120) -> dict:
        """``python -m MODULE *argv`` in ``cwd``: {"rc", "out", "err"}."""
        out, err = cwd / ".cli_stdout", cwd / ".cli_stderr"
        request = {"main": MAINS[module], "argv": argv, "cwd": str(cwd), "out": str(out),
                   "err": str(err), "timeout": timeout}  # fmt: skip
        with self._lock:
            self._proc.stdin.write(json.dumps(request) + "\n")
            self._proc.stdin.flush()
            answer = self._proc.stdout.readline()
        if not answer:
            raise RuntimeError("the forking CLI server died")
        result = {"rc": json.loads(answer)["rc"], "out": out.read_text(), "err": err.read_text()}
        out.unlink()
        err.unlink()
        return result

    def close(self) -> None:
        self._proc.stdin.close()
        self._proc.wait(timeout=30)

    def __enter__(self) -> ForkedCLI:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def user_env() -> dict[str, str]:
    """The environment a user's shell has: no HF_HUB_OFFLINE (a missing checkpoint must not go
    to the hub, online or not)."""
    env = dict(os.environ)
    env.pop("HF_HUB_OFFLINE", None)
    return env


def case_argv(argv: list[str], data: Path | None = None) -> tuple[str, list[str]]:
    """A case's module and arguments: ``{data}`` is the fixture folder; a first ``-g`` means
    ``python -m pixelrl.envs.grounding``."""
    argv = [a.replace("{data}", str(data)) for a in argv]
    return ("pixelrl.envs.grounding", argv[1:]) if argv[0] == "-g" else ("pixelrl", argv)


def run_cases(cases: list[tuple], cwd: Path, data: Path | None = None) -> dict[str, dict]:
    """Each case ``(name, argv, ...)`` run in its own new folder ``cwd/name``, two at a time
    (one server a core): {name: {"rc", "out", "err", "left": what it wrote in its folder}}."""

    def run(i: int, case: tuple) -> dict:
        folder = cwd / case[0]
        folder.mkdir()
        result = (a, b)[i % 2].run(*case_argv(case[1], data), cwd=folder)
        return {**result, "left": sorted(os.listdir(folder))}

    with ForkedCLI(user_env()) as a, ForkedCLI(user_env()) as b, ThreadPoolExecutor(2) as pool:
        return dict(zip([c[0] for c in cases], pool.map(run, range(len(cases)), cases)))


def assert_one_error_line(result: dict, argv: list[str], expected: str) -> None:
    """The CLI's error contract for a case run by :func:`run_cases`: exit status 2, no
    traceback, a last line ``PROG: error: ...`` on stderr holding ``expected``, nothing written."""
    text = result["out"] + result["err"]
    assert "Traceback" not in text and result["rc"] == 2, text
    last = result["err"].strip().splitlines()[-1]
    if argv[0] == "-g":
        prog = "python -m pixelrl.envs.grounding"
    else:
        prog = f"pixelrl {argv[0]}{' nav' if argv[0] == 'bench' else ''}"
    assert last.startswith(f"{prog}: error: ") and expected in last, last
    assert result["left"] == [], f"the failed command wrote {result['left']}"


def _child(request: dict) -> None:
    """In the forked child: become the command, then exit with its status. Never returns."""
    import atexit
    import importlib
    import traceback

    code = 1
    try:
        os.setpgid(0, 0)  # the parent kills the whole group on a timeout (Xvfb, browsers)
        os.chdir(request["cwd"])
        for fd, path in ((1, request["out"]), (2, request["err"])):
            os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        module, function = request["main"].split(":")
        sys.argv = [module, *request["argv"]]
        result = getattr(importlib.import_module(module), function)(request["argv"])
        code = int(result or 0)
    except SystemExit as e:  # what `sys.exit(main())` and argparse do
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if e.code is not None and not isinstance(e.code, int):
            print(e.code, file=sys.stderr)
    except BaseException:  # what the interpreter does with an uncaught exception
        traceback.print_exc()
        code = 1
    finally:
        try:
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _wait(pid: int, timeout: float) -> int:
    import signal
    import time

    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -signal.SIGKILL
        time.sleep(0.01)


def _serve() -> None:
    import gymnasium  # noqa: F401  (the imports every command line would pay for)
    import torch  # noqa: F401
    import transformers  # noqa: F401

    import pixelrl.cli  # noqa: F401
    import pixelrl.envs  # noqa: F401

    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"rc": _wait(pid, request["timeout"])}), flush=True)


if __name__ == "__main__":
    _serve()


def error_table(cases: list[tuple]):
    """A CLI error table's module fixture and its test, one case a parameter: in a test module,
    ``results, test_a_mistake_is_one_error_line = error_table(CASES)`` (pytest collects both by
    the names given there); each case ``(name, argv, expected)`` must be one error line."""
    import pytest

    @pytest.fixture(scope="module")
    def results(tmp_path_factory) -> dict[str, dict]:
        return run_cases(cases, tmp_path_factory.mktemp("cwd"))

    @pytest.mark.parametrize("case", cases, ids=[c[0] for c in cases])
    def test(case, results):
        name, argv, expected = case
        assert_one_error_line(results[name], argv, expected)

    return results, test
