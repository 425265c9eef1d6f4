"""Adapter version, read by ``dbt debug`` and ``dbt --version`` (kept equal to the engine's)."""
version = "0.1.0"
