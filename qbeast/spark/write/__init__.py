"""The write wing: every Spark job that turns rows into indexed parquet files of a Qbeast table.

``writer.write`` drives a write (checks, the stats pass, estimation, assignment, files, commit);
``steps`` holds those steps, ``files`` the staged parquet writes and their description, and the
modules beside them the pieces the steps share. Optimize and row-level changes reuse these jobs.
"""
