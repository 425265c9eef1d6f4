"""The embedded session opens Spark's own ports on loopback only, and they need Spark's secret.

The shared test session is built by ``qbeast.get_or_create_session`` with a local master, as
dbt's session method and ``qbeast serve`` build theirs. Spark's defaults would put the driver's
RPC and block-manager ports on the machine's external address, without authentication.
"""
from __future__ import annotations

import os

import pytest

from listening_sockets import listening, spark_rpc_answers

pytestmark = pytest.mark.spark


def test_an_embedded_session_listens_on_loopback_and_refuses_rpc_without_the_secret(spark):
    spark.range(0, 1000, 1, 4).selectExpr("id % 7 as k").groupBy("k").count().collect()
    sockets = listening(os.getpid())
    assert sockets, "the session's JVM is a child of this process and listens somewhere"
    assert {address for address, _ in sockets} <= {"127.0.0.1", "::1"}, sockets
    answers = spark_rpc_answers("127.0.0.1", [port for _, port in sockets])
    # the driver's RPC and its block manager; py4j's gateway and the workers' daemon are no
    # Spark RPC ports and only close the connection
    assert sum(a.startswith("refused: ") for a in answers.values()) >= 2, answers
    assert not any(a.startswith("answered: ") for a in answers.values()), answers
