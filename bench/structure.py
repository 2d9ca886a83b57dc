"""Figures of the code's structure (issue 52): how big the task adapters are, where our own
modules are imported, and whether the imports between folders point one way.

Prints the lines of each task-adapter file and of the PPO trainer, the imports of our own modules
at a module's top level and inside functions, the import edges between folders, and the import
circles between folders and between modules. It reads the files (``ast``), never imports them, so
it runs on any checkout::

    python bench/structure.py                       # this checkout
    git worktree add ../before <commit> && python bench/structure.py --repo ../before

The import scan (:func:`scan`) is also what ``tests/pixelrl/test_dependency_rule.py`` checks
against the Layout table of ``docs/architecture.md``.
"""

from __future__ import annotations

import argparse
import ast
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

# Shipped code: the repository folders that install as pixelrl.* (pyproject's package-dir).
FOLDERS = ("envs", "vision", "pixelrl", "gui_agent", "embodied", "assets")
ROOT = "pixelrl"
# The task adapters of the text-policy trainer, and the PPO trainer.
SIZED_FILES = ("gui_agent/train_vlm.py", "embodied/vlm_train.py", "pixelrl/train.py")


@dataclass(frozen=True)
class Import:
    """One import of our own module in one file."""

    path: str  # the importing file, relative to the repository
    line: int
    module: str  # the module imported, e.g. pixelrl.envs.gui_action
    in_function: bool  # inside a function body (run when called), not at import time
    text: str  # the statement, for messages


def module_name(path: Path) -> str:
    """``gui_agent/cli.py`` -> ``pixelrl.gui_agent.cli``; ``pixelrl/rl/__init__.py`` ->
    ``pixelrl.rl`` (a path relative to the repository)."""
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts if parts[0] == ROOT else [ROOT, *parts])


def folder_of(module: str) -> str:
    """The repository folder of a module of ours: ``pixelrl.envs.nav`` -> ``envs``,
    ``pixelrl.train`` -> ``pixelrl``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FOLDERS else ROOT


def shipped_files(repo: Path) -> list[Path]:
    """The Python files of the shipped folders, relative to ``repo``."""
    return sorted(p.relative_to(repo) for d in FOLDERS for p in (repo / d).rglob("*.py"))


class _Imports(ast.NodeVisitor):
    """Collects the imports of ``pixelrl`` modules of one file, noting those inside functions."""

    def __init__(self, path: str, package: str, known: set[str], source: str) -> None:
        self.path, self.package, self.known, self.source = path, package, known, source
        self.depth = 0
        self.found: list[Import] = []

    def _add(self, node: ast.AST, module: str) -> None:
        if module == ROOT or module.startswith(ROOT + "."):
            text = " ".join((ast.get_source_segment(self.source, node) or module).split())
            self.found.append(Import(self.path, node.lineno, module, self.depth > 0, text))

    def _function(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:  # relative: from the file's package up
            up = self.package.split(".")[: len(self.package.split(".")) - node.level + 1]
            base = ".".join([*up, base] if base else up)
        # `from pixelrl import registry` imports a module; one import per module a statement names
        modules = {f"{base}.{a.name}" for a in node.names} & self.known or {base}
        for module in sorted(modules):
            self._add(node, module)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name == "import_module" and node.args:
            arg = node.args[0]
            if isinstance(arg, ast.JoinedStr) and arg.values:  # f"pixelrl.commands.{name}"
                arg = arg.values[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self._add(node, arg.value.rstrip("."))
        self.generic_visit(node)


def scan(repo: Path) -> list[Import]:
    """Every import of our own modules in the shipped code of ``repo``: top level, inside
    functions, and ``importlib.import_module("pixelrl...")`` literals."""
    files = shipped_files(repo)
    known = {module_name(p) for p in files}
    found: list[Import] = []
    for path in files:
        source = (repo / path).read_text()
        module = module_name(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        visitor = _Imports(str(path), package, known, source)
        visitor.visit(ast.parse(source, filename=str(path)))
        found += visitor.found
    return found


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted: the
    import circles of a graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(out)


def graphs(imports: list[Import]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module graph, folder graph): who imports whom, self-imports left out."""
    modules: dict[str, set[str]] = defaultdict(set)
    folders: dict[str, set[str]] = defaultdict(set)
    for imp in imports:
        source = module_name(Path(imp.path))
        if imp.module != source:
            modules[source].add(imp.module)
        if folder_of(imp.module) != folder_of(source):
            folders[folder_of(source)].add(folder_of(imp.module))
    return modules, folders


def report(repo: Path) -> None:
    print(f"structure of {repo}\n")
    print("lines of the task adapters and the PPO trainer")
    for name in SIZED_FILES:
        path = repo / name
        lines = len(path.read_text().splitlines()) if path.is_file() else "absent"
        print(f"  {name:<28} {lines:>6}")

    imports = scan(repo)
    inside = sum(i.in_function for i in imports)
    print(f"\nimports of our own modules in shipped code ({', '.join(FOLDERS)})")
    print(f"  {'top level':<28} {len(imports) - inside:>6}")
    print(f"  {'inside functions':<28} {inside:>6}")
    print(f"  {'all':<28} {len(imports):>6}")

    edges = Counter(
        (folder_of(module_name(Path(i.path))), folder_of(i.module))
        for i in imports
        if folder_of(module_name(Path(i.path))) != folder_of(i.module)
    )
    print("\nimport edges between folders (importer -> imported: imports)")
    for (a, b), n in sorted(edges.items()):
        print(f"  {a:>10} -> {b:<10} {n:>6}")

    modules, folders = graphs(imports)
    folder_circles = circles(folders)
    module_circles = circles(modules)
    print(f"\nimport circles between folders: {len(folder_circles)}")
    for circle in folder_circles:
        print(f"  {' <-> '.join(circle)}")
    in_circles = sum(len(c) for c in module_circles)
    print(f"import circles between modules: {len(module_circles)} ({in_circles} modules)")
    for circle in module_circles:
        shown = ", ".join(circle[:6]) + (
            f", ... ({len(circle)} modules)" if len(circle) > 6 else ""
        )
        print(f"  {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the checkout to measure (default: this one)")  # fmt: skip
    report(parser.parse_args().repo.resolve())


if __name__ == "__main__":
    main()
