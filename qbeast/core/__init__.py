"""The Qbeast format, exactly as qbeast-spark writes it, in pure Python (no Spark, no I/O)."""
