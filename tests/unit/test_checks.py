"""The engine's shared argument checks: one wording, and the fields integrations word theirs from."""
from __future__ import annotations

import pickle

import pytest

from qbeast import checks
from qbeast.errors import InvalidOptionError
from qbeast.operations import common
from qbeast.spark.write import options


def _refused(check, *args, **kwargs) -> InvalidOptionError:
    with pytest.raises(InvalidOptionError) as raised:
        check(*args, **kwargs)
    return raised.value


@pytest.mark.parametrize(("call", "message", "allowed"), [
    (lambda: checks.check_positive_int("cube_size", 0), "cube_size must be a positive integer, got 0",
     "a positive integer"),
    (lambda: checks.check_positive_int("cube_size", True), "cube_size must be a positive integer, got True",
     "a positive integer"),
    (lambda: checks.check_non_negative_int("version", -1), "version must be an integer >= 0, got -1",
     "an integer >= 0"),
    (lambda: checks.check_optional_int("limit", 0, 1), "limit must be an integer >= 1 (or None), got 0",
     "an integer >= 1 (or None)"),
    (lambda: checks.check_bool("dry_run", "false"), "dry_run must be true or false, got 'false'",
     [True, False]),
    (lambda: checks.check_one_of("mode", "upsert", ("append", "overwrite")),
     "mode must be one of ['append', 'overwrite'], got 'upsert'", ["append", "overwrite"]),
    (lambda: checks.check_non_empty_string("app_id", " "), "app_id must be a non-empty string, got ' '",
     "a non-empty string"),
    (lambda: checks.check_path("path", ""), "path must be a non-empty string naming a table folder, got ''",
     "a non-empty string naming a table folder"),
    (lambda: checks.check_fraction("fraction", 1.5), "fraction must be a number in [0, 1], got 1.5",
     "a number in [0, 1]"),
    (lambda: checks.check_fraction("fraction", float("nan")), "fraction must be a number in [0, 1], got nan",
     "a number in [0, 1]"),
])
def test_every_check_words_its_error_alike_and_fills_the_fields(call, message, allowed):
    error = _refused(call)
    assert str(error) == message
    option = message.split(" must be ")[0]
    assert (error.option, error.allowed) == (option, allowed)


def test_checks_return_the_accepted_value():
    assert checks.check_positive_int("n", 3) == 3
    assert checks.check_non_negative_int("n", 0) == 0
    assert checks.check_optional_int("n", None, 1) is None
    assert checks.check_bool("b", False) is False
    assert checks.check_one_of("mode", "Append", ("append", "overwrite"), ignore_case=True) == "append"
    assert checks.check_fraction("f", 1) == 1.0
    assert checks.check_path("p", "/t") == "/t"


def test_a_label_names_the_option_in_the_message_but_not_in_the_fields():
    error = _refused(checks.check_positive_int, "spark.qbeast.x", 0, what="Spark conf spark.qbeast.x")
    assert str(error).startswith("Spark conf spark.qbeast.x must be a positive integer")
    assert error.option == "spark.qbeast.x" and error.value == 0


def test_one_of_is_case_sensitive_unless_asked():
    error = _refused(checks.check_one_of, "mode", "Append", ("append", "overwrite"))
    assert error.value == "Append"


def test_the_fields_survive_pickling():
    error = pickle.loads(pickle.dumps(_refused(checks.check_bool, "dry_run", 1)))
    assert (error.option, error.value, error.allowed) == ("dry_run", 1, [True, False])


def test_the_old_names_are_the_shared_checks():
    assert options.check_positive_int is checks.check_positive_int
    assert options.check_non_negative_int is checks.check_non_negative_int
    assert options.check_mode("OVERWRITE") == "overwrite"
    assert _refused(options.check_mode, "upsert").allowed == ["append", "overwrite"]
    assert common.check_bool(True, "dry_run") is True
    assert _refused(common.check_bool, "no", "dry_run").option == "dry_run"
    assert _refused(common.check_optional_int, -1, "revision_id", 0).option == "revision_id"
    assert _refused(common.check_path, None).option == "path"


def test_the_idempotent_pair_names_the_missing_half():
    # qbeast.write's txn_app_id/txn_version are shorthands of CommitProperties, checked there
    from qbeast.commit import commit_properties

    def pair(app, version):
        return commit_properties(None, txn_app_id=app, txn_version=version).transaction

    assert pair(None, None) is None and pair("app", 0) == ("app", 0)
    error = _refused(pair, "app", None)
    assert "must be given together" in str(error) and error.option == "txn_version"
    assert _refused(pair, None, 1).option == "txn_app_id"
    assert _refused(pair, "app", -1).option == "txn_version"
    assert _refused(pair, "", 1).option == "txn_app_id"
