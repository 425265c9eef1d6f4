"""Relations of the qbeast adapter: Spark relations that know whether they are Qbeast tables."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from dbt.adapters.spark.relation import SparkRelation

import qbeast

QBEAST_PROVIDER_LINE = "Provider: qbeast"


@dataclass(frozen=True, eq=False, repr=False)
class QbeastRelation(SparkRelation):
    """A Spark relation; ``is_qbeast`` when the catalog lists it with the ``qbeast`` provider.

    The provider and location come from the ``information`` text of ``SHOW TABLE EXTENDED`` that
    dbt-spark already fetches when it lists a schema, so no extra query is needed.
    """

    #: A sampled run's row filter of this relation (``--vars '{qbeast_sample: ...}'``): set on
    #: the relations ``ref()`` and ``source()`` return, never on ``{{ this }}``.
    sample_filter: Optional[str] = None

    @classmethod
    def create_from(cls, quoting: Any, relation_config: Any, **kwargs: Any) -> "QbeastRelation":
        """dbt's relation of a node; in a sampled run, a ``ref()``/``source()`` of a Qbeast table
        carries its sample filter. Those two resolvers are the callers that pass
        ``event_time_filter`` (``{{ this }}`` and parse-time relations do not)."""
        relation = super().create_from(quoting, relation_config, **kwargs)
        if "event_time_filter" not in kwargs:
            return relation
        from dbt.adapters.factory import get_adapter_by_type

        try:
            adapter = get_adapter_by_type("qbeast")
        except Exception:  # no qbeast adapter registered (a relation built outside a run)
            return relation
        predicate = adapter.project_sample_filter(relation, getattr(relation_config, "unique_id", None))
        return relation if predicate is None else relation.incorporate(sample_filter=predicate)

    def __str__(self) -> str:
        """As dbt renders a relation in SQL; in a sampled run ``(select * from <name> where
        <filter>)``, inside dbt's own limit (``--empty``) and time window (``--sample``).
        ``render()`` stays the bare name for the statements that name the table itself."""
        if self.sample_filter is None:
            return super().__str__()
        rendered = f"(select * from {self.render()} where {self.sample_filter})"
        if self.limit == 0:
            rendered = f"(select * from {rendered} where false limit 0)"
        elif self.limit is not None:
            rendered = f"(select * from {rendered} limit {self.limit})"
        if self.event_time_filter:
            rendered = self.render_event_time_filtered(rendered)
        return rendered

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


#: Table properties Spark (and the registration) set by themselves; any other key in the catalog
#: entry came from a model's tblproperties.
_SPARK_PROPERTY_PREFIXES = ("external", "location", "option.", "owner", "path", "provider",
                            "transient_lastddltime", "spark.sql.", "comment", "numfiles",
                            "totalsize", "bucketing_version")
_NULLABILITY = re.compile(r"\s*\((nullable|containsNull|valueContainsNull) = \w+\)$")


def schema_tree(text: str) -> List[str]:
    """The `` |-- name: type`` lines of a schema tree, nullability left out (the writer makes
    every column nullable; the data may not be)."""
    return [_NULLABILITY.sub("", line).lower() for line in text.splitlines()
            if line.lstrip(" |").startswith("-- ")]


def catalog_entry_current(relation: Optional[QbeastRelation], location: str, config: Any,
                          schema: Any) -> bool:
    """Whether the catalog entry ``relation`` already describes the Qbeast table just written.

    Re-creating the entry costs about a second per model (drop, create, schema lookup), and a
    rebuild with the same columns changes nothing in it. Decided from the description dbt-spark
    already fetched (provider, location, schema tree, comment, properties): column comments are
    not in it, so a model that persists them always re-registers.
    """
    from dbt.adapters.qbeast.locations import same_location

    if relation is None or not relation.is_qbeast or not same_location(relation.location, location):
        return False
    if config.column_comments or config.tblproperties:
        return False
    facts = relation.facts
    if (facts.get("Comment") or None) != (config.table_comment or None):
        return False
    properties = facts.get("Table Properties", "").strip("[]")
    keys = [item.split("=", 1)[0].strip().lower() for item in properties.split(", ") if item]
    if any(not key.startswith(_SPARK_PROPERTY_PREFIXES) for key in keys):
        return False
    tree = relation.information.split("Schema: ", 1)[-1] if relation.information else ""
    return bool(schema_tree(tree)) and schema_tree(tree) == schema_tree(schema.treeString())
