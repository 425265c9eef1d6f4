"""The row-level wing: the Spark jobs of delete, update, merge and delete+insert.

They find the files that hold affected rows, decide each row's fate and rewrite those files in
their cubes; inserted and moved rows go through the write wing's indexed append.
"""
