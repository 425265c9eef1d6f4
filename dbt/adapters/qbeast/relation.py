"""Relations of the qbeast adapter: Spark relations that know whether they are Qbeast tables."""
from __future__ import annotations

from dataclasses import dataclass

from dbt.adapters.spark.relation import SparkRelation

QBEAST_PROVIDER_LINE = "Provider: qbeast"


@dataclass(frozen=True, eq=False, repr=False)
class QbeastRelation(SparkRelation):
    """A Spark relation; ``is_qbeast`` when the catalog lists it with the ``qbeast`` provider.

    The provider comes from the ``information`` text of ``SHOW TABLE EXTENDED`` that dbt-spark
    already fetches when it lists a schema, so no extra query is needed.
    """

    @property
    def is_qbeast(self) -> bool:
        return QBEAST_PROVIDER_LINE in (self.information or "")
