"""Turn the raw results of ``run_all.py`` into ``REPORT.md`` and the PNG charts.

Kept apart from the measuring code so that a report can be redrawn from a saved results file
(``.venv/bin/python benchmarks/report.py benchmarks/.data/results-quick.json``) without running
anything again. Every table states the baseline it is compared with; ratios are "ours / theirs"
for times (lower is better for us) unless the column says otherwise.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _mb(n: float | None) -> str:
    return "n/a" if n is None else f"{n / 1e6:,.1f}"


def _s(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


def _pct(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "n/a"
    return f"{100 * x:.2f}%"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if not a or not b else f"{a / b:.2f}"


# -- sections -------------------------------------------------------------------------------------


def _header(r: dict) -> list[str]:
    m, s = r["machine"], r["settings"]
    if "total_elapsed_s" in r:
        duration = f"total {r['total_elapsed_s'] / 60:.1f} min"
    else:
        done = [k for k in r.get("elapsed_s", {})]
        duration = (f"**interrupted** after {sum(r.get('elapsed_s', {}).values()) / 60:.1f} min of "
                    f"sections ({', '.join(done) or 'none finished'})")
    return [
        "# dbt-qbeast benchmark report",
        "",
        f"**Mode: {s['mode']}** (`benchmarks/run_all.py --{s['mode']}`), started {r['started_utc']}, "
        f"{duration}.",
        f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM, {m['os']}; Spark local[2] "
        f"(pyspark {m['pyspark']}), Python {m['python']}, deltalake {m['deltalake']}, "
        f"pyarrow {m['pyarrow']}; code at commit `{m['commit']}` plus the working tree of that time.",
        _load_sentence(r),
        "Contenders were timed alternately (rotating order) in the same process and each figure is "
        "a median, so ratios are more trustworthy than absolute seconds.",
        "",
        "How each figure is measured is in `benchmarks/README.md` and in the docstring of the module "
        "named in each section. Charts: `charts/`.",
        "",
    ]


def _load_sentence(r: dict) -> str:
    """What the run recorded about the machine's load (2.0 on 2 cores = the benchmark alone)."""
    loads = {k: v for k, v in r.get("load_average", {}).items() if v is not None}
    if not loads:
        return ("The machine's load was not recorded for this run (other processes may have run "
                "beside it): absolute times may be noisy.")
    values = ", ".join(f"{k} {v:.1f}" for k, v in loads.items())
    note = r.get("conditions")
    return (f"1-minute load average at the start and after each section: {values} (with 2 cores, "
            f"about 2 is the benchmark's own Spark work)." + (f" {note}" if note else ""))


def _write(w: dict) -> list[str]:
    lines = [
        "## Write (`bench_write_peers.py`)",
        "",
        f"Data set `{w['dataset']}`, {w['rows']:,} rows, indexed columns `{', '.join(w['columns'])}`, "
        f"cube size {w['cube_size']:,}; median of {w['repeat']} interleaved round(s), each into a fresh "
        f"folder. qbeast wrote {w['qbeast_files']} files; the Z-order optimize wrote "
        f"{w['zorder_files_added']} files (target {w['zorder_target_bytes'] / 1e6:.1f} MB).",
        "",
        "| writer | median (s) | rows/s | time ratio vs parquet |",
        "|---|---:|---:|---:|",
    ]
    for p in w["peers"]:
        lines.append(f"| {p['writer']} | {_s(p['median_s'])} | {p['rows_per_s']:,.0f} | "
                     f"{p['ratio_vs_parquet']:.2f} |")
    by = {p["writer"]: p["median_s"] for p in w["peers"]}
    lines += [
        "",
        f"qbeast / (delta write + z-order) time ratio: **{_ratio(by['qbeast'], by['delta write + z-order'])}**; "
        f"qbeast / parquet: **{_ratio(by['qbeast'], by['parquet'])}**.",
        "",
        f"Scaling of `qbeast.write` (data set `{w['scaling_dataset']}`, columns "
        f"`{', '.join(w.get('scaling_columns', []))}`, same cube size; "
        + (f"medians of {w['repeat']} alternating runs per size with plain parquet as the baseline):"
           if "qbeast_times" in (w["scaling"][0] if w["scaling"] else {})
           else "one run per size, parquet written just before each as the baseline):"),
        "",
        "| rows | qbeast (s) | qbeast rows/s | parquet (s) | ratio qbeast/parquet | qbeast files |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for x in w["scaling"]:
        lines.append(f"| {x['rows']:,} | {_s(x['qbeast_s'])} | {x['qbeast_rows_per_s']:,.0f} | "
                     f"{_s(x['parquet_s'])} | {x['qbeast_s'] / x['parquet_s']:.2f} | {x['files']} |")
    lines += ["", "![write throughput](charts/write_scaling.png)", ""]
    return lines


def _sampling(smp: dict) -> list[str]:
    lines = [
        "## Sampling (`bench_sampling.py`)",
        "",
        f"`avg({smp['value_column']})` and `count(*)` over {smp['total_rows']:,} rows; exact average "
        f"{smp['exact_avg']:.4f}. qbeast table: {smp['qbeast_table_files']} files, "
        f"{_mb(smp['qbeast_table_bytes'])} MB; plain parquet copy (TABLESAMPLE and full scan): "
        f"{smp['full_files']} files, {_mb(smp['full_bytes'])} MB. Full scan of the parquet copy: "
        f"{_s(smp['full_time_s'])} s (median). Files and bytes are Spark's scan metrics; times are "
        f"medians of {smp['repeat']} runs.",
        "",
        "| f | qbeast files | qbeast MB | share of table bytes | qbeast rows | qbeast s | qbeast error "
        "| TABLESAMPLE files | TABLESAMPLE MB | TABLESAMPLE s | TABLESAMPLE error | qbeast/TABLESAMPLE time "
        "| qbeast/full-scan time |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in smp["fractions"]:
        q, t = row["qbeast"], row["tablesample"]
        lines.append(
            f"| {row['fraction']} | {q['files']} | {_mb(q['bytes'])} | "
            f"{_pct(q['bytes'] / smp['qbeast_table_bytes'])} | {q['rows']:,} | {_s(q['time_s'])} | "
            f"{_pct(q['rel_error'])} | {t['files']} | {_mb(t['bytes'])} | {_s(t['time_s'])} | "
            f"{_pct(t['rel_error'])} | {_ratio(q['time_s'], t['time_s'])} | "
            f"{_ratio(q['time_s'], row['full_time_s'])} |")
    lines += [
        "",
        "Error = |sampled average − exact average| / exact average. The qbeast sample is "
        "deterministic (same rows each run); the TABLESAMPLE error is the median over its runs.",
        "",
        "![bytes read vs fraction](charts/sampling_bytes.png)",
        "",
    ]
    return lines


def _ranges(rng: list[dict]) -> list[str]:
    lines = [
        "## Range queries (`bench_ranges.py`)",
        "",
        "Boxes on the first 2 or 3 columns of the data set, placed at random quantiles; each row "
        "below averages the queries of one target selectivity (achieved selectivity measured with "
        "numpy on the source). Every layout returned exactly the numpy count for every query. "
        "**Ideal** = `ceil(qualifying rows / (table rows / table files))`: the fewest files of that "
        "layout's average file size that could hold the qualifying rows. Parquet is written with "
        "`maxRecordsPerFile` = qbeast's rows per file of the 2-column table; Spark opens every "
        "parquet file. Z-order files = files whose Delta min/max stats overlap the box (checked "
        "against deltalake's own fragment pruning), read by Spark's parquet scan for the time.",
        "",
    ]
    for r in rng:
        lines += [
            f"### `{r['dataset']}`, {r['dims']} columns (`{', '.join(r['columns'])}`), "
            f"{r['rows']:,} rows, cube size {r['cube_size']:,}",
            "",
            "| target sel. | achieved | qbeast files (ideal) / total | parquet files / total "
            "| z-order files (ideal) / total | qbeast MB | parquet MB | z-order MB | qbeast s | parquet s "
            "| z-order s | files qbeast/z-order | time qbeast/parquet | time qbeast/z-order |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for s in r["selectivities"]:
            q, p, z = s["qbeast"], s["parquet"], s["delta z-order"]
            lines.append(
                f"| {_pct(s['selectivity'])} | {_pct(s['achieved'])} | {q['files']:.1f} "
                f"({q['ideal_files']:.1f}) / {q['files_total']} | {p['files']:.1f} / {p['files_total']} | "
                f"{z['files']:.1f} ({z['ideal_files']:.1f}) / {z['files_total']} | {_mb(q['bytes'])} | "
                f"{_mb(p['bytes'])} | {_mb(z['bytes'])} | {_s(q['time_s'])} | {_s(p['time_s'])} | "
                f"{_s(z['time_s'])} | {_ratio(q['files'], z['files'])} | "
                f"{_ratio(q['time_s'], p['time_s'])} | {_ratio(q['time_s'], z['time_s'])} |")
            if s.get("zorder_crosscheck_mismatches"):
                lines.append(f"| | | | | z-order count differed from deltalake's pruning in "
                             f"{s['zorder_crosscheck_mismatches']} queries | | | | | | | | | |")
        lines.append("")
    lines += ["![files read vs selectivity](charts/ranges_files.png)", ""]
    return lines


def _sql(sql: dict) -> list[str]:
    lines = [
        "## SQL through a catalog table (`bench_sql.py`)",
        "",
        "Same ecommerce table as the sampling section, read in SQL through a catalog table "
        "`USING qbeast` (the JVM read bridge: Spark's native parquet scan over the files the "
        "engine plans for each scan) against Spark's native parquet scan of every file of the same "
        "table (Spark's own `TABLESAMPLE` for the sampled shapes, which reads every file). The "
        "one-column aggregate also runs once through the Python data source, the fallback without "
        f"the bridge. Medians of {sql['repeat']} interleaved runs; files and bytes are Spark's scan "
        f"metrics (the table has {sql['table_files']} files). Goal: at most "
        f"{sql['full_scan_goal']}x native on whole-table scans, fewer bytes than native on filtered "
        "and sampled queries.",
        "",
        "| query | contender | median (s) | time vs native | files | bytes | bytes vs native | rows counted |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for shape in sql["shapes"]:
        for c in shape["contenders"]:
            files = "n/a" if c["files"] is None else f"{c['files']:,}"
            size = "n/a" if c["bytes"] is None else _mb(c["bytes"])
            share = "n/a" if c["bytes_vs_native"] is None else f"{c['bytes_vs_native']:.3f}"
            lines.append(f"| {shape['shape']} | {c['name']} | {_s(c['time_s'])} | "
                         f"{c['ratio_vs_native']:.2f} | {files} | {size} | {share} | {c['rows']:,} |")
    lines += ["", *(f"- {line}" for line in sql_verdicts(sql)), ""]
    return lines


def sql_verdicts(sql: dict) -> list[str]:
    """One line per shape: the goal it had and whether this run met it (losses stated plainly)."""
    out = []
    for shape in sql["shapes"]:
        ours = next(c for c in shape["contenders"] if c["name"] == "qbeast catalog table")
        if shape["kind"] == "full":
            met = ours["ratio_vs_native"] <= sql["full_scan_goal"]
            out.append(f"{shape['shape']}: {ours['ratio_vs_native']:.2f}x native parquet's time "
                       f"({'meets' if met else 'misses'} the {sql['full_scan_goal']}x goal)")
        else:
            met = ours["bytes_vs_native"] is not None and ours["bytes_vs_native"] < 1.0
            out.append(f"{shape['shape']}: {ours['bytes_vs_native']:.3f} of native's bytes "
                       f"({'fewer' if met else 'NOT fewer'}), {ours['ratio_vs_native']:.2f}x its time")
        python = next((c for c in shape["contenders"] if c["name"] == "python data source"), None)
        if python is not None:
            out[-1] += f"; the Python data source took {python['ratio_vs_native']:.1f}x"
    return out


def _metadata(md: dict) -> list[str]:
    lines = [
        "## Metadata: snapshot load and file selection (`bench_metadata_selection.py`)",
        "",
        f"Table of {md['files']:,} active files after {md['commits']:,} commits (checkpoint every 10), "
        f"built by `bench_snapshot.build_table` plus one revision commit. Medians of {md['repeat']} "
        "interleaved runs; every selection includes loading the snapshot.",
        "",
        "| operation | median (s) |",
        "|---|---:|",
    ]
    for k, v in {**md["load"], **md["select"]}.items():
        lines.append(f"| {k} | {v:.4f} |")
    load, sel = md["load"], md["select"]
    lines += [
        "",
        f"Ratios: snapshot load ours/deltalake **{_ratio(load['dbt-qbeast DeltaLog.snapshot'], load['deltalake DeltaTable'])}**"
        f" (with Qbeast revisions: {_ratio(load['dbt-qbeast QbeastSnapshot.load'], load['deltalake DeltaTable'])}); "
        f"predicate file selection ours/deltalake get_fragments **"
        f"{_ratio(sel['dbt-qbeast read_plan(filter)'], sel['deltalake get_fragments(filter)'])}**"
        + (f", ours/hand-written selection over deltalake's add actions **"
           f"{_ratio(sel['dbt-qbeast read_plan(filter)'], sel['deltalake get_add_actions + numpy min/max'])}**"
           if "deltalake get_add_actions + numpy min/max" in sel else "") + ".",
        f"Files selected for `{md['predicate']}`: {md['selected_files']}. The generated tags place "
        "files in cubes at random, unrelated to their stats, so the counts are not comparable "
        "between engines (qbeast also prunes by cube); only the times are.",
        "",
    ]
    if md.get("note"):
        lines += [md["note"], ""]
    return lines


def _optimize(op: dict) -> list[str]:
    q, z, c = op["qbeast"], op["delta z-order"], op["delta compact"]
    b, a = q["before"], q["after"]
    return [
        "## Optimize (`bench_optimize.py`)",
        "",
        f"`{op['dataset']}` data, {op['rows']:,} rows written in {op['appends']} appends indexed on "
        f"`{', '.join(op['columns'])}` (cube size {op['cube_size']:,}), then `optimize_table` on the "
        "latest revision. The same appends went into two deltalake tables, then `optimize.z_order` "
        "on the same columns and `optimize.compact`.",
        "",
        "| | qbeast optimize | delta z-order | delta compact |",
        "|---|---:|---:|---:|",
        f"| time (s) | {_s(q['time_s'])} | {_s(z['time_s'])} | {_s(c['time_s'])} |",
        f"| bytes before (MB) | {_mb(b['bytes'])} | {_mb(z['table_bytes'])} | {_mb(c['table_bytes'])} |",
        f"| bytes read/removed (MB) | {_mb(q['bytes_removed'])} | {_mb(z['bytes_removed'])} | "
        f"{_mb(c['bytes_removed'])} |",
        f"| bytes written (MB) | {_mb(q['bytes_added'])} | {_mb(z['bytes_added'])} | {_mb(c['bytes_added'])} |",
        f"| **bytes written / bytes before** | **{q['rewritten_ratio']:.2f}** | "
        f"**{z['rewritten_ratio']:.2f}** | **{c['rewritten_ratio']:.2f}** |",
        f"| files removed → added | {q['files_removed']} → {q['files_added']} | "
        f"{z['files_removed']} → {z['files_added']} | {c['files_removed']} → {c['files_added']} |",
        "",
        f"qbeast before → after: {b['files']} → {a['files']} files, {b['blocks']} → {a['blocks']} "
        f"blocks for {b['cubes']} → {a['cubes']} cubes; a 10% sample read "
        f"{q['sample_before']['files']} → {q['sample_after']['files']} files, "
        f"{_mb(q['sample_before']['bytes'])} → {_mb(q['sample_after']['bytes'])} MB "
        f"({q['sample_before']['rows']:,} → {q['sample_after']['rows']:,} rows). Appending took "
        f"{_s(q['append_time_s'])} s in total.",
        "",
    ]


def _merge(merge: dict) -> list[str]:
    """The merge section as ``bench_merge.py`` words it, one heading level down."""
    import bench_merge

    text = bench_merge.report([merge]).replace("\n## ", "\n### ").replace("# Merge", "## Merge", 1)
    return text.splitlines() + [""]


def _summary(r: dict) -> list[str]:
    """Where the project wins and loses, in one list (figures from the sections below)."""
    out = ["## Summary", ""]
    w = r.get("write")
    if w:
        by = {p["writer"]: p for p in w["peers"]}
        out.append(f"- Write: qbeast {by['qbeast']['rows_per_s']:,.0f} rows/s, "
                   f"{by['qbeast']['ratio_vs_parquet']:.1f}× the time of plain parquet and "
                   f"{by['qbeast']['median_s'] / by['delta write + z-order']['median_s']:.1f}× the time "
                   "of deltalake write + Z-order.")
    smp = r.get("sampling")
    if smp:
        for row in smp["fractions"]:
            if row["fraction"] in (0.01, 0.1):
                q, t = row["qbeast"], row["tablesample"]
                out.append(
                    f"- Sample {row['fraction']}: qbeast read {_pct(q['bytes'] / smp['qbeast_table_bytes'])}"
                    f" of its table's bytes ({q['files']} files) vs 100% for TABLESAMPLE; time "
                    f"{_ratio(q['time_s'], t['time_s'])}× TABLESAMPLE's; error {_pct(q['rel_error'])} "
                    f"vs {_pct(t['rel_error'])}.")
    for rr in r.get("ranges", []):
        s = next((x for x in rr["selectivities"] if x["selectivity"] == 0.01), rr["selectivities"][0])
        q, z = s["qbeast"], s["delta z-order"]
        out.append(
            f"- Range {rr['dataset']} {rr['dims']}d at {_pct(s['selectivity'])}: qbeast {q['files']:.1f} "
            f"files (ideal {q['ideal_files']:.1f}) of {q['files_total']}, Z-order {z['files']:.1f} "
            f"(ideal {z['ideal_files']:.1f}) of {z['files_total']}; time qbeast/parquet "
            f"{_ratio(q['time_s'], s['parquet']['time_s'])}.")
    sql = r.get("sql")
    if sql:
        out.append("- SQL through a catalog table (JVM read bridge) vs native parquet over the same "
                   "files: " + "; ".join(sql_verdicts(sql)) + ".")
    md = r.get("metadata")
    if md:
        sel = md["select"]
        handmade = sel.get("deltalake get_add_actions + numpy min/max")
        out.append(f"- Metadata: snapshot load {md['load']['dbt-qbeast DeltaLog.snapshot']:.3f} s vs "
                   f"deltalake {md['load']['deltalake DeltaTable']:.3f} s; predicate file selection "
                   f"{sel['dbt-qbeast read_plan(filter)']:.3f} s vs deltalake get_fragments "
                   f"{sel['deltalake get_fragments(filter)']:.3f} s"
                   + (f" and a numpy filter over deltalake's add actions {handmade:.3f} s" if handmade else "")
                   + ".")
    op = r.get("optimize")
    if op:
        out.append(f"- Optimize rewrote {op['qbeast']['rewritten_ratio']:.2f}× the revision's bytes "
                   f"(Z-order: {op['delta z-order']['rewritten_ratio']:.2f}×, compact "
                   f"{op['delta compact']['rewritten_ratio']:.2f}×).")
    return out + [""]


# -- charts ---------------------------------------------------------------------------------------


def _charts(r: dict, charts: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charts.mkdir(parents=True, exist_ok=True)
    mode = r["settings"]["mode"]
    if r.get("ranges"):
        sets = r["ranges"]
        fig, axes = plt.subplots(1, len(sets), figsize=(4.2 * len(sets), 3.8), squeeze=False)
        for ax, rr in zip(axes[0], sets):
            x = [s["achieved"] * 100 for s in rr["selectivities"]]
            for name, style in (("qbeast", "o-"), ("delta z-order", "s-"), ("parquet", "^-")):
                ax.plot(x, [s[name]["files"] for s in rr["selectivities"]], style, label=name)
            ax.plot(x, [s["qbeast"]["ideal_files"] for s in rr["selectivities"]], "k--",
                    label="ideal (qbeast file size)")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{rr['dataset']}, {rr['dims']} columns", fontsize=9)
            ax.set_xlabel("selectivity (%)")
            ax.set_ylabel("files read")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
        fig.suptitle(f"Range queries: files read vs selectivity ({mode} mode)", fontsize=10)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        fig.savefig(charts / "ranges_files.png", dpi=90)
        plt.close(fig)
    smp = r.get("sampling")
    if smp:
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        f = [row["fraction"] for row in smp["fractions"]]
        ax.plot(f, [row["qbeast"]["bytes"] / 1e6 for row in smp["fractions"]], "o-", label="qbeast sample(f)")
        ax.plot(f, [row["tablesample"]["bytes"] / 1e6 for row in smp["fractions"]], "^-",
                label="TABLESAMPLE on parquet")
        ax.plot(f, [v * smp["qbeast_table_bytes"] / 1e6 for v in f], "k--", label="f × qbeast table bytes")
        ax.axhline(smp["full_bytes"] / 1e6, color="grey", linestyle=":", label="full parquet scan")
        ax.axhline(smp["qbeast_table_bytes"] / 1e6, color="tab:blue", linestyle=":",
                   label="whole qbeast table")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("sample fraction f")
        ax.set_ylabel("MB of files read")
        ax.set_title(f"Sampling: bytes read vs fraction ({mode} mode)", fontsize=10)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(charts / "sampling_bytes.png", dpi=90)
        plt.close(fig)
    w = r.get("write")
    if w:
        fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
        names = [p["writer"] for p in w["peers"]]
        left.barh(names, [p["rows_per_s"] / 1e3 for p in w["peers"]])
        left.set_xlabel("thousand rows/s")
        left.set_title(f"Write throughput, {w['rows']:,} rows", fontsize=9)
        rows = [x["rows"] / 1e6 for x in w["scaling"]]
        right.plot(rows, [x["qbeast_s"] for x in w["scaling"]], "o-", label="qbeast.write")
        right.plot(rows, [x["parquet_s"] for x in w["scaling"]], "^-", label="parquet")
        right.set_xlabel("million rows")
        right.set_ylabel("seconds")
        right.set_title("qbeast.write scaling", fontsize=9)
        right.legend(fontsize=7)
        fig.suptitle(f"Writes ({mode} mode)", fontsize=10)
        fig.tight_layout()
        fig.savefig(charts / "write_scaling.png", dpi=90)
        plt.close(fig)


def outputs(mode: str, root: Path = HERE) -> tuple[Path, Path]:
    """Where a mode's report and charts go: quick is the committed report, full sits beside it,
    smoke (a run check) stays in the git-ignored data folder."""
    if mode == "quick":
        return root / "REPORT.md", root / "charts"
    if mode == "full":
        return root / "REPORT-full.md", root / "charts" / "full"
    return root / ".data" / "smoke" / "REPORT.md", root / ".data" / "smoke" / "charts"


def render(results: dict[str, Any], root: Path = HERE) -> Path:
    """Write the mode's report and charts (see :func:`outputs`); returns the report path."""
    lines = _header(results) + _summary(results)
    for name, fn in (("write", _write), ("sampling", _sampling), ("ranges", _ranges), ("sql", _sql),
                     ("metadata", _metadata), ("optimize", _optimize), ("merge", _merge)):
        if results.get(name):
            lines += fn(results[name])
    missing = [n for n in ("write", "sampling", "ranges", "sql", "metadata", "optimize", "merge")
               if not results.get(n)]
    if missing:
        lines += [f"Sections not run in this report: {', '.join(missing)}.", ""]
    out, charts = outputs(results["settings"]["mode"], root)
    _charts(results, charts)
    text = "\n".join(lines)
    relative = charts.relative_to(out.parent).as_posix()
    text = text.replace("](charts/", f"]({relative}/").replace("Charts: `charts/`", f"Charts: `{relative}/`")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    source = Path(args[0]) if args else HERE / ".data" / "results-quick.json"
    print(render(json.loads(source.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
