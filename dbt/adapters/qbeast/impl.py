"""The qbeast adapter: dbt-spark's SQL behaviour on the in-process session, plus engine methods."""
from __future__ import annotations

from typing import Any, Dict

from dbt.adapters.spark.impl import SparkAdapter

from dbt.adapters.qbeast.connections import QbeastConnectionManager


class QbeastAdapter(SparkAdapter):
    """Spark adapter whose connection is the engine's Spark session."""

    ConnectionManager = QbeastConnectionManager  # type: ignore[assignment]

    @classmethod
    def _get_adapter_specific_run_info(cls, config: Any) -> Dict[str, Any]:
        info = super()._get_adapter_specific_run_info(config)
        info["adapter_type"] = "qbeast"
        return info
