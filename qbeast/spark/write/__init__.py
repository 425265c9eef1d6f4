"""The write wing: every Spark job that turns rows into indexed parquet files of a Qbeast table.

``writer.write`` drives a write (checks, the stats pass, estimation, assignment, files, commit);
``steps`` holds those steps, ``staging`` the staged parquet writes, ``describe`` the description
of the files written (rows, Delta stats, blocks), and the modules beside them the pieces the
steps share. Optimize and row-level changes reuse these jobs.
"""
