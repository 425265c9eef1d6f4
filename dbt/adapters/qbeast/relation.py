"""Relations of the qbeast adapter: Spark relations that know whether they are Qbeast tables."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

from dbt.adapters.spark.relation import SparkRelation

import qbeast

QBEAST_PROVIDER_LINE = "Provider: qbeast"


@dataclass(frozen=True, eq=False, repr=False)
class QbeastRelation(SparkRelation):
    """A Spark relation; ``is_qbeast`` when the catalog lists it with the ``qbeast`` provider.

    The provider and location come from the ``information`` text of ``SHOW TABLE EXTENDED`` that
    dbt-spark already fetches when it lists a schema, so no extra query is needed.
    """

    @property
    def is_qbeast(self) -> bool:
        return QBEAST_PROVIDER_LINE in (self.information or "")

    @property
    def facts(self) -> Dict[str, str]:
        """The ``name: value`` lines of the catalog's description (Type, Provider, Location...)."""
        return dict(
            line.split(": ", 1) for line in (self.information or "").splitlines() if ": " in line
        )

    @property
    def location(self) -> Optional[str]:
        """The folder of the relation's files (a local path for ``file:`` locations), if any."""
        location = self.facts.get("Location")
        return qbeast.local_path(location) if location else None

    @property
    def is_managed(self) -> bool:
        """A managed table: dropping it deletes its folder, renaming it moves the folder."""
        return self.facts.get("Type", "").upper() == "MANAGED"
