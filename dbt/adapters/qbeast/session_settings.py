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

from qbeast import EmbeddedCatalog

# Settings a user may supply in server_side_parameters to use an external catalog; when one is
# present the adapter leaves the corresponding embedded default alone.
WAREHOUSE_KEY = "spark.sql.warehouse.dir"
METASTORE_URL_KEYS = ("spark.hadoop.javax.jdo.option.ConnectionURL", "javax.jdo.option.ConnectionURL")
EXTERNAL_METASTORE_KEYS = ("spark.hadoop.hive.metastore.uris", "hive.metastore.uris", "spark.remote")
DRIVER_JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"


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
    return EmbeddedCatalog.at(catalog_dir, project_root).folder


def connection_spark_conf(
    server_side_parameters: Mapping[str, Any], catalog: Path, console_log_level: str = "fatal"
) -> Dict[str, str]:
    """Spark settings of a dbt connection: embedded catalog defaults, then the user's parameters.

    The user's ``server_side_parameters`` win, except that the driver's Java options are
    joined: the Derby paths and log options first, the user's after them. The engine's session
    (``qbeast.spark.session.session_conf``) puts its own (a UTC clock) in front of all of them.
    The driver's own logging goes to ``<catalog>/spark.log``, with only ``console_log_level`` and
    above on the console, unless the user's Java options name their own log4j configuration.
    """
    user = {str(k): str(v) for k, v in server_side_parameters.items()}
    conf: Dict[str, str] = {}
    java_options: list = []
    embedded = EmbeddedCatalog(catalog)
    if WAREHOUSE_KEY not in user and "spark.remote" not in user:
        conf[WAREHOUSE_KEY] = str(embedded.warehouse)
    if uses_embedded_metastore(user):
        # the Derby database and the metastore settings that go with it
        conf.update({k: v for k, v in embedded.spark_conf().items() if k != WAREHOUSE_KEY})
        java_options.extend(embedded.java_options())
    user_java = user.pop(DRIVER_JAVA_OPTIONS_KEY, "")
    if "spark.remote" not in user and "log4j" not in user_java:
        java_options.extend(quiet_log_options(catalog, console_log_level))
    conf.update(user)
    if user_java:
        java_options.append(user_java)
    if java_options:
        conf[DRIVER_JAVA_OPTIONS_KEY] = " ".join(java_options)
    return conf


def uses_embedded_metastore(server_side_parameters: Mapping[str, Any]) -> bool:
    """True unless the profile points Spark at another metastore (or at a Connect server)."""
    keys = {str(k) for k in server_side_parameters}
    return not any(key in keys for key in (*EXTERNAL_METASTORE_KEYS, *METASTORE_URL_KEYS))


#: log4j2 configuration of the driver the adapter starts (console quiet, warnings to a file).
LOG4J_CONFIG = Path(__file__).with_name("spark-log4j2.properties")
LOG_LEVELS = ("all", "trace", "debug", "info", "warn", "error", "fatal", "off")
#: Environment variable that asks for Spark's log on the console (e.g. ``warn`` or ``info``).
LOG_LEVEL_ENV = "QBEAST_SPARK_LOG_LEVEL"


def console_log_level(debug: bool, environ: Mapping[str, str]) -> str:
    """What the driver logs to the console: ``QBEAST_SPARK_LOG_LEVEL``, ``warn`` with dbt's
    ``--debug``, else only fatal errors."""
    asked = str(environ.get(LOG_LEVEL_ENV, "")).strip().lower()
    if asked in LOG_LEVELS:
        return asked
    return "warn" if debug else "fatal"


def spark_log_file(catalog: Path) -> Path:
    """The log file of the driver (and of PySpark's error records) for ``catalog``."""
    return catalog / "spark.log"


def quiet_log_options(catalog: Path, console_level: str) -> list:
    """Java options that load the adapter's log4j2 configuration (see spark-log4j2.properties)."""
    order = LOG_LEVELS
    root = console_level if order.index(console_level) < order.index("warn") else "warn"
    return [
        f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}",
        f"-Dqbeast.log.file={spark_log_file(catalog)}",
        f"-Dqbeast.log.consoleLevel={console_level}",
        f"-Dqbeast.log.rootLevel={root}",
    ]
