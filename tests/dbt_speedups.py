"""Cheaper ways to two things dbt does on every in-process invocation, with the same results.

* dbt_common's ``BehaviorFlagRendered`` names the module that registered each behavior flag with
``inspect.stack()``, and evaluates that default even when the flag names its source. That call
reads the source line of every frame on the stack: under pytest (a stack of ~100 frames) it took
85 ms per flag, two flags per ``dbt`` invocation, 7% of a dbt-tests-adapter class's time. The
  replacement walks the same frames and takes each one's module name from its globals, which is
  what ``inspect.getmodule`` resolves for a frame of a loaded module, without reading any file.
* dbt writes its artifacts (manifest.json, run_results.json) with ``json.dump`` to the file,
  which always takes the pure-Python encoder; ``json.dumps`` of the same object with the same
  encoder class takes the C one and gives the same text (5% of the same class's time).
"""
from __future__ import annotations

import json
import sys
from typing import Any


def _registering_module() -> str:
    """The name of the first module on the stack other than dbt_common.behavior_flags."""
    from dbt_common import behavior_flags

    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if name and name != behavior_flags.__name__:
            return name
        frame = frame.f_back
    return "Unknown"


def write_json(path: str, data: dict[str, Any]) -> bool:
    """dbt_common's ``write_json``, encoding the whole text at once."""
    import dbt_common.utils.encoding
    from dbt_common.clients import system

    text = json.dumps(data, cls=dbt_common.utils.encoding.JSONEncoder)
    return bool(system.write_file(path, text))


def install() -> list[str]:
    """Put the cheaper versions in place in this process; the names of those put in place (what
    the installed dbt does not have is left as it is)."""
    installed = []
    try:
        from dbt_common.behavior_flags import BehaviorFlagRendered
    except ImportError:
        return installed
    if hasattr(BehaviorFlagRendered, "_default_source"):
        BehaviorFlagRendered._default_source = staticmethod(_registering_module)  # type: ignore[method-assign]
        installed.append("behavior flag source")
    import importlib

    from dbt_common.clients import system

    original = getattr(system, "write_json", None)
    users = [importlib.import_module(name) for name in _WRITE_JSON_USERS]
    if original is not None and all(getattr(m, "write_json", None) is original for m in users):
        for module in (system, *users):
            module.write_json = write_json  # type: ignore[attr-defined]
        installed.append("artifact writes")
    return installed


#: The modules that import ``write_json`` by name (each holds its own reference to replace).
_WRITE_JSON_USERS = ("dbt.artifacts.schemas.base", "dbt.artifacts.schemas.run.v5.run")
