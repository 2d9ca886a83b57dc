"""The spine finds what the domains offer by name (``pixelrl.registry``), through the entry points
of the group ``pixelrl.domains``: ours, and another package's the same way."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pixelrl import registry


def test_the_shipped_domains_register_their_pieces():
    assert registry.names("command") == ["eval"]
    assert registry.names("bench") == ["nav"]
    assert registry.names("demo") == ["nav", "experts", "gui"]
    assert registry.target("trl_env", "nav") == "pixelrl.embodied.trl_env:NavEnvironment"
    from pixelrl.embodied.trl_env import NavEnvironment

    assert registry.resolve("trl_env", "nav") is NavEnvironment


def test_an_unknown_name_is_one_line_naming_the_known_ones():
    with pytest.raises(registry.UnknownName) as e:
        registry.target("bench", "navv")
    assert str(e.value) == "no bench named 'navv'; did you mean 'nav'? (known: nav)"
    with pytest.raises(ValueError, match="kind must be one of"):
        registry.register("widget", "x", "a.b:c")
    with pytest.raises(ValueError, match="'module:attr'"):
        registry.register("bench", "x", "no_attr")


def test_another_package_adds_a_domain_with_an_entry_point(tmp_path):
    """A third-party domain, installed as a distribution with an entry point in the group: its
    verb is a `pixelrl` verb, and its recipe trains by name (listed with ours)."""
    (tmp_path / "toy_domain.py").write_text(
        "from pixelrl.registry import register\n"
        "from pixelrl.recipes import register_recipe\n"
        "register('command', 'hello', 'toy_domain:add_parser')\n"
        "register_recipe('toy/hello', __file__[:-3] + '.yaml', 'toy_domain', description='toy')\n"
        "def add_parser(subparsers):\n"
        "    p = subparsers.add_parser('hello', help='say hello')\n"
        "    p.set_defaults(func=lambda args: print('hello from a toy domain'))\n"
    )
    info = tmp_path / "toy_domain-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-domain\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pixelrl.domains]\ntoy = toy_domain\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}

    def pixelrl(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pixelrl", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    done = pixelrl("hello")
    assert (done.returncode, done.stdout) == (0, "hello from a toy domain\n"), done.stderr
    listed = pixelrl("train", "--list").stdout
    assert "toy/hello" in listed and "gui/ppo" in listed and "embodied/pointnav" in listed
