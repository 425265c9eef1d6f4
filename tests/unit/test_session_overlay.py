"""How a caller's Spark settings meet the engine's (:func:`qbeast.spark.session.overlay`)."""
from __future__ import annotations

from qbeast.spark.session import ENGINE_DEFAULTS, overlay, session_conf


def test_a_callers_jvm_options_are_added_after_the_engines_never_instead():
    conf = session_conf({"spark.driver.extraJavaOptions": "-Xss4m",
                         "spark.executor.extraJavaOptions": "-Dx=1",
                         "spark.sql.shuffle.partitions": 3})
    assert conf["spark.driver.extraJavaOptions"] == "-Duser.timezone=UTC -Xss4m"
    assert conf["spark.executor.extraJavaOptions"] == "-Duser.timezone=UTC -Dx=1"
    assert conf["spark.sql.shuffle.partitions"] == "3"  # other settings: the caller wins
    assert session_conf(conf) == conf  # joining twice adds nothing
    assert session_conf({}) == ENGINE_DEFAULTS


def test_class_paths_join_with_a_colon_and_a_setting_the_base_lacks_is_taken_as_given():
    base = {"spark.driver.extraClassPath": "/opt/bridge.jar"}
    merged = overlay(base, {"spark.driver.extraClassPath": "/opt/other.jar",
                            "spark.executor.extraClassPath": "/opt/x.jar"})
    assert merged["spark.driver.extraClassPath"] == "/opt/bridge.jar:/opt/other.jar"
    assert merged["spark.executor.extraClassPath"] == "/opt/x.jar"
    assert base == {"spark.driver.extraClassPath": "/opt/bridge.jar"}  # not changed in place
