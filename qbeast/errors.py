"""Exception hierarchy shared by every layer of the engine.

Kept free of imports so that the format core, the transaction log, the Spark engine and the dbt
adapter can all raise and catch the same types without depending on each other.
"""


class QbeastError(Exception):
    """Base class of every error raised by dbt-qbeast's engine."""


class InvalidOptionError(QbeastError, ValueError):
    """A user-supplied option, argument or configuration value is not acceptable.

    The message always names the option and the allowed values.
    """


class FormatError(QbeastError, ValueError):
    """On-disk Qbeast metadata (revision JSON, block tags, cube strings) is malformed."""


class UnsupportedTypeError(QbeastError, TypeError):
    """A column's data type cannot be indexed."""


class WriteCancelled(QbeastError):
    """A write was abandoned before its commit because its caller asked to stop (e.g. Ctrl-C).

    Nothing was committed and the files it had written are deleted.
    """
