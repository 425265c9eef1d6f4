"""The pure steps of an indexing write: no Spark, no files, no dbt.

What an OTree write computes, as functions of numpy arrays and Arrow batches so that each step can
be read and tested without a Spark session (the Spark layer, ``qbeast.spark``, only ships them to
tasks and gathers their results):

* :mod:`~qbeast.index.points` — Arrow columns -> canonical values -> normalized points;
* :mod:`~qbeast.index.row_weights` — Spark's ``hash()`` reproduced for Python workers;
* :mod:`~qbeast.index.cube_tree` — a set of cubes laid out for vectorized root-to-leaf walks;
* :mod:`~qbeast.index.estimation` — local trees, cube domains, thresholds and block sizes;
* :mod:`~qbeast.index.assignment` — the write plan: row -> cube -> file;
* :mod:`~qbeast.index.tally` — per-batch block counts and NaN flags, merged across tasks;
* :mod:`~qbeast.index.thresholds` — an existing index's thresholds as appends and optimize use
  them, and the zero-element blocks that record lowered ones;
* :mod:`~qbeast.index.batches` — the Arrow batches a task hands to these steps.
"""
