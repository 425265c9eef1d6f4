"""dbt adapter plugin ``qbeast``: dbt-spark's adapter on an in-process session + the qbeast engine."""
from dbt.adapters.base import AdapterPlugin

from dbt.adapters.qbeast.connections import QbeastConnectionManager  # noqa: F401
from dbt.adapters.qbeast.credentials import QbeastCredentials
from dbt.adapters.qbeast.impl import QbeastAdapter
from dbt.include import qbeast

Plugin = AdapterPlugin(
    adapter=QbeastAdapter,  # type: ignore[arg-type]
    credentials=QbeastCredentials,
    include_path=qbeast.PACKAGE_PATH,
    dependencies=["spark"],
)
