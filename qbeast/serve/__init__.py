"""``qbeast serve``: the server and the SQL procedures it offers its clients.

:mod:`.server` starts one Spark driver with the engine in it and serves its catalog through Spark
Connect and the Thrift JDBC/ODBC protocol; :mod:`.procedures` gives SQL-only clients the table
operations (``CALL qbeast_system.optimize(...)``). Both use the table API and the operations, so
the package sits at the command line's level, above them and above the Spark layer (which never
imports it: ``tests/unit/test_layering.py`` checks it). Kept free of imports: ``qbeast.cli``
imports it only when ``qbeast serve`` runs.
"""
