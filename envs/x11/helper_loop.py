"""The helper's side of :mod:`pixelrl.envs.x11.helper`'s protocol: answer one JSON line a request.

Standard library only, and imported by the helper scripts (``actuator.py``, ``windows.py`` run as
scripts) as a sibling file (``import helper_loop``: the script's folder is first on
``sys.path``), never as ``pixelrl.envs.x11.helper_loop``: that name would import
``pixelrl.envs``, which registers every env (the window reader would start in 0.46 s instead of
0.02 s and take 48 MB instead of 13 MB, measured).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable


def serve(hello: dict, answer: Callable[[dict], dict]) -> None:
    """Write ``{"ready": true, **hello}``, then answer each request line with ``answer(request)``
    (a dict, sent as ``{"ok": true, **reply}``); an exception becomes ``{"ok": false, "type":
    ..., "error": ...}`` and the helper goes on (the host decides what an error means)."""
    out = sys.stdout.buffer
    out.write((json.dumps({"ready": True, **hello}) + "\n").encode())
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = {"ok": True, **answer(json.loads(line))}
        except Exception as e:
            reply = {"ok": False, "type": type(e).__name__, "error": str(e)}
        out.write((json.dumps(reply) + "\n").encode())
        out.flush()
