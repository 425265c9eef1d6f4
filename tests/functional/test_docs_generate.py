"""dbt-tests-adapter's BaseDocsGenerate on the qbeast profile (dbt-spark's catalog conventions)."""
from __future__ import annotations

import getpass

import pytest

from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate


class TestDocsGenerateQbeast(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def profile_user(self):
        """The owner Spark's embedded catalog records: the OS user running the session."""
        return getpass.getuser()

    @pytest.fixture(scope="class")
    def expected_catalog(self, project, profile_user):
        # dbt-spark reports the catalog from SHOW TABLE EXTENDED: Spark's type names, lower-case
        # relation types, the owner from the metastore.
        return expected_catalog.base_expected_catalog(
            project,
            role=profile_user,
            id_type="long",
            text_type="string",
            time_type="timestamp",
            view_type="view",
            table_type="table",
            model_stats=expected_catalog.no_stats(),
        )
