"""A storage emulator run as a child process on loopback for the test session (Azurite,
fake-gcs-server): started, waited for until it answers, stopped; its output in a log file that a
failed start quotes."""
from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

#: how long an emulator may take to answer after it was started
START_SECONDS = 60


class LoopbackProcess:
    """One emulator process listening on ``127.0.0.1:port``; :attr:`endpoint` is its URL."""

    def __init__(self, name: str, argv: list[str], log: Path, port: int) -> None:
        self.name = name
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"
        self.log = log
        self.process = subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT,
                                        start_new_session=True)
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{name} exited:\n{log.read_text()[-2000:]}")
            try:
                self.probe()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{name} did not answer within {START_SECONDS} s") from None
                time.sleep(0.05)

    def probe(self) -> None:
        """Raise ``OSError`` until the emulator serves requests (here: until it accepts a TCP
        connection; an emulator that listens before it serves refines this)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=1):
            pass

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
