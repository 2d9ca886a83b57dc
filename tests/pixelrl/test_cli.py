"""The CLI's own contract: help lists the commands, `pixelrl envs` lists registered ids."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pixelrl.cli import COMMANDS, main


def test_help_lists_every_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


def test_envs_lists_registered_ids_with_descriptions(capsys):
    from pixelrl import envs

    assert main(["envs"]) == 0
    out = capsys.readouterr().out
    listed = envs.list_envs()
    assert listed, "no environment is registered"
    for env_id, description in listed:
        assert env_id.startswith("pixelrl/")
        assert description
        assert f"{env_id}" in out
    assert f"{len(listed)} environments" in out


def test_console_entry_point_runs():
    result = subprocess.run(
        [sys.executable, "-m", "pixelrl", "envs", "--filter", "pixelrl/"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "environments" in result.stdout


def test_import_envs_stays_light():
    # `import pixelrl.envs` registers everything but must not pull in torch, a browser or a display.
    code = "import sys, pixelrl.envs; heavy = [m for m in ('torch', 'selenium', 'pyautogui', 'embreex', 'transformers') if m in sys.modules]; print(heavy)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_register_rejects_ids_outside_the_namespace():
    from pixelrl.envs.registry import register

    with pytest.raises(ValueError, match="pixelrl/ namespace"):
        register("Other-v0", "pixelrl.envs.desktop.env:DesktopEnv", "x")
