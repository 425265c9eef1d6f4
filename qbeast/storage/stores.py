"""Which :class:`Storage` serves a location: the local file system or an object store.

Kept apart from ``base.py`` (the interface) and ``object_store.py`` (one backend) so that
neither imports the other's users; importing this module does not import ``obstore``.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

from qbeast.errors import InvalidOptionError
from qbeast.storage.base import LocalStorage, Storage
from qbeast.storage.object_store import SCHEMES, ObjectStorage, scheme_of

#: every scheme a location may carry (``file:`` and plain paths are the local file system)
SUPPORTED_SCHEMES = ("file", *SCHEMES)


def storage_for(location: str | os.PathLike[str], options: Mapping[str, object] | None = None) -> Storage:
    """The storage of ``location``: LocalStorage for plain paths and ``file:`` URIs, an
    :class:`ObjectStorage` for ``s3://``, ``s3a://``, ``gs://`` and ``abfss://``.

    ``options`` configure an object store (endpoint, credentials, ``single_writer``); they are
    refused for local paths rather than silently ignored. Anything else that is not a location
    (an empty string, a non-string) is left to the storage's ``resolve`` to reject, so local
    paths get exactly the errors they always had.
    """
    scheme = scheme_of(location) if isinstance(location, str) else None
    if scheme is None or scheme == "file":
        if options:
            raise InvalidOptionError(
                f"storage options {sorted(options)} apply to object stores only; "
                f"{str(location)!r} is a local path", option="storage_options", value=dict(options),
            )
        return LocalStorage()
    if scheme not in SCHEMES:
        raise InvalidOptionError(
            f"location {location!r} uses scheme {scheme!r}; supported: plain paths, "
            + ", ".join(f"{s}://" if s != "file" else "file:" for s in SUPPORTED_SCHEMES),
            option="location", value=location, allowed=list(SUPPORTED_SCHEMES),
        )
    return ObjectStorage(SCHEMES[scheme], options)
