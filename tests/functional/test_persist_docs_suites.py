"""dbt-tests-adapter's persist_docs suites: descriptions of models and columns persisted as
catalog comments and read back by ``dbt docs generate``, for a plain table (parquet, the default),
a view and a qbeast table.

What they pinned: a plain table's column descriptions were dropped (dbt-spark alters column
comments of delta, hudi and iceberg tables only), a multi-line table comment reached
``catalog.json`` cut at its first line, and a column comment over the Derby metastore's 256
characters failed the model.
"""
from __future__ import annotations

import pytest

from dbt.tests.adapter.persist_docs.test_persist_docs import (
    BasePersistDocs,
    BasePersistDocsAllColumnsMissing,
    BasePersistDocsColumnMissing,
    BasePersistDocsCommentOnQuotedColumn,
    BasePersistDocsQuotedColumnCaseSensitive,
    BasePersistDocsQuotedDescriptionNotAppliedOnMismatch,
)


class TestPersistDocsQbeast(BasePersistDocs):
    pass


class TestPersistDocsQbeastTables(BasePersistDocs):
    """The suite's table model as a qbeast table (dbt-spark's spelling, file_format='qbeast')."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": {"+persist_docs": {"relation": True, "columns": True},
                                    "+file_format": "qbeast", "+columns_to_index": ["id"]}}}


class TestPersistDocsColumnMissingQbeast(BasePersistDocsColumnMissing):
    pass


class TestPersistDocsAllColumnsMissingQbeast(BasePersistDocsAllColumnsMissing):
    pass


class TestPersistDocsCommentOnQuotedColumnQbeast(BasePersistDocsCommentOnQuotedColumn):
    pass


class TestPersistDocsQuotedColumnCaseSensitiveQbeast(BasePersistDocsQuotedColumnCaseSensitive):
    pass


class TestPersistDocsQuotedDescriptionNotAppliedOnMismatchQbeast(
        BasePersistDocsQuotedDescriptionNotAppliedOnMismatch):
    pass
