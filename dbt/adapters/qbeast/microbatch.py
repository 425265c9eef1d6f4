"""The time window one batch of a ``microbatch`` qbeast model replaces.

dbt-core runs a microbatch model once per batch and hands each run its window
(``model.batch.event_time_start`` / ``event_time_end``; dbt 1.9 also set them as the config keys
``__dbt_internal_microbatch_event_time_*``). The batch replaces every row of its window in the
model's table (``QbeastTable.replace_where``), so this module turns the window into the engine's
condition: ``start <= event_time < end``, the half-open interval dbt's own filters of the inputs
use, so that consecutive batches never overlap nor leave a gap.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Mapping, Optional, Tuple

from qbeast import quote_identifier

from dbt.adapters.qbeast.errors import QbeastModelConfigError

_LEGACY_KEYS = ("__dbt_internal_microbatch_event_time_start",
                "__dbt_internal_microbatch_event_time_end")


def _moment(model: str, which: str, value: Any) -> dt.datetime:
    """A window bound as an aware UTC datetime (dbt gives datetimes, or ISO text once serialized)."""
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise QbeastModelConfigError(
                f"model {model}: the batch's event_time_{which} {value!r} is not a timestamp"
            ) from None
    if not isinstance(value, dt.datetime):
        raise QbeastModelConfigError(
            f"model {model}: the batch's event_time_{which} {value!r} is not a timestamp")
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)


def batch_window(model: Mapping[str, Any]) -> Optional[Tuple[dt.datetime, dt.datetime]]:
    """(start, end) of the batch this run of ``model`` (the node as the materialization sees
    it) builds; None when dbt runs it outside a batch."""
    name = str(model.get("name"))
    batch = model.get("batch") or {}
    config = model.get("config") or {}
    start = batch.get("event_time_start") or config.get(_LEGACY_KEYS[0])
    end = batch.get("event_time_end") or config.get(_LEGACY_KEYS[1])
    if start is None or end is None:
        return None
    lo, hi = _moment(name, "start", start), _moment(name, "end", end)
    if not lo < hi:
        raise QbeastModelConfigError(
            f"model {name}: the batch window [{lo}, {hi}) is empty; dbt's batches have start < end")
    return lo, hi


def _literal(moment: dt.datetime) -> str:
    return f"timestamp'{moment.astimezone(dt.timezone.utc):%Y-%m-%d %H:%M:%S.%f}+00:00'"


def window_condition(event_time: str, window: Tuple[dt.datetime, dt.datetime]) -> str:
    """The SQL condition of the rows of ``window`` (``start <= event_time < end``)."""
    column = quote_identifier(event_time)
    lo, hi = window
    return f"{column} >= {_literal(lo)} and {column} < {_literal(hi)}"
