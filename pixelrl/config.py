"""YAML configs with dotted command-line overrides, checked key by key.

A config is a tree of plain dicts loaded from YAML and read with attributes::

    cfg = load_config("embodied/configs/pointnav.yaml", ["ppo.lr=1e-4", "env.num_envs=4"])
    cfg.ppo.lr                      # 0.0001

Rules (so that a typo never silently trains the wrong thing):

- Every key in a file or an override must already exist in the defaults it is merged onto;
  otherwise :class:`ConfigError` names the key, where it came from and the nearest valid keys.
- A mapping that is empty in the defaults (``kwargs: {}``) is *open*: any key may go in it
  (used for keyword arguments passed straight to an env or a model).
- Override values are parsed as YAML (``a.b=3`` is an int, ``a.b=[1,2]`` a list, ``a.b=null`` None).
- A key whose current value is a number takes only a number (or null), a boolean only a boolean:
  ``ppo.lr=abc`` is an error here, not a crash inside the optimizer after the envs are built.
  :func:`check_ranges` checks the signs of numbers a consumer needs positive.
"""

from __future__ import annotations

import copy
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, with YAML 1.2 floats: ``3e-4`` and ``1e6`` are numbers, not text."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(
        r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |\.[0-9_]+(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        re.X,
    ),
    list("-+0123456789."),
)


def _load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


class ConfigError(ValueError):
    """A config file or override that names an unknown key or cannot be parsed."""


class Config(dict):
    """A dict whose keys are also attributes (``cfg.ppo.lr``); nested dicts are Configs too."""

    def __init__(self, data: Mapping[str, Any] | None = None):
        super().__init__()
        for key, value in (data or {}).items():
            self[key] = _wrap(value)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(_unknown_key_message(name, self, "config")) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = _wrap(value)

    def __deepcopy__(self, memo: dict) -> Config:
        return Config(copy.deepcopy(dict(self), memo))

    def to_dict(self) -> dict[str, Any]:
        """A plain-dict deep copy (for YAML dumps and checkpoints)."""
        return {
            k: v.to_dict() if isinstance(v, Config) else copy.deepcopy(v) for k, v in self.items()
        }


def _wrap(value: Any) -> Any:
    if isinstance(value, Config):
        return value
    if isinstance(value, Mapping):
        return Config(value)
    return value


def dotted_keys(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Every key of ``tree`` as a dotted path, leaves and inner nodes alike."""
    keys = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        keys.append(path)
        if isinstance(value, Mapping):
            keys.extend(dotted_keys(value, path + "."))
    return keys


def _unknown_key_message(path: str, root: Mapping[str, Any], source: str) -> str:
    valid = dotted_keys(root)
    nearest = difflib.get_close_matches(path, valid, n=3, cutoff=0.5)
    if not nearest:  # fall back to keys sharing the last part (``lr`` -> ``ppo.lr``)
        leaf = path.rsplit(".", 1)[-1]
        nearest = [k for k in valid if k.rsplit(".", 1)[-1] == leaf][:3]
    hint = f"; did you mean {', '.join(repr(k) for k in nearest)}?" if nearest else ""
    return f"unknown config key {path!r} (in {source}){hint}"


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"ppo.lr=1e-4"`` -> ``(["ppo", "lr"], 0.0001)``; the value is read as YAML."""
    if "=" not in text:
        raise ConfigError(f"override {text!r} is not of the form key.path=value")
    path, raw = text.split("=", 1)
    path = path.strip()
    if not path or any(not part for part in path.split(".")):
        raise ConfigError(f"override {text!r} has an empty key")
    try:
        value = _load_yaml(raw) if raw.strip() else ""
    except yaml.YAMLError as e:
        raise ConfigError(f"override {text!r}: value is not valid YAML ({e})") from None
    return path.split("."), value


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A YAML mapping from ``path``; a missing file or a non-mapping is a clear error."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        data = _load_yaml(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({e})") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: the top level must be a mapping, got {type(data).__name__}")
    return data


def load_config(
    path: str | Path | None,
    overrides: Iterable[str] = (),
    defaults: Mapping[str, Any] | None = None,
) -> Config:
    """``defaults`` <- the YAML file at ``path`` <- ``overrides``, each key checked (module doc).

    Without ``defaults`` the file itself defines which keys exist.
    """
    schema = dict(defaults) if defaults is not None else read_yaml(path)
    open_paths = set(_open_paths(schema))
    cfg = Config(copy.deepcopy(schema))
    if defaults is not None and path is not None:
        _update(cfg, read_yaml(path), str(path), open_paths, cfg)
    for text in overrides:
        parts, value = parse_override(text)
        for part in reversed(parts):
            value = {part: value}
        _update(cfg, value, f"override {text!r}", open_paths, cfg)
    return cfg


def _open_paths(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of the mappings that are empty in ``tree`` (open for any key)."""
    paths = []
    for key, value in tree.items():
        if isinstance(value, Mapping):
            if value:
                paths.extend(_open_paths(value, f"{prefix}{key}."))
            else:
                paths.append(f"{prefix}{key}")
    return paths


def _update(
    node: Config,
    update: Mapping[str, Any],
    source: str,
    open_paths: set[str],
    root: Config,
    prefix: str = "",
    is_open: bool = False,
) -> None:
    """Write ``update`` into ``node`` in place, refusing keys the schema does not know."""
    for key, value in update.items():
        path = f"{prefix}{key}"
        if key not in node and not is_open:
            raise ConfigError(_unknown_key_message(path, root, source))
        child_open = is_open or path in open_paths
        if key in node:
            _check_type(path, node[key], value, source)
        if isinstance(node.get(key), Mapping) and isinstance(value, Mapping):
            _update(node[key], value, source, open_paths, root, path + ".", child_open)
        else:
            node[key] = _wrap(copy.deepcopy(value))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_type(path: str, current: Any, value: Any, source: str) -> None:
    """A number stays a number and a boolean a boolean (either may become null)."""
    if value is None or current is None:
        return
    if _is_number(current) and not _is_number(value):
        raise ConfigError(
            f"{path} must be a number (like its default {current!r}), got {value!r} (in {source})"
        )
    if isinstance(current, bool) and not isinstance(value, bool):
        raise ConfigError(f"{path} must be true or false, got {value!r} (in {source})")


def check_ranges(
    cfg: Mapping[str, Any], positive: Iterable[str] = (), non_negative: Iterable[str] = ()
) -> None:
    """:class:`ConfigError` naming the first dotted key of ``positive`` that is not > 0, or of
    ``non_negative`` that is < 0 (keys the config lacks, or sets to null, are skipped)."""
    rules = [(path, "> 0") for path in positive] + [(path, ">= 0") for path in non_negative]
    for path, want in rules:
        value: Any = cfg
        for part in path.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            continue
        if not _is_number(value) or (value <= 0 if want == "> 0" else value < 0):
            raise ConfigError(f"{path} must be {want}, got {value!r}")


def dump_config(cfg: Mapping[str, Any], path: str | Path) -> None:
    """Write ``cfg`` as YAML (the run folder keeps the exact config it trained with)."""
    data = cfg.to_dict() if isinstance(cfg, Config) else dict(cfg)
    Path(path).write_text(yaml.safe_dump(data, sort_keys=False))


def check_kwargs(
    fn: Any,
    kwargs: Mapping[str, Any],
    section: str,
    also: Sequence[str] = (),
    internal: Sequence[str] = (),
) -> dict[str, Any]:
    """``kwargs`` if ``fn`` accepts every key; else a :class:`ConfigError` naming the nearest.

    For open config sections (``policy:``, ``env.kwargs:``) whose keys are a constructor's
    arguments: ``check_kwargs(PointNavResNetPolicy, cfg.policy, "policy")``. ``also``: the
    section's other keys, taken before ``kwargs`` (named in the error's hints and list, so a typo
    of one is suggested too); ``internal``: arguments the caller fills, not config keys.
    """
    import inspect

    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return dict(kwargs)
    accepted = [
        name
        for name, p in params.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and name not in internal
    ]
    valid = accepted + [k for k in also if k not in accepted]
    for key in kwargs:
        if key not in accepted:
            nearest = difflib.get_close_matches(key, valid, n=3, cutoff=0.5)
            hint = (
                f"; did you mean {', '.join(repr(f'{section}.{k}') for k in nearest)}?"
                if nearest
                else ""
            )
            raise ConfigError(
                f"unknown config key {section + '.' + key!r} for {getattr(fn, '__name__', fn)}{hint} "
                f"(valid: {', '.join(valid)})"
            )
    return dict(kwargs)
