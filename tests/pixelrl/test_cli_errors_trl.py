"""scripts/trl_grpo.py's vLLM passthrough and env options (issue 55): the GRPOConfig is built with
TRL's vllm_* keys, and each wrong value is one ``error:`` line with exit status 2."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "trl_grpo.py"
NAV = ["pixelrl/PointNav-v0", "--env-kwargs", '{"width": 32, "height": 32}']
MODEL = ["--model", "Qwen/Qwen3-VL-2B-Instruct"]  # a name: the config is built, nothing loaded


def _script():
    spec = importlib.util.spec_from_file_location("trl_grpo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_grpo_config_carries_the_vllm_options(tmp_path):
    main = _script().main
    out = ["--output-dir", str(tmp_path), *MODEL]
    plain = main([*NAV, *out], build_only=True)
    assert plain.use_vllm is False
    colocate = main([*NAV, *out, "--vllm-mode", "colocate", "--vllm-gpu-memory-utilization",
                     "0.45"], build_only=True)  # fmt: skip
    assert (colocate.use_vllm, colocate.vllm_mode) == (True, "colocate")
    assert colocate.vllm_gpu_memory_utilization == 0.45
    server = main([*NAV, *out, "--vllm-mode", "server", "--vllm-server-host", "10.0.0.2",
                   "--vllm-server-port", "8123"], build_only=True)  # fmt: skip
    assert (server.use_vllm, server.vllm_mode) == (True, "server")
    assert (server.vllm_server_host, server.vllm_server_port) == ("10.0.0.2", 8123)
    by_url = main([*NAV, *out, "--vllm-mode", "server", "--vllm-server-url", "http://gpu1:8000"],
                  build_only=True)  # fmt: skip
    assert by_url.vllm_server_base_url == "http://gpu1:8000"


CASES = [
    (["--vllm-mode", "vllm"], "argument --vllm-mode: invalid choice: 'vllm'"),
    (["--vllm-mode", "colocate", "--model", "tiny"], "--vllm-mode needs --model NAME_OR_FOLDER"),
    (["--vllm-mode", "colocate", "--vllm-server-port", "8000"],
     "--vllm-server-port does not apply to --vllm-mode colocate"),
    (["--vllm-mode", "server", "--vllm-gpu-memory-utilization", "0.5"],
     "--vllm-gpu-memory-utilization does not apply to --vllm-mode server"),
    (["--vllm-server-url", "http://x:1"], "--vllm-server-url needs --vllm-mode"),
    (["--vllm-mode", "colocate", "--vllm-gpu-memory-utilization", "1.5"],
     "must be a number in (0, 1], got '1.5'"),
    (["--vllm-mode", "colocate", "--vllm-gpu-memory-utilization", "half"], "got 'half'"),
    (["--vllm-mode", "server", "--vllm-server-port", "70000"],
     "--vllm-server-port must be in 1..65535, got 70000"),
]  # fmt: skip


@pytest.mark.parametrize("argv, message", CASES)
def test_a_wrong_vllm_option_is_a_usage_error(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        _script().main([*NAV, *MODEL, *argv], build_only=True)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed")
@pytest.mark.parametrize(
    "argv, message",
    [
        ([*MODEL, "--vllm-mode", "colocate"],
         "error: --vllm-mode colocate needs vLLM, which is not installed here"),
        (["--env-url", "http://127.0.0.1:9"], "error: no pixelrl serve at http://127.0.0.1:9"),
        (["--env-url", "127.0.0.1:9"], "error: url must be http://host:port"),
    ],
)  # fmt: skip
def test_the_script_says_what_is_missing_in_one_line(argv, message, tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), *NAV, *argv, "--output-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    assert message in p.stderr.strip().splitlines()[-1]  # one line, the last
