"""What the action-text dialects share: reading a call with :mod:`ast` (never evaluated),
its literal arguments and points, and writing numbers."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pixelrl.envs.gui_action.action import _short
from pixelrl.envs.gui_action.coordinates import CoordinateSpace, _to_pixels
from pixelrl.envs.gui_action.errors import ActionParseError


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:.4f}".rstrip("0")


def _snippet(node: ast.AST, source: str) -> str:
    """The text of ``node`` (at most 60 characters) for an error message. Sliced from the source,
    not ``ast.unparse``: that recurses, and agent text can nest deeper than the stack."""
    try:
        text = ast.get_source_segment(source, node) or type(node).__name__
    except (ValueError, TypeError, IndexError):
        text = type(node).__name__
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _literal(node: ast.expr, where: str, source: str) -> object:
    """A literal argument (number, string, bool, None, or a list/tuple of those); nothing else."""
    if isinstance(node, ast.Constant) and isinstance(
        node.value, (int, float, str, bool, type(None))
    ):
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value if isinstance(node.op, ast.USub) else node.operand.value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, where, source) for e in node.elts]
    raise ActionParseError(
        f"{where}: arguments must be literal numbers or strings, got {type(node).__name__} "
        f"({_snippet(node, source)})"
    )


def _call_name(func: ast.expr, source: str) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    raise ActionParseError(f"unknown function {_snippet(func, source)}")


@dataclass
class _Call:
    name: str
    args: list
    kwargs: dict

    def arg(self, index: int, name: str, default: object = ..., types: tuple = ()) -> object:
        if name in self.kwargs:
            value = self.kwargs[name]
        elif index is not None and index < len(self.args):
            value = self.args[index]
        elif default is not ...:
            return default
        else:
            raise ActionParseError(f"{self.name}() is missing its argument {name!r}")
        if types and not isinstance(value, types) or isinstance(value, bool) and bool not in types:
            want = " or ".join(t.__name__ for t in types)
            raise ActionParseError(f"{self.name}(): {name} must be {want}, got {_short(value)}")
        return value

    def check_arguments(self, allowed: Sequence[str]) -> None:
        extra = set(self.kwargs) - set(allowed)
        if extra:
            raise ActionParseError(
                f"{self.name}() got unknown argument(s) {', '.join(sorted(extra))}; "
                f"it takes {', '.join(allowed) or 'none'}"
            )
        if len(self.args) > len(allowed):
            raise ActionParseError(
                f"{self.name}() takes at most {len(allowed)} positional argument(s), "
                f"got {len(self.args)}"
            )

    def rename(self, names: dict[str, str]) -> None:
        """Rename keyword arguments (``point`` -> ``start_box``); both at once is an error."""
        for old, new in names.items():
            if old in self.kwargs:
                if new in self.kwargs:
                    raise ActionParseError(f"{self.name}(): give {old} or {new}, not both")
                self.kwargs[new] = self.kwargs.pop(old)


_NUMBER = (int, float)


_NUMBER_TEXT = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")  # 12, 12., 12.5, .5 (not ".", "1.2.3")


_TAGGED = re.compile(r"<(point|bbox)>(.*)</\1>", re.S)


_BRACKETS = {"(": ")", "[": "]"}


def _box_numbers(raw: str) -> list[float] | None:
    """The numbers of a point or box string, or None if it is not one.

    The official parser's forms: ``(x,y)``, ``x,y``, ``(x1,y1,x2,y2)``, ``<point>x y</point>``;
    ours besides: ``[x,y]``, Qwen's ``<|box_start|>(x,y)<|box_end|>``, ``<bbox>x1 y1 x2 y2</bbox>``.
    """
    s = raw.strip().removeprefix("<|box_start|>").removesuffix("<|box_end|>").strip()
    tagged = _TAGGED.fullmatch(s)
    if tagged:
        parts = re.split(r"\s*,\s*|\s+", tagged.group(2).strip())
    else:
        if s[:1] in _BRACKETS:
            if s[-1:] != _BRACKETS[s[0]]:
                return None
            s = s[1:-1]
        parts = s.split(",")
    parts = [p.strip() for p in parts]
    if len(parts) not in (2, 4) or not all(_NUMBER_TEXT.fullmatch(p) for p in parts):
        return None
    return [float(p) for p in parts]


def _point(call: _Call, space: CoordinateSpace, screen) -> tuple[float, float]:
    x = call.arg(0, "x", types=_NUMBER)
    y = call.arg(1, "y", types=_NUMBER)
    return _to_pixels(x, y, space, screen)


def _box_point(
    call: _Call, name: str, space: CoordinateSpace, screen: tuple[int, int] | None
) -> tuple[float, float]:
    raw = call.arg(None, name, types=(str, list))
    if isinstance(raw, list):
        values = raw
    else:
        values = _box_numbers(raw)
        if values is None:
            raise ActionParseError(
                f"{call.name}(): {name} must look like '(x,y)' or '<point>x y</point>', "
                f"got {_short(raw)}"
            )
    numbers = all(isinstance(v, _NUMBER) and not isinstance(v, bool) for v in values)
    if len(values) not in (2, 4) or not numbers:
        raise ActionParseError(f"{call.name}(): {name} must hold 2 or 4 numbers, got {_short(raw)}")
    if len(values) == 4:  # a box: act at its centre
        values = [(values[0] + values[2]) / 2, (values[1] + values[3]) / 2]
    return _to_pixels(values[0], values[1], space, screen)
