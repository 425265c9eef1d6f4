"""The JIT and garbage-collector flags of the JVMs a test run starts (tests/conftest.py sets them
through JAVA_TOOL_OPTIONS; tests/jvm_archive.py builds the class archive in a JVM with the same
flags, so the archive comes from the JVMs that read it)."""

# Every JVM of the run compiles with C1 only: Spark runs thousands of small queries here, and
# C2 spends more CPU compiling catalyst's code than its faster code saves on small data (the
# shared session's JVM: 245 -> 173 CPU-seconds over three dbt test modules, 182 -> 116-128 over
# three engine modules, each at the same or a shorter wall time). What the tests check does not
# depend on the JIT. The JVMs the tests start in other processes (servers, clusters, dbt and
# appender processes, which inherit the environment) also collect with one thread: they live
# seconds to minutes on small data, where G1's workers only compete for CI's two cores (the
# Spark Connect and dbt process tests: 208 s -> 189 s).
# C1 alone shrinks the default code cache from 240 MB to 48 MB, which a dbt process fills (the
# example project's second run fills it at about 28 s here): the JVM then disables its compiler,
# runs everything interpreted and one CI run failed inside Spark's code generation. The cache is
# therefore set back to the tiered default, and for the shared sessions, which live for the whole
# run, to twice that (C1 and C2 together held 150 MB after five minutes of dbt tests).
SHORT_LIVED_JIT_AND_GC = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m -XX:+UseSerialGC"
SHARED_SESSION_JIT = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=480m"
