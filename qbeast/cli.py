"""The ``qbeast`` command line: ``qbeast describe TABLE [--version N] [--json] [--files]``,
``qbeast show TABLE --output FILE.html [--sample F] [--filter SQL] [--png FILE.png]`` and
``qbeast serve [--catalog-dir DIR] [--connect-port N] [--thrift-port N] [--master URL]``.

``describe`` answers "what is in this table?" without starting Spark: the Delta facts (version,
protocol, schema, properties, file/row/byte counts) from the transaction log, and for a Qbeast
table its revisions (indexed columns, transformer types, cube size) with their file and cube
counts, decoded by the format core. ``--files`` adds every active file with its tags, ``--json``
prints one JSON document for scripts.

TABLE is a folder (a path or ``file:`` URI) or a catalog name, ``schema.table`` or a table name
unique across schemas, looked up in the names file the dbt adapter keeps beside the embedded
catalog (:mod:`qbeast.names`; found from the dbt project around the working directory, or given
with ``--catalog-dir``). Output piped into a command that stops reading (``| head``) just ends.

``show`` writes one self-contained HTML page of the table's index (every live revision's tree,
its files with their weight bands, per-depth totals; :mod:`qbeast.operations.index_page`); with
``--sample`` and/or ``--filter`` the page marks what that read opens and the command prints the
read planner's explanation (:mod:`qbeast.operations.explain`). It reads only the Delta log.

``serve`` starts one Spark driver with the engine in it and serves its catalog through Spark
Connect and the Thrift JDBC/ODBC protocol until SIGTERM or Ctrl-C (:mod:`qbeast.serve.server`,
docs/serve.md). It is the only command that starts Spark; its imports wait until it runs.

Exit codes: 0 success; 2 when the path is not a Delta table, the name is unknown, the log or the
Qbeast metadata is corrupt, the server cannot start as asked, or the arguments are wrong
(argparse's convention for usage errors).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from qbeast import __version__
from qbeast.errors import InvalidOptionError, QbeastError

EXIT_OK = 0
EXIT_ERROR = 2


def _iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    stamp = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _type_text(spark_type: Any) -> str:
    """Spark-like text of a schema type (``struct<a:int>``, ``array<string>``, ``decimal(10,2)``)."""
    if isinstance(spark_type, str):
        return spark_type
    kind = spark_type.get("type")
    if kind == "struct":
        inner = ",".join(f"{f['name']}:{_type_text(f['type'])}" for f in spark_type.get("fields", []))
        return f"struct<{inner}>"
    if kind == "array":
        return f"array<{_type_text(spark_type['elementType'])}>"
    if kind == "map":
        return f"map<{_type_text(spark_type['keyType'])},{_type_text(spark_type['valueType'])}>"
    return json.dumps(spark_type, separators=(",", ":"))


def _revision_facts(snapshot: Any) -> dict[str, Any]:
    """Qbeast part of the description (the format core decodes revisions and tags)."""
    from qbeast.snapshot import QbeastSnapshot

    qs = QbeastSnapshot(snapshot)
    if not qs.is_qbeast:
        return {"is_qbeast": False}
    by_revision = qs.files_by_revision()
    revisions = []
    for rid, revision in sorted(qs.revisions.items()):
        files = by_revision.get(rid, [])
        cubes = len(qs.index_status(rid).cubes) if files else 0
        revisions.append({
            "id": rid,
            "timestamp": revision.timestamp,
            "staging": revision.is_staging,
            "cube_size": revision.desired_cube_size,
            "columns": [
                {
                    "name": t.column_name,
                    "transformer": t.type_name,
                    "data_type": t.data_type.value if t.data_type is not None else None,
                }
                for t in revision.column_transformers
            ],
            "files": len(files),
            "cubes": cubes,
        })
    unknown = sorted(set(by_revision) - set(qs.revisions))
    return {
        "is_qbeast": True,
        "latest_revision_id": qs.latest_revision_id,
        "needs_upgrade": qs.needs_upgrade,
        "revisions": revisions,
        "files_in_unknown_revisions": {str(r): len(by_revision[r]) for r in unknown},
    }


def describe(path: str, version: int | None = None, with_files: bool = False) -> dict[str, Any]:
    """Everything ``qbeast describe`` shows, as a JSON-ready dict."""
    from qbeast.delta.errors import CorruptLogError, UnsupportedFeatureError
    from qbeast.delta.features import describe_protocol
    from qbeast.delta.log import DeltaLog

    snapshot = DeltaLog.for_path(path).snapshot(version=version)
    try:
        fields = snapshot.schema.get("fields", [])
        snapshot.check_readable()
        unsupported = None
    except (UnsupportedFeatureError, CorruptLogError) as exc:  # still describe the rest
        unsupported = str(exc)
        fields = [] if snapshot.metadata.schema_string is None else snapshot.schema["fields"]
    facts: dict[str, Any] = {
        "path": snapshot.table_path,
        "version": snapshot.version,
        "timestamp": _iso(snapshot.timestamp),
        "protocol": {**snapshot.protocol.to_json(), "summary": describe_protocol(snapshot.protocol)},
        "unsupported": unsupported,
        "table_id": snapshot.metadata.id,
        "schema": [
            {"name": f["name"], "type": _type_text(f["type"]), "nullable": f.get("nullable", True)}
            for f in fields
        ],
        "partition_columns": snapshot.partition_columns,
        "configuration": dict(snapshot.configuration),
        "num_files": snapshot.num_files,
        "num_rows": snapshot.num_records,
        "size_bytes": snapshot.size_bytes,
        "qbeast": _revision_facts(snapshot),
    }
    if with_files:
        facts["files"] = [
            {"path": a.path, "size": a.size, "rows": a.num_records,
             "partition_values": a.partition_values, "tags": a.tags}
            for a in snapshot.files.values()
        ]
    return facts


def _bytes_text(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{n} B ({value:.1f} {unit})"
        value /= 1024
    return f"{n} B"


def _short(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_text(facts: dict[str, Any], out: TextIO) -> None:
    """Human-readable form of :func:`describe`'s result."""
    w = out.write
    w(f"Table:      {facts['path']}\n")
    w(f"Version:    {facts['version']} (committed {facts['timestamp']})\n")
    w(f"Protocol:   {facts['protocol']['summary']}\n")
    if facts["unsupported"]:
        w(f"Warning:    {facts['unsupported']}\n")
    w(f"Table id:   {facts['table_id']}\n")
    rows = facts["num_rows"]
    w(f"Files:      {facts['num_files']}\n")
    w(f"Rows:       {rows if rows is not None else 'unknown (some files have no statistics)'}\n")
    w(f"Bytes:      {_bytes_text(facts['size_bytes'])}\n")
    w("Schema:\n")
    width = max((len(f["name"]) for f in facts["schema"]), default=0)
    for f in facts["schema"]:
        w(f"  {f['name']:<{width}}  {f['type']}{'' if f['nullable'] else ' not null'}\n")
    parts = facts["partition_columns"]
    w(f"Partition columns: {', '.join(parts) if parts else '(none)'}\n")
    w("Configuration:\n" if facts["configuration"] else "Configuration: (empty)\n")
    for key, value in sorted(facts["configuration"].items()):
        w(f"  {key} = {_short(value)}\n")
    q = facts["qbeast"]
    if not q["is_qbeast"]:
        w("Qbeast:     no (plain Delta table: no qbeast.lastRevisionID property)\n")
    else:
        w(f"Qbeast:     yes, latest revision {q['latest_revision_id']}"
          f"{' (pre-0.6 metadata: run upgrade_format)' if q['needs_upgrade'] else ''}\n")
        w("Revisions:\n")
        for r in q["revisions"]:
            cols = ", ".join(
                f"{c['name']}:{c['transformer']}" + (f"({c['data_type']})" if c["data_type"] else "")
                for c in r["columns"]
            )
            w(f"  revision {r['id']}{' (staging)' if r['staging'] else ''}: cube size "
              f"{r['cube_size']}, created {_iso(r['timestamp'])}\n")
            w(f"    columns: {cols}\n")
            w(f"    files: {r['files']}, cubes: {r['cubes']}\n")
        for rid, count in q["files_in_unknown_revisions"].items():
            w(f"  warning: {count} file(s) tagged with revision {rid}, which the metadata lacks\n")
    if "files" in facts:
        w("Active files:\n")
        for f in facts["files"]:
            w(f"  {f['path']}  size={f['size']} rows={f['rows']}")
            if f["partition_values"]:
                w(f" partition={json.dumps(f['partition_values'], separators=(',', ':'))}")
            w(f" tags={json.dumps(f['tags'], separators=(',', ':'))}\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="qbeast", description="Inspect Qbeast (and plain Delta) tables without Spark, or "
        "serve a catalog of them to SQL clients.")
    parser.add_argument("--version", action="version", version=f"dbt-qbeast {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    desc = sub.add_parser("describe", help="show a table's version, schema, files and Qbeast revisions")
    desc.add_argument("path", metavar="TABLE",
                      help="table folder (local path or file: URI), or a catalog name "
                           "(schema.table, or a table name unique across schemas)")
    desc.add_argument("--catalog-dir", metavar="DIR", default=None,
                      help="the dbt profile's catalog_dir that names are looked up in (default: "
                           "found in the dbt project around the working directory)")
    desc.add_argument("--version", dest="table_version", type=int, metavar="N", default=None,
                      help="describe table version N (time travel) instead of the latest")
    desc.add_argument("--json", action="store_true", help="print one JSON document")
    desc.add_argument("--files", action="store_true", help="list the active files with their tags")
    show = sub.add_parser(
        "show", help="write an HTML page of a table's index (and of what a read opens)",
        description="Write one self-contained HTML page (no server, no network) of the table's "
                    "index: the tree of every live revision, its files with their weight bands "
                    "and the totals per depth. With --sample and/or --filter the page marks the "
                    "cubes and files that read opens, and the read's explanation is printed.")
    show.add_argument("path", metavar="TABLE", help="table folder or catalog name (as for describe)")
    show.add_argument("--output", "-o", required=True, metavar="FILE.html",
                      help="the page to write (an .html file)")
    show.add_argument("--sample", type=float, metavar="F", default=None,
                      help="mark what sample(F) reads, F in [0, 1]")
    show.add_argument("--filter", metavar="SQL", default=None,
                      help="mark what a read with this SQL predicate reads, e.g. \"x < 10\"")
    show.add_argument("--png", metavar="FILE.png", default=None,
                      help="also save a screenshot of the page (needs a headless Chromium: "
                           "Debian's chromium package, or Chrome)")
    show.add_argument("--version", dest="table_version", type=int, metavar="N", default=None,
                      help="show table version N (time travel) instead of the latest")
    show.add_argument("--catalog-dir", metavar="DIR", default=None,
                      help="the dbt profile's catalog_dir that names are looked up in")
    from qbeast.spark.embedded_catalog import DEFAULT_FOLDER

    serve = sub.add_parser(
        "serve", help="serve a catalog's tables through Spark Connect and Thrift JDBC/ODBC",
        description="Start one Spark driver with the qbeast engine and serve the embedded catalog "
                    "through Spark Connect and the Thrift JDBC/ODBC protocol until SIGTERM or "
                    "Ctrl-C: on loopback by default; on another address only with a token.")
    serve.add_argument("--catalog-dir", metavar="DIR", default=DEFAULT_FOLDER,
                       help=f"the catalog folder to serve (a dbt project's catalog_dir; default "
                            f"{DEFAULT_FOLDER} in the working directory)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind (default 127.0.0.1; any other address, e.g. "
                            "0.0.0.0, needs a token)")
    serve.add_argument("--token-file", metavar="FILE", default=None,
                       help="a file holding the shared secret every client must present (or the "
                            "environment variable QBEAST_SERVE_TOKEN); required off loopback")
    serve.add_argument("--connect-port", type=int, default=15002, metavar="N",
                       help="Spark Connect port (default 15002; 0: off)")
    serve.add_argument("--thrift-port", type=int, default=10000, metavar="N",
                       help="Thrift JDBC/ODBC port (default 10000; 0: off)")
    serve.add_argument("--master", default="local[*]",
                       help="Spark master of the driver (default local[*])")
    serve.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                       help="a Spark setting for the driver (repeatable)")
    return parser


def main(argv: list[str] | None = None, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Entry point of the ``qbeast`` console script; returns the process exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return run_serve(args, err)
    if args.command == "show":
        return run_show(args, out, err)
    try:
        path = resolve_table(args.path, args.catalog_dir)
        facts = describe(path, args.table_version, args.files)
    except QbeastError as exc:
        err.write(f"qbeast describe: error: {exc}\n")
        return EXIT_ERROR
    except OSError as exc:  # unreadable files: permissions, I/O errors
        reason = exc.strerror or str(exc)
        err.write(f"qbeast describe: error: cannot read {args.path}: {reason}\n")
        return EXIT_ERROR
    try:
        if args.json:
            json.dump(facts, out, indent=2)
            out.write("\n")
        else:
            render_text(facts, out)
        out.flush()
    except BrokenPipeError:
        # the reader stopped (`| head`): nothing more to say; keep Python from complaining at exit
        _silence_stdout(out)
    return EXIT_OK


def run_show(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """``qbeast show``: write the page, print the read's explanation when one was asked for."""
    from qbeast.operations.index_page import screenshot, write_page
    from qbeast.operations.index_picture import table_picture

    try:
        picture = table_picture(resolve_table(args.path, args.catalog_dir), args.sample, args.filter,
                                args.table_version)
        written = write_page(picture, args.output)
        if args.png is not None:
            screenshot(written, args.png)
    except QbeastError as exc:
        err.write(f"qbeast show: error: {exc}\n")
        return EXIT_ERROR
    except OSError as exc:
        err.write(f"qbeast show: error: {exc.strerror or exc}\n")
        return EXIT_ERROR
    if picture.selection is not None:
        out.write(f"{picture.selection}\n")
    out.write(f"wrote {written}{f' and {args.png}' if args.png else ''}\n")
    return EXIT_OK


def run_serve(args: argparse.Namespace, err: TextIO) -> int:
    """``qbeast serve``: serve until SIGTERM or Ctrl-C; 2 when it cannot start as asked."""
    import signal
    import threading

    from qbeast.spark.embedded_catalog import EmbeddedCatalog
    from qbeast.serve.procedures import enable_sql_procedures
    from qbeast.serve.server import ServeOptions, serve

    logging.getLogger("qbeast").setLevel(logging.INFO)
    conf: dict[str, str] = {}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            err.write(f"qbeast serve: error: --conf {item!r} is not KEY=VALUE\n")
            return EXIT_ERROR
        conf[key.strip()] = value
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler signature
        stop.set()

    def take_signals(*_: Any) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, on_signal)

    take_signals()
    try:
        token = serve_token(args.token_file)
    except InvalidOptionError as exc:
        err.write(f"qbeast serve: error: {exc}\n")
        return EXIT_ERROR
    options = ServeOptions(EmbeddedCatalog.at(args.catalog_dir), host=args.host,
                           connect_port=args.connect_port, thrift_port=args.thrift_port,
                           master=args.master, conf=conf, token=token)
    try:
        serve(options, stop, on_ready=take_signals, prepare=enable_sql_procedures)
    except QbeastError as exc:
        err.write(f"qbeast serve: error: {exc}\n")
        return EXIT_ERROR
    return EXIT_OK


def serve_token(token_file: str | None) -> str | None:
    """The server's shared secret: the first line of ``--token-file``, else the environment
    variable ``QBEAST_SERVE_TOKEN``, else none. A file keeps the secret out of ``ps`` output."""
    if token_file is not None:
        try:
            lines = Path(token_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise InvalidOptionError(
                f"--token-file {token_file}: cannot read it ({exc.strerror}); allowed values: a "
                "readable file whose first line is the secret") from None
        token = lines[0].strip() if lines else ""
        if not token:
            raise InvalidOptionError(
                f"--token-file {token_file} is empty; allowed values: a file whose first line is "
                "the secret")
        return token
    value = os.environ.get("QBEAST_SERVE_TOKEN", "").strip()
    return value or None


def _silence_stdout(out: TextIO) -> None:
    if out is sys.stdout:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass


def resolve_table(table: str, catalog_dir: str | None = None) -> str:
    """The folder of ``table``: itself when it is a path, else the recorded catalog name's."""
    from qbeast import names

    if "/" in table or ":" in table or os.path.exists(table):
        return table
    folders = [Path(catalog_dir)] if catalog_dir else names.find_catalog_folders(Path.cwd())
    if not folders:
        raise InvalidOptionError(
            f"{table!r} is neither a table folder nor a catalog name this folder knows (no dbt "
            "project with a qbeast catalog around the working directory); pass a path, or the "
            "catalog with --catalog-dir"
        )
    errors = []
    for folder in folders:
        try:
            return names.lookup(folder, table)
        except InvalidOptionError as exc:
            errors.append(str(exc))
    raise InvalidOptionError("; ".join(errors))


if __name__ == "__main__":
    sys.exit(main())
