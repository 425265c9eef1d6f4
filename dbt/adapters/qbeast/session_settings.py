"""Where the embedded catalog lives and which Spark settings a dbt connection asks for.

Pure functions (no Spark) so the path and configuration rules are testable on their own.

Why the dbt project folder: Spark's defaults put ``metastore_db/`` and ``spark-warehouse/`` in the
process's working directory, so ``dbt run`` from the project and ``dbt test`` from its parent would
see two different catalogs. Anchoring both in the project folder (``catalog_dir`` of the profile)
gives every invocation the same tables.
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Dict, Optional

# Settings a user may supply in server_side_parameters to use an external catalog; when one is
# present the adapter leaves the corresponding embedded default alone.
WAREHOUSE_KEY = "spark.sql.warehouse.dir"
METASTORE_URL_KEYS = ("spark.hadoop.javax.jdo.option.ConnectionURL", "javax.jdo.option.ConnectionURL")
EXTERNAL_METASTORE_KEYS = ("spark.hadoop.hive.metastore.uris", "hive.metastore.uris", "spark.remote")
DRIVER_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
ENGINE_DRIVER_JAVA_OPTIONS = "-Duser.timezone=UTC"


def project_root_of(config: Any) -> Path:
    """The dbt project folder of the running invocation, as an absolute path.

    Most commands hand the adapter a RuntimeConfig that knows ``project_root``. ``dbt debug``
    only has the profile, so fall back to the task context variable dbt sets, then to dbt's
    ``--project-dir`` flag (which dbt already resolved by searching the working directory and its
    parents for ``dbt_project.yml``), and only then to the working directory.
    """
    candidates = [getattr(config, "project_root", None), _context_project_root(), _flag_project_dir()]
    for candidate in candidates:
        if candidate:
            return Path(os.fspath(candidate)).expanduser().resolve()
    return Path.cwd().resolve()


def _context_project_root() -> Optional[str]:
    try:
        from dbt_common.events.contextvars import get_project_root
    except ImportError:  # pragma: no cover - dbt-common is a dependency of every dbt adapter
        return None
    return get_project_root()


def _flag_project_dir() -> Optional[str]:
    try:
        from dbt.flags import get_flags
    except ImportError:  # dbt-core absent: the adapter is used as a library
        return None
    return getattr(get_flags(), "PROJECT_DIR", None)


def catalog_path(catalog_dir: str, project_root: Path) -> Path:
    """``catalog_dir`` made absolute; relative paths hang off the project folder."""
    path = Path(os.path.expandvars(catalog_dir)).expanduser()
    return path if path.is_absolute() else (project_root / path).resolve()


def connection_spark_conf(
    server_side_parameters: Mapping[str, Any], catalog: Path
) -> Dict[str, str]:
    """Spark settings of a dbt connection: embedded catalog defaults, then the user's parameters.

    The user's ``server_side_parameters`` win, except that the driver's Java options always keep
    ``-Duser.timezone=UTC`` (the engine relies on a UTC JVM) and the Derby paths are prepended.
    """
    user = {str(k): str(v) for k, v in server_side_parameters.items()}
    conf: Dict[str, str] = {}
    external = any(key in user for key in EXTERNAL_METASTORE_KEYS)
    java_options = [ENGINE_DRIVER_JAVA_OPTIONS]
    if WAREHOUSE_KEY not in user and "spark.remote" not in user:
        conf[WAREHOUSE_KEY] = str(catalog / "warehouse")
    if not external and not any(key in user for key in METASTORE_URL_KEYS):
        url = f"jdbc:derby:;databaseName={catalog / 'metastore_db'};create=true"
        conf[METASTORE_URL_KEYS[0]] = url
        # derby.log would otherwise land in the working directory.
        java_options.append(f"-Dderby.system.home={catalog}")
        java_options.append(f"-Dderby.stream.error.file={catalog / 'derby.log'}")
    user_java = user.pop(DRIVER_JAVA_OPTIONS_KEY, "")
    conf.update(user)
    conf[DRIVER_JAVA_OPTIONS_KEY] = " ".join(java_options + ([user_java] if user_java else []))
    return conf
