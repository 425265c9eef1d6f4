"""The read wing: planning which files a read opens, and the Spark jobs and sources that read them.

Kept free of imports: Spark imports ``qbeast.spark.read.datasource`` in every Python worker of a
SQL read, so this package must stay light (``tests/unit/test_layering.py`` checks it).
"""
