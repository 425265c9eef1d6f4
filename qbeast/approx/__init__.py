"""Approximate aggregates from Qbeast samples: which aggregates, and how sure an estimate is.

Pure statistics (no Spark, no files): :mod:`qbeast.approx.aggregates` parses what a user asks
for and refuses what cannot be bounded honestly; :mod:`qbeast.approx.estimator` turns the
per-cluster sufficient statistics of the rows read in a weight range into estimates, intervals
and the checks that say when an interval cannot be trusted. docs/approx.md states the method.
"""
