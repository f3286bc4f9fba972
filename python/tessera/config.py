"""Where a machine description comes from, and TOML in and out.

The Rust core is the single source of truth for what a valid config is: this
module only decides *which kind* of source the caller gave (preset name, file,
TOML text, or a dict that it writes out as TOML text) and never validates or
fills in defaults.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Union

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on Python < 3.11
    import tomli as tomllib

from tessera import _core

__all__ = ["ConfigLike", "source_of", "dumps_toml", "loads_toml", "flatten", "preset_names"]

#: A preset name, a path to a TOML file, TOML text, or a dict of TOML values.
ConfigLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def preset_names() -> list[str]:
    return [name for name, _summary, _toml in _core.presets()]


def source_of(config: ConfigLike) -> tuple[str, str]:
    """Classify ``config`` as ``("preset" | "file" | "text", value)``.

    - a mapping is written out as TOML text;
    - a path object is a file;
    - a string with a newline or ``=`` is TOML text;
    - a string that names a preset is that preset;
    - a string that looks like a path (has a separator, ends in ``.toml``, or
      exists) is a file;
    - anything else is taken as a preset name (the core then lists the
      presets that exist).
    """
    if isinstance(config, Mapping):
        return ("text", dumps_toml(config))
    if isinstance(config, os.PathLike):
        return ("file", os.fspath(config))
    if not isinstance(config, str):
        raise TypeError(f"config must be a preset name, a TOML path, TOML text or a dict, not {type(config).__name__}")
    if "\n" in config or "=" in config:
        return ("text", config)
    if config in preset_names():
        return ("preset", config)
    if config.endswith(".toml") or "/" in config or os.sep in config or os.path.exists(config):
        return ("file", config)
    return ("preset", config)


def loads_toml(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


# ---------------------------------------------------------------------------
# A small TOML writer for plain dicts (str, int, float, bool, lists, dicts).
# ---------------------------------------------------------------------------

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key(k: Any) -> str:
    if not isinstance(k, str):
        raise TypeError(f"TOML keys must be strings, not {type(k).__name__} ({k!r})")
    return k if _BARE_KEY.fullmatch(k) else _string(k)


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _value(v: Any, where: str) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, Mapping):
        items = [f"{_key(k)} = {_value(x, f'{where}.{k}')}" for k, x in v.items() if x is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value(x, f"{where}[{i}]") for i, x in enumerate(v)) + "]"
    raise TypeError(f"cannot write {type(v).__name__} at `{where}` as TOML")


def dumps_toml(data: Mapping[str, Any]) -> str:
    """Write a dict as TOML text. ``None`` values are left out (TOML has no null)."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).strip("\n") + "\n"


def _table(data: Mapping[str, Any], path: list[str], lines: list[str]) -> None:
    subtables = []
    for k, v in data.items():
        if v is None:
            continue
        if isinstance(v, Mapping):
            subtables.append((k, v))
        else:
            dotted = ".".join(path + [str(k)])
            lines.append(f"{_key(k)} = {_value(v, dotted)}")
    for k, v in subtables:
        sub = path + [k]
        lines.append("")
        lines.append("[" + ".".join(_key(p) for p in sub) + "]")
        _table(v, sub, lines)


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dict → ``{"a.b.c": value}``; lists become compact JSON text so
    every value fits in one table cell."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, name + "."))
        elif isinstance(v, (list, tuple)):
            out[name] = json.dumps(v, separators=(",", ":"), sort_keys=True, default=str)
        else:
            out[name] = v
    return out
