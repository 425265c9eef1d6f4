"""Develop on a sample: ``dbt build --vars '{qbeast_sample: 0.01}'`` builds a whole project from a
deterministic fraction of its Qbeast tables.

Every ``ref()`` and ``source()`` of a Qbeast table renders as ``(select * from t where <filter>)``
with the table's sample filter (``QbeastTable.sample_predicate``): the rows whose weight is below
``Weight(fraction)``, the same rows on every run, the files pruned by the index. What is never
sampled, and why:

* ``{{ this }}`` and anything dbt renders outside ``ref()``/``source()``: a model's own table is
  its output, not an input;
* a model selected in the same run: it is built from sampled inputs already, and sampling it again
  would read about ``fraction`` squared of the rows;
* a table that is not a Qbeast table (its rows have no weight): read whole.

``{qbeast_sample: {fraction: 0.01, key: customer_id}}`` samples every Qbeast table that has the
column on that column's hash instead: a key's rows survive in every table together, so joins on the
key stay whole. A table indexed on exactly that column is pruned by it; any other is filtered row
by row (consistent, not cheaper); a table without the column is read whole. Spark hashes an
``int`` and a ``bigint`` of the same value differently, so a key found in two types is reported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from dbt.adapters.qbeast.errors import QbeastModelConfigError

VAR = "qbeast_sample"
#: The table property a model built in a sampled run carries (its value: ``0.01`` or
#: ``0.01 on customer_id``); a full build of the model clears it.
SAMPLED_PROPERTY = "qbeast.sampled"
_ALLOWED = (f"allowed values: a number in (0, 1], e.g. {{{VAR}: 0.01}}, or "
            f"{{{VAR}: {{fraction: 0.01, key: customer_id}}}}")
_COLUMN = re.compile(r"^\s*\|-- (?P<name>[^:]+): (?P<type>.+?)(?: \(nullable = \w+\))?\s*$")


@dataclass(frozen=True)
class ProjectSample:
    """The requested sample: the fraction and, for join-consistent samples, the key column."""

    fraction: float
    key: Optional[str] = None

    @classmethod
    def from_vars(cls, cli_vars: Mapping[str, Any]) -> Optional["ProjectSample"]:
        """The sample the run's ``--vars`` ask for (None: a full build); a clear error for a
        value that is neither a fraction nor ``{fraction, key}``."""
        if VAR not in cli_vars or cli_vars[VAR] is None:
            return None
        value = cli_vars[VAR]
        fraction, key = value, None
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"fraction", "key"})
            if unknown or "fraction" not in value:
                raise QbeastModelConfigError(f"{VAR}: invalid value {value!r}; {_ALLOWED}")
            fraction, key = value["fraction"], value.get("key")
            if key is not None and (not isinstance(key, str) or not key.strip()):
                raise QbeastModelConfigError(f"{VAR}: invalid key {key!r}; allowed values: the "
                                             "name of a column, e.g. customer_id")
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise QbeastModelConfigError(f"{VAR}: invalid fraction {fraction!r}; {_ALLOWED}")
        return cls(float(fraction), key.strip() if key else None)

    def marker(self) -> str:
        """The value of :data:`SAMPLED_PROPERTY` on what this sample builds."""
        return f"{self.fraction:g}" + (f" on {self.key}" if self.key else "")

    def describe(self) -> str:
        on = f"the hash of {self.key}" if self.key else "its own index"
        return f"a {self.fraction:g} sample on {on}"


def sampled_marker(information: str) -> Optional[str]:
    """The :data:`SAMPLED_PROPERTY` of a relation, from ``SHOW TABLE EXTENDED``'s
    ``Table Properties: [k=v, ...]`` line (None: not built from a sample)."""
    for line in information.splitlines():
        if line.startswith("Table Properties: "):
            for item in line.split(": ", 1)[1].strip("[]").split(", "):
                key, _, value = item.partition("=")
                if key.strip().lower() == SAMPLED_PROPERTY:
                    return value.strip()
    return None


def column_types(information: str) -> Dict[str, str]:
    """Lower-cased column name -> Spark type, from the schema tree of ``SHOW TABLE EXTENDED``."""
    types: Dict[str, str] = {}
    for line in information.splitlines():
        match = _COLUMN.match(line)
        if match and line.startswith(" |-- "):  # top-level columns only
            types[match.group("name").strip().lower()] = match.group("type").strip()
    return types


@dataclass
class SampleDecisions:
    """What the run decided for each relation (decided once, logged once) and the key's type
    as first seen, to report a table that has it in another type."""

    decided: Dict[str, Optional[str]]
    key_type: Optional[Tuple[str, str]] = None

    @classmethod
    def empty(cls) -> "SampleDecisions":
        return cls({})

    def check_key_type(self, relation: str, key: str, type_name: Optional[str]) -> Optional[str]:
        """A warning when ``key`` has another type here than in the first table that had it."""
        if type_name is None:
            return None
        if self.key_type is None:
            self.key_type = (type_name, relation)
            return None
        first_type, first_relation = self.key_type
        if first_type == type_name:
            return None
        return (f"{VAR}: {key} is {type_name} in {relation} but {first_type} in {first_relation}: "
                "Spark hashes the two types differently, so the samples of these tables do not "
                f"keep the same keys; cast {key} to one type in both")
