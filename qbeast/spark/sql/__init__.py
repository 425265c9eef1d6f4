"""The SQL wing: what Spark SQL and the JVM bridge call back into.

``format("qbeast")`` and ``USING qbeast`` reach the engine here: :mod:`.sources` registers the
source a session reads through (the bridge, or the Python data source), :mod:`.python_planner` is
the Py4J planner object the bridge asks which files each scan reads (answered by
:mod:`.sql_planner`), and :mod:`.sql_writer` is the writer the bridge hands a statement's rows to.

Each of them needs both the read wing (planning, the data source) and the write wing (the
indexed write), so they sit above ``read/`` and ``write/`` in a wing of their own, and neither of
those imports it (``tests/unit/test_layering.py`` checks it). Kept free of imports, like the read
wing's package: the session builder imports :mod:`.sources` inside its function only.
"""
