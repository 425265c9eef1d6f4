"""Does a change that only moves code cost performance? The quick write, read, optimize and merge benchmarks on two trees.

A reshaping (modules moved, hand-offs retyped) must not slow the engine down, but on a shared
2-core machine one run of each tree says little: sub-second timings move by ±30% between runs of
the same code. So this script runs ``run_all.py --quick --only write,sampling,sql,optimize,merge
--no-report`` (this checkout's benchmark scripts, each tree's engine) on
a baseline revision and on the current one, alternating them (``B A A B`` for two rounds, so
that a trend in the machine's load hits both alike), and compares **in-run ratios**: each
figure is divided by a baseline measured in the same run on the same data (the same run's plain
parquet write, full scan or native parquet query, deltalake's Z-order optimize or merge), which
absorbs most of the load.

Each tree is a ``git archive`` copy (uncommitted edits and build leftovers stay out) with its own
bridge jar (copied when ``jvm/`` is the same in both, built otherwise), run with the same
virtualenv and ``PYTHONPATH`` pointing at the copy; the script checks that the copy's ``qbeast``
is the one imported. The report, ``benchmarks/results/reshape.md`` by default, gives per metric
the median of each tree's runs, their spread, the quotient and a verdict: ``slower`` or
``faster`` only where the two trees' ranges do not overlap, ``noise`` otherwise.

Usage: ``.venv/bin/python benchmarks/bench_reshape.py --base 9ad8cbe`` (about 5 minutes a run).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = HERE / ".data" / "reshape"
SECTIONS = "write,sampling,sql,optimize,merge"
JAR = Path("qbeast") / "jars" / "qbeast-bridge.jar"

logger = logging.getLogger("qbeast.benchmarks.reshape")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def prepare_tree(revision: str, label: str) -> Path:
    """A clean copy of ``revision`` under ``benchmarks/.data/reshape/<label>`` with its bridge jar."""
    tree = WORK / label
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    (tree / JAR).parent.mkdir(parents=True, exist_ok=True)
    same_jvm = not _git("diff", "--name-only", revision, "HEAD", "--", "jvm")
    if same_jvm and (ROOT / JAR).is_file():
        shutil.copy(ROOT / JAR, tree / JAR)
    else:
        subprocess.run([sys.executable, str(tree / "jvm" / "build_jar.py"), "--output", str(tree / JAR)],
                       cwd=tree, check=True)
    return tree


def _env(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree)
    return env


def check_imports_copy(tree: Path) -> None:
    """Refuse to measure when the virtualenv's editable install would shadow the copy."""
    found = subprocess.run([sys.executable, "-c", "import qbeast; print(qbeast.__file__)"], cwd=tree,
                           env=_env(tree), check=True, capture_output=True, text=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"{tree}: `import qbeast` loads {found}, not the copy; cannot measure it")


def run_tree(tree: Path, log: Path) -> dict:
    """One quick run of the sections on ``tree``'s engine; its raw results.

    The benchmark code is this checkout's for both trees (the engine comes from ``tree`` through
    ``PYTHONPATH``): both are measured by the same scripts, and a section added after the
    baseline (merge) measures the baseline too. The scripts use the engine's public API and a
    few stable internals only."""
    with log.open("w") as out:
        subprocess.run([sys.executable, str(HERE / "run_all.py"), "--quick", "--only", SECTIONS,
                        "--no-report"], cwd=tree, env=_env(tree), check=True, stdout=out,
                       stderr=subprocess.STDOUT)
    return json.loads((HERE / ".data" / "results-quick.json").read_text())


def _shape(name: str) -> str:
    """A SQL shape's short name: its filter text left out (the report's header shows the SQL)."""
    return name if name.startswith("TABLESAMPLE") else name.split(" (")[0]


def metrics(results: dict) -> Iterator[tuple[str, float]]:
    """(name, value) of every compared figure of one run: in-run ratios first, then seconds."""
    write = results["write"]
    peers = {p["writer"]: p for p in write["peers"]}
    rows = write["rows"]
    yield f"write {rows:,} {write['dataset']}: qbeast / parquet", peers["qbeast"]["ratio_vs_parquet"]
    for s in write["scaling"]:
        yield f"write {s['rows']:,} {write['scaling_dataset']}: qbeast / parquet", s["qbeast_s"] / s["parquet_s"]
    sampling = results["sampling"]
    for f in sampling["fractions"]:
        yield f"sample {f['fraction']}: qbeast / full scan", f["qbeast"]["time_s"] / f["full_time_s"]
    for shape in results["sql"]["shapes"]:
        for c in shape["contenders"]:
            if c["name"] != "native parquet":
                yield f"sql {_shape(shape['shape'])}: {c['name']} / native parquet", c["ratio_vs_native"]
    optimize = results.get("optimize")
    if optimize:
        yield ("optimize after appends: qbeast / deltalake z-order",
               optimize["qbeast"]["time_s"] / optimize["delta z-order"]["time_s"])
    merge = results.get("merge")
    if merge:
        for kind, case in merge["cases"].items():
            qbeast_s = statistics.median(r["seconds"] for r in case["qbeast"])
            delta_s = statistics.median(r["seconds"] for r in case["delta"])
            yield f"merge {kind} ({merge['rows']:,} rows): qbeast / deltalake", qbeast_s / delta_s
    yield f"write {rows:,} {write['dataset']}: qbeast (s)", peers["qbeast"]["median_s"]
    yield f"write {rows:,} {write['dataset']}: parquet (s)", peers["parquet"]["median_s"]
    for f in sampling["fractions"]:
        yield f"sample {f['fraction']}: qbeast (s)", f["qbeast"]["time_s"]
    yield "sample: full scan (s)", sampling["full_time_s"]
    if optimize:
        yield "optimize after appends: qbeast (s)", optimize["qbeast"]["time_s"]
    if merge:
        for kind, case in merge["cases"].items():
            yield (f"merge {kind} ({merge['rows']:,} rows): qbeast (s)",
                   statistics.median(r["seconds"] for r in case["qbeast"]))


def read_amounts(results: dict) -> dict[str, object]:
    """What each read touched: the same code must read the same files and bytes in every run."""
    out: dict[str, object] = {}
    for f in results["sampling"]["fractions"]:
        out[f"sample {f['fraction']}"] = (f["qbeast"]["files"], f["qbeast"]["bytes"], f["qbeast"]["rows"])
    for shape in results["sql"]["shapes"]:
        for c in shape["contenders"]:
            if c["name"] != "native parquet":  # Spark's own TABLESAMPLE draws other rows each run
                out[f"sql {_shape(shape['shape'])}: {c['name']}"] = (c["files"], c["bytes"], c["rows"])
    return out


def verdict(base: list[float], branch: list[float]) -> str:
    """``noise`` while the two trees' ranges overlap; otherwise which way the branch moved."""
    if min(branch) > max(base):
        return "slower"
    if max(branch) < min(base):
        return "faster"
    return "noise"


def separation_by_chance(n: int) -> float:
    """The chance that ``n`` runs of each of two trees that perform alike fall into ranges that do
    not overlap: 2 of the C(2n, n) equally likely orders of the 2n runs."""
    return 2 / math.comb(2 * n, n)


def render(runs: dict[str, list[dict]], order: list[str], revisions: dict[str, str], elapsed_s: float) -> str:
    names: list[str] = []
    values: dict[str, dict[str, list[float]]] = {}
    for label, results in runs.items():
        for result in results:
            for name, value in metrics(result):
                if name not in values:
                    names.append(name)
                    values[name] = {"base": [], "branch": []}
                values[name][label].append(value)
    lines = [
        "# Reshape: no performance regression, measured against the code before it",
        "",
        f"`benchmarks/bench_reshape.py --base {revisions['base']}`: the quick write, sampling, SQL,",
        f"optimize and merge benchmarks (`run_all.py --quick --only {SECTIONS}`, this checkout's",
        f"scripts on each tree's engine) on the baseline `{revisions['base']}` (B)",
        f"and on `{revisions['branch']}` (A), run in the order {' '.join(order)}; {elapsed_s / 60:.0f} minutes",
        "in all. Each number is the median of a tree's runs (each run already takes medians of its",
        "repetitions); `range` is the lowest and highest run. `verdict` is `slower` or `faster` only",
        "where the two trees' ranges do not overlap; with "
        f"{len(order) // 2} runs a side, two trees that perform alike are still",
        f"told apart that way by chance for {100 * separation_by_chance(len(order) // 2):.1f}% of the metrics.",
        "",
        "Load during the runs (1-minute load average at the end of each section, 2 cores):",
        "",
    ]
    for label in ("base", "branch"):
        loads = [r.get("load_average", {}) for r in runs[label]]
        text = "; ".join(", ".join(f"{k} {v}" for k, v in load.items() if v is not None) for load in loads)
        lines.append(f"- {label}: {text}")
    lines += ["", "| metric | base (range) | branch (range) | branch / base | verdict |", "|---|---|---|---|---|"]
    moved = []
    for name in names:
        b, a = values[name]["base"], values[name]["branch"]
        mb, ma = statistics.median(b), statistics.median(a)
        v = verdict(b, a)
        if v != "noise":
            moved.append(f"{name}: {v} ({ma / mb:.2f}x)")
        lines.append(f"| {name} | {mb:.3f} ({min(b):.3f}-{max(b):.3f}) | {ma:.3f} ({min(a):.3f}-{max(a):.3f}) "
                     f"| {ma / mb:.2f} | {v} |")
    same = [read_amounts(r) for label in ("base", "branch") for r in runs[label]]
    differs = sorted(k for k in same[0] if any(s.get(k) != same[0][k] for s in same[1:]))
    lines += [
        "",
        "Files, bytes and rows each read touched: "
        + ("the same in every run of both trees." if not differs else f"**differ** for {differs}."),
        "",
        "Outside the runs' spread: " + ("; ".join(moved) if moved else "nothing; every metric is within noise."),
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the baseline revision (e.g. the commit before the reshape)")
    parser.add_argument("--branch", default="HEAD", help="the revision measured against it (default HEAD)")
    parser.add_argument("--rounds", type=int, default=4,
                        help="runs of each tree, alternated B A A B B A A B ... (default 4)")
    parser.add_argument("--output", default=str(HERE / "results" / "reshape.md"))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    started = time.perf_counter()
    revisions = {"base": _git("rev-parse", "--short", args.base), "branch": _git("rev-parse", "--short", args.branch)}
    trees = {label: prepare_tree(rev, label) for label, rev in revisions.items()}
    for tree in trees.values():
        check_imports_copy(tree)
    order: list[str] = []
    for i in range(args.rounds):
        order += ["B", "A"] if i % 2 == 0 else ["A", "B"]
    runs: dict[str, list[dict]] = {"base": [], "branch": []}
    for i, which in enumerate(order):
        label = "base" if which == "B" else "branch"
        logger.info("run %d/%d: %s (%s)", i + 1, len(order), label, revisions[label])
        runs[label].append(run_tree(trees[label], WORK / f"run-{i + 1}-{label}.log"))
    report = render(runs, order, revisions, time.perf_counter() - started)
    Path(args.output).write_text(report)
    (WORK / "runs.json").write_text(json.dumps({"order": order, "revisions": revisions, "runs": runs}, default=str))
    logger.info("wrote %s", args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
