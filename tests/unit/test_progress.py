"""Progress of long phases: start and end lines, and ``done of total`` lines while a monitored
phase runs (every PROGRESS_INTERVAL seconds, only when the counts moved), stopping at the end."""
from __future__ import annotations

import logging
import threading
import time

import pytest

from qbeast import progress
from qbeast.progress import Phase


def _lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "test.progress"]


def _scripted_monitor(script: list) -> tuple:
    """A monitor answering ``script`` in turn, then (4, 4) for ever; the event is set once the
    script is spent."""
    counts = iter(script)
    polled = threading.Event()

    def monitor():
        try:
            return next(counts)
        except StopIteration:
            polled.set()
            return (4, 4)

    return monitor, polled


def test_a_monitored_phase_logs_its_progress_until_it_ends(monkeypatch, caplog):
    monkeypatch.setattr(progress, "PROGRESS_INTERVAL", 0.05)
    monitor, polled = _scripted_monitor([None, (1, 4), (1, 4), (3, 4)])
    caplog.set_level(logging.INFO, logger="test.progress")
    phase = Phase(logging.getLogger("test.progress"), "write", "/t", "write", monitor=monitor)
    assert polled.wait(5)
    phase.done(files=2)
    time.sleep(0.2)  # no line after the end
    lines = _lines(caplog)
    assert lines[0] == "write /t: write started"
    steps = [line.split(" elapsed=")[0] for line in lines[1:-1]]
    assert steps == ["write /t: write 1 of 4 tasks (25%)", "write /t: write 3 of 4 tasks (75%)",
                     "write /t: write 4 of 4 tasks (100%)"]
    assert lines[-1].startswith("write /t: write done files=2 elapsed=")


def test_a_watcher_stops_when_nothing_runs_or_the_monitor_fails(monkeypatch, caplog):
    monkeypatch.setattr(progress, "PROGRESS_INTERVAL", 0.01)
    calls = []

    def idle():
        calls.append(1)
        return None

    Phase(logging.getLogger("test.progress"), "optimize", "/t", "write", monitor=idle)  # never done
    time.sleep(0.5)
    assert len(calls) == progress.IDLE_POLLS

    def broken():
        raise RuntimeError("tracker gone")

    caplog.set_level(logging.INFO, logger="test.progress")
    phase = Phase(logging.getLogger("test.progress"), "optimize", "/t", "write", monitor=broken)
    time.sleep(0.1)
    phase.done()
    assert [line.split(" elapsed=")[0] for line in _lines(caplog)] == [
        "optimize /t: write started", "optimize /t: write done "]


@pytest.mark.spark
def test_the_task_monitor_counts_the_tasks_of_stages_started_after_it(spark):
    from qbeast.spark.task_progress import task_monitor

    monitor = task_monitor(spark)
    assert monitor is not None and monitor() is None  # nothing of ours runs yet
    seen: list[tuple[int, int]] = []

    def slow(rows):
        time.sleep(0.6)
        yield from rows

    job = threading.Thread(target=lambda: spark.sparkContext.parallelize(range(8), 4).mapPartitions(slow).count())
    job.start()
    while job.is_alive():
        counts = monitor()
        if counts is not None:
            seen.append(counts)
        time.sleep(0.05)
    assert seen and all(total == 4 and 0 <= done <= 4 for done, total in seen)
    assert monitor() is None


class _Terminal:
    """A stand-in stderr that says it is a terminal and keeps what is drawn on it."""

    def __init__(self) -> None:
        import io

        self.buffer = io.StringIO()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return self.buffer.write(text)

    def flush(self) -> None:
        pass


def test_on_a_terminal_each_phase_is_a_bar_row_with_counts_and_elapsed_time(monkeypatch, caplog):
    """The default (``auto``) draws bars when stderr is a terminal: a row per phase (a nested
    phase too) moving with its monitor, left with the final counts; the log lines are unchanged."""
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(progress, "PROGRESS_INTERVAL", 0.05)
    monkeypatch.setattr(progress, "BAR_INTERVAL", 0.02)
    monitor, polled = _scripted_monitor([(1, 4), (3, 4)])
    caplog.set_level(logging.INFO, logger="test.progress")
    outer = Phase(logging.getLogger("test.progress"), "optimize", "/data/events", "rewrite",
                  monitor=monitor)
    inner = Phase(logging.getLogger("test.progress"), "write", "/data/events", "stats")
    assert polled.wait(5)
    inner.done(rows=10)
    outer.done(files=2)
    drawn = terminal.buffer.getvalue()
    assert "optimize events: rewrite done files=2" in drawn
    assert "write events: stats done rows=10" in drawn
    assert "4/4" in drawn and "tasks" in drawn and "0:00:0" in drawn  # counts, unit, elapsed
    assert "━" in drawn  # the bar itself
    lines = [line.split(" elapsed=")[0] for line in _lines(caplog)]
    assert lines[0] == "optimize /data/events: rewrite started"
    assert "write /data/events: stats done rows=10" in lines
    assert lines[-1] == "optimize /data/events: rewrite done files=2"
    assert progress._BARS._progress is None  # the display stopped with the last phase


def test_lines_only_when_asked_or_not_on_a_terminal_and_a_bad_setting_is_named(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv(progress.PROGRESS_ENV, "log")
    assert not progress.bars_wanted()
    Phase(logging.getLogger("test.progress"), "write", "/t", "stats").done()
    assert terminal.buffer.getvalue() == ""
    monkeypatch.setenv(progress.PROGRESS_ENV, "bar")
    assert progress.bars_wanted()
    monkeypatch.setenv(progress.PROGRESS_ENV, "auto")
    monkeypatch.setattr(terminal, "isatty", lambda: False)
    assert not progress.bars_wanted()
    monkeypatch.setenv(progress.PROGRESS_ENV, "fancy")
    with pytest.raises(Exception, match="QBEAST_PROGRESS must be one of auto, bar, log, got 'fancy'"):
        progress.bars_wanted()
