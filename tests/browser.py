"""A real headless browser for the tests of generated pages: Debian's ``chromium``, driven by its
own command line (``--dump-dom`` prints the DOM after the page's scripts ran; screenshots are the
engine's own, ``qbeast.operations.index_page.screenshot``), so no browser-automation package is
needed.

Tests that need it carry :data:`requires_chromium`; they skip, saying why, only when the binary
is missing (``.ci/run`` installs it when it runs as root).
"""
from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium")

requires_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install -y chromium; .ci/run does it as root)")

_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run",
          "--disable-dev-shm-usage", "--hide-scrollbars")


def _run(page: Path, *args: str, timeout: float = 60, fragment: str = "") -> str:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        done = subprocess.run([CHROMIUM, *_FLAGS, f"--user-data-dir={profile}", *args,
                               page.resolve().as_uri() + fragment],
                              capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump_dom(page: Path, timeout: float = 60, fragment: str = "") -> str:
    """The page's DOM serialized after its scripts ran (``fragment``: ``#...`` of the address)."""
    return _run(page, "--dump-dom", timeout=timeout, fragment=fragment)


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.found.append((tag, {k: v or "" for k, v in attrs}))


def elements(dom: str, attribute: str, tag: str | None = None) -> list[dict[str, str]]:
    """The attributes of every element (of ``tag``, if given) that has ``attribute``."""
    parser = _Elements()
    parser.feed(dom)
    return [attrs for t, attrs in parser.found if attribute in attrs and (tag is None or t == tag)]


def png_colours(png: Path) -> tuple[int, int, int]:
    """Width, height and the number of distinct byte triples on sampled scanlines of an 8-bit
    RGB(A) PNG (taken as stored, after PNG's per-line filter): a blank page gives a handful, a
    drawn one hundreds."""
    raw = png.read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(raw):
        (length,) = struct.unpack(">I", raw[pos:pos + 4])
        kind, body = raw[pos + 4:pos + 8], raw[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6), (depth, colour_type)
    channels = 3 if colour_type == 2 else 4
    data = zlib.decompress(idat)
    stride = width * channels + 1  # one filter byte per scanline
    pixels = set()
    for row in range(0, height, max(height // 60, 1)):  # sampled rows: enough to tell blank
        line = data[row * stride + 1:(row + 1) * stride]
        pixels.update(line[i:i + 3] for i in range(0, len(line), channels * 7))
    return width, height, len(pixels)
