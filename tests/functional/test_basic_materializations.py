"""dbt-tests-adapter's basic suites on `table`, `view`, `ephemeral` and seed materializations.

These are dbt's own adapter conformance tests, run unchanged against the qbeast adapter on the
shared in-process Spark session.
"""
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection


class TestSimpleMaterializationsQbeast(BaseSimpleMaterializations):
    pass


class TestEmptyQbeast(BaseEmpty):
    pass


class TestEphemeralQbeast(BaseEphemeral):
    pass


class TestSingularTestsQbeast(BaseSingularTests):
    pass


class TestGenericTestsQbeast(BaseGenericTests):
    pass


class TestValidateConnectionQbeast(BaseValidateConnection):
    pass


class TestTableMaterializationQbeast(BaseTableMaterialization):
    pass
