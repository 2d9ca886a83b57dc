"""One import package: everything installs and imports as ``pixelrl.*`` (issue: one namespace).

The repository keeps ``envs/``, ``vision/``, ``gui_agent/``, ``embodied/`` and ``assets/`` beside
``pixelrl/``; ``pyproject.toml`` maps them to ``pixelrl.envs`` ... These tests check that no code
imports the bare names, that the folders on disk cannot stand in for a broken install, and that
the wheel and the sdist hold one top-level package with its data files and nothing else.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BARE = ("envs", "vision", "gui_agent", "embodied", "assets")
# Where our Python lives (tests and benches too: they are what users copy from).
CODE_DIRS = ("pixelrl", *BARE, "tests", "bench", "scripts", "docs")
# Old names on purpose: the mapping from the old layout and its test (as strings, never imports).
OLD_NAME_FILES = ("pixelrl/legacy.py", "tests/pixelrl/test_legacy_layout.py")
MODULE_PATH = re.compile(rf"^(?:-m\s+)?({'|'.join(BARE)})\.[a-z_][\w.]*(?::\w+)?$")


def python_files() -> list[Path]:
    return sorted(p for d in CODE_DIRS if (REPO / d).is_dir() for p in (REPO / d).rglob("*.py"))


def bare_references(path: Path) -> list[str]:
    """Imports of a bare subpackage name, and strings that are bare module paths, in one file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(REPO) if REPO in path.parents else path.name
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if str(where) in OLD_NAME_FILES:
                continue
            match = MODULE_PATH.match(node.value.strip())
            # a module path names a file or folder (envs.nav.sim); a config key such as
            # envs.num_workers (the trainer's `envs` section) names none
            part = node.value.strip().removeprefix("-m").strip().split(".")
            if (
                match
                and (REPO / part[0] / part[1].split(":")[0]).with_suffix("").exists()
                or (match and (REPO / part[0] / (part[1].split(":")[0] + ".py")).exists())
            ):
                found.append(f"{where}:{node.lineno}: string {node.value!r}")
        for name in names:
            if name.split(".")[0] in BARE:
                found.append(f"{where}:{node.lineno}: import {name}")
    return found


def test_the_scan_finds_bare_imports(tmp_path):
    # The check below must be able to fail: a file with each kind of bare reference is caught.
    sample = tmp_path / "bare_sample.py"
    sample.write_text(
        "import envs\nfrom vision.vlm import load_vlm\nimport embodied.task as t\n"
        "X = 'gui_agent.train_vlm'\nY = 'envs.nav.env:make_pointnav'\nimport pixelrl.envs\n"
    )
    assert len(bare_references(sample)) == 5


def test_no_code_imports_the_bare_subpackage_names():
    files = python_files()
    assert len(files) > 100, "the scan sees the project's code"
    offenders = [ref for f in files for ref in bare_references(f)]
    assert not offenders, "use the pixelrl. prefix:\n" + "\n".join(offenders)


def test_configs_and_docs_name_modules_with_the_prefix():
    pattern = re.compile(rf"(?<![\w./-])(?:python -m |import |from )({'|'.join(BARE)})\b")
    texts = [REPO / "README.md", *REPO.glob("docs/**/*.md"), *REPO.glob("*/configs/*.yaml")]
    offenders = [
        f"{t.relative_to(REPO)}: {m.group(0)!r}"
        for t in texts
        for m in pattern.finditer(t.read_text())
    ]
    assert not offenders, "\n".join(offenders)


def test_the_repository_folders_are_not_importable_by_their_bare_names():
    # The suite must not run from the repository root (`make test` runs it from tests/): there,
    # `envs/` on disk would import as `envs` and hide an install that lacks `pixelrl.envs`.
    for name in BARE:
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin).resolve() if spec and spec.origin else None
        assert origin is None or REPO not in origin.parents, (
            f"{name!r} imports from the repository ({origin}): run the suite outside its root"
        )
    import pixelrl.envs

    assert pixelrl.envs.__name__ == "pixelrl.envs"


def copy_source(dest: Path) -> Path:
    """The tracked files (what a fresh checkout has), so builds never write into the repo."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for rel in filter(None, listed):
        src = REPO / rel.decode()
        if src.is_file():
            (dest / rel.decode()).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel.decode()).write_bytes(src.read_bytes())
    return dest


def build(kind: str, source: Path, out: Path) -> Path:
    """Build a wheel or an sdist of ``source`` with the venv's setuptools (no network)."""
    code = f"import sys; from setuptools import build_meta as b; print(b.build_{kind}(sys.argv[1]))"
    result = subprocess.run(
        [sys.executable, "-c", code, str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out / result.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("build")
    source = copy_source(root / "src")
    wheel = build("wheel", source, root / "dist")
    sdist = build("sdist", source, root / "dist")
    return wheel, sdist, root


def wheel_names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return {n for n in z.namelist() if not n.endswith("/")}


def test_the_wheel_installs_one_top_level_package_with_its_files(built):
    wheel, _, _ = built
    names = wheel_names(wheel)
    top = {n.split("/")[0] for n in names}
    assert top == {"pixelrl", next(t for t in top if t.endswith(".dist-info"))}, top
    with zipfile.ZipFile(wheel) as z:
        toplevel = [n for n in z.namelist() if n.endswith("top_level.txt")]
        if toplevel:
            assert z.read(toplevel[0]).decode().split() == ["pixelrl"]
    for required in (
        "pixelrl/cli.py",
        "pixelrl/envs/gui_action/action.py",
        "pixelrl/envs/nav/env.py",
        "pixelrl/vision/vlm.py",
        "pixelrl/gui_agent/configs/ppo.yaml",
        "pixelrl/embodied/configs/pointnav.yaml",
        "pixelrl/assets/fonts/DejaVuSans.ttf",
        "pixelrl/assets/x11_tasks/TkCopyCode.json",
        "pixelrl/assets/x11_apps/counter.py",
        "pixelrl/assets/osworld_tasks/3afc3774-7402-52c2-95d7-12380292844b.json",
    ):
        assert required in names, required
    # Every folder of ours that is a package is in the wheel (pyproject lists them by hand).
    for folder in ("pixelrl", *BARE):
        for init in (REPO / folder).rglob("__init__.py"):
            rel = init.relative_to(REPO).parts
            inside = "/".join(("pixelrl", *rel) if folder != "pixelrl" else rel)
            assert inside in names, f"{inside} missing: add its package to pyproject.toml"
    assert not [n for n in names if n.startswith(("pixelrl/tests", "tests/", "docs/"))]
    assert not [n for n in names if "__pycache__" in n]


def test_the_sdist_builds_the_same_wheel(built):
    wheel, sdist, root = built
    with tarfile.open(sdist) as tar:
        tar.extractall(root / "unpacked", filter="data")
    (source,) = (root / "unpacked").iterdir()
    assert (source / "assets" / "fonts" / "DejaVuSans.ttf").is_file()
    again = build("wheel", source, root / "again")
    assert wheel_names(again) == wheel_names(wheel)


def test_the_wheel_declares_the_domains_and_ships_every_recipe_config(built):
    # an installed wheel finds its domains (and so its recipes and verbs) by these entry points
    import configparser

    from pixelrl.recipes import RECIPES

    wheel, _, _ = built
    with zipfile.ZipFile(wheel) as z:
        (path,) = [n for n in z.namelist() if n.endswith(".dist-info/entry_points.txt")]
        points = configparser.ConfigParser()
        points.read_string(z.read(path).decode())
    assert dict(points["pixelrl.domains"]) == {
        "gui": "pixelrl.gui_agent.registration",
        "embodied": "pixelrl.embodied.registration",
    }
    names = wheel_names(wheel)
    for recipe in RECIPES.values():  # pixelrl train NAME from the wheel reads this file
        rel = recipe.config.resolve().relative_to(REPO)
        if rel.parts[0] == "tests":  # a recipe a test registered in this process
            continue
        assert f"pixelrl/{rel.as_posix()}" in names, f"{recipe.name}: {rel} is not in the wheel"
