"""The Spark side of the engine: indexing jobs, read planning and the ``qbeast`` data source."""
