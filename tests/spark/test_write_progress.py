"""What a person sees of a long write: on a terminal a progress bar (a row per phase, with the
Spark tasks done of the total and the elapsed time), in a log one line when each phase starts and
one when it ends, with its counts."""
from __future__ import annotations

import logging
import threading

import pytest

import qbeast
from qbeast import progress
from qbeast.spark import settings
from qbeast.spark.runtime import scoped_confs

pytestmark = pytest.mark.spark


class _Terminal:
    """stderr as a terminal: says it is one, keeps what is drawn."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.lock = threading.Lock()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        with self.lock:
            self.parts.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_a_write_on_a_terminal_draws_a_bar_and_logs_each_phase(spark, tmp_path, monkeypatch, caplog):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)  # auto: a bar on a terminal
    monkeypatch.setattr(progress, "BAR_INTERVAL", 0.05)
    path = str(tmp_path / "events")
    data = spark.range(0, 20_000, numPartitions=4).selectExpr("id", "id % 97 as x", "id % 13 as y")
    caplog.set_level(logging.INFO, logger="qbeast.spark.write.writer")
    # Spark's jobs (a first write this small is otherwise indexed on the driver: below)
    with scoped_confs(spark, {settings.LOCAL_FIRST_WRITE_BYTES.key: "0"}):
        qbeast.write(data, path, columns_to_index=["x", "y"], cube_size=2_000)

    drawn = "".join(terminal.parts)
    for phase in ("stats", "estimation", "write"):
        assert f"write events: {phase} done" in drawn, drawn[-2000:]
    assert "━" in drawn and "tasks" in drawn and "0:00:" in drawn
    lines = [r.getMessage() for r in caplog.records]
    for phase in ("stats", "estimation", "write"):
        assert f"write {path}: {phase} started" in lines
        assert any(line.startswith(f"write {path}: {phase} done ") and "elapsed=" in line
                   for line in lines), lines
    assert qbeast.QbeastTable.for_path(spark, path).to_df().count() == 20_000
    terminal.parts.clear()
    qbeast.write(data, str(tmp_path / "local"), columns_to_index=["x", "y"], cube_size=2_000)
    drawn = "".join(terminal.parts)
    for phase in ("local collect", "local stats", "local estimation", "local write", "commit"):
        assert f"write local: {phase} done" in drawn, drawn[-2000:]
