"""One self-contained HTML page of an :class:`~qbeast.operations.index_picture.IndexPicture`.

The page needs no server and no network: the picture is embedded as JSON, and the script and
styles that draw it (``index_page.js``, ``index_page.css`` beside this module) are inlined, so
the file can be mailed, attached to a ticket or opened from a CI artifact. The script draws each
live revision's tree side by side, the per-depth table and the files with their weight bands,
and marks what a read touches; trees larger than :data:`DRAW_BUDGET` cubes start aggregated
below a depth and expand on click, so a 10,000-cube table opens quickly.
"""
from __future__ import annotations

import html
import json
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

from qbeast.core import expressions as ex
from qbeast.errors import InvalidOptionError
from qbeast.operations.index_picture import IndexPicture, RevisionPicture, table_picture

#: Cubes drawn before deeper levels are aggregated (each level is drawn whole or not at all).
DRAW_BUDGET = 2000

#: Browsers a PNG of the page can be taken with (headless), in the order they are looked for.
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def picture_data(picture: IndexPicture) -> dict[str, Any]:
    """The JSON the page's script draws (compact rows, parents by index)."""
    selected = {(rid, cube) for rid, cube in picture.selection.cubes} if picture.selection else set()
    read_bytes = {f.path: f.bytes_read for f in picture.selection.files} if picture.selection else {}
    data: dict[str, Any] = {
        "path": picture.path, "version": picture.version, "rows": picture.rows,
        "bytes": picture.bytes, "files": picture.files, "budget": DRAW_BUDGET,
        "cubes_total": picture.cube_count,
        "revisions": [_revision_data(r, selected, read_bytes) for r in picture.revisions],
        "selection": None,
    }
    s = picture.selection
    if s is not None:
        drawn = {(r.revision_id, c.id) for r in picture.revisions for c in r.cubes if c.present}
        data["selection"] = {
            "fraction": s.fraction, "filter": s.filter, "files_read": s.files_read,
            "total_files": s.total_files, "rows_read": s.rows_read, "total_rows": s.total_rows,
            "bytes_read": s.bytes_read, "total_bytes": s.total_bytes,
            "cubes": len(selected & drawn), "lines": s.summary_lines(),
        }
    return data


def _revision_data(revision: RevisionPicture, selected: set[tuple[int, str]],
                   read_bytes: dict[str, int]) -> dict[str, Any]:
    position = {c.id: i for i, c in enumerate(revision.cubes)}
    rid = revision.revision_id
    return {
        "id": rid, "staging": revision.staging, "columns": list(revision.columns),
        "space": list(revision.space), "cube_size": revision.cube_size, "rows": revision.rows,
        "bytes": revision.bytes,
        "cubes": [
            [c.id, c.depth, -1 if c.parent is None else position[c.parent], c.rows, c.bytes,
             round(c.max_weight, 6), c.blocks, list(c.files), c.subtree_rows,
             int((rid, c.id) in selected and c.present), int(c.present)]
            for c in revision.cubes
        ],
        "files": [
            [f.path, f.size, f.rows, f.blocks, round(f.min_weight, 6), round(f.max_weight, 6),
             int(f.path in read_bytes), read_bytes.get(f.path, 0)]
            for f in revision.files
        ],
        "depths": [[d.depth, d.cubes, d.blocks, d.files, d.rows] for d in revision.depths],
    }


def _asset(name: str) -> str:
    return resources.files("qbeast.operations").joinpath(name).read_text(encoding="utf-8")


def page_html(picture: IndexPicture) -> str:
    """The page as text."""
    payload = json.dumps(picture_data(picture), separators=(",", ":"))
    # inside <script>, "</" could close the element early; JSON allows the escaped form
    payload = payload.replace("</", "<\\/")
    script = _asset("index_page.js").replace("</", "<\\/")
    title = html.escape(f"Qbeast index of {picture.path}")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{title}</title>\n<style>\n{_asset('index_page.css')}</style></head>\n"
        "<body><div id=\"page\"></div>\n"
        f"<script type=\"application/json\" id=\"qbeast-data\">{payload}</script>\n"
        f"<script>\n{script}</script>\n</body></html>\n"
    )


def write_page(picture: IndexPicture, output: str | Path) -> Path:
    """Write the page to ``output`` (an ``.html`` file) and return its path."""
    target = Path(output)
    if target.suffix.lower() not in (".html", ".htm"):
        raise InvalidOptionError(
            f"output must be an .html file, got {str(output)!r}; allowed: a path ending in .html")
    if target.parent and not target.parent.is_dir():
        raise InvalidOptionError(f"output folder {str(target.parent)!r} does not exist")
    target.write_text(page_html(picture), encoding="utf-8")
    return target


def screenshot(page: str | Path, png: str | Path, width: int = 1400, height: int = 900,
               timeout: float = 120) -> Path:
    """A PNG of the first ``width`` x ``height`` pixels of ``page``, taken with a headless
    Chromium (Debian's ``chromium`` package, or Chrome): the page draws itself with its script,
    so a picture needs a browser."""
    target = Path(png)
    if target.suffix.lower() != ".png":
        raise InvalidOptionError(f"png must be a .png file, got {str(png)!r}")
    browser = next((found for name in BROWSERS if (found := shutil.which(name))), None)
    if browser is None:
        raise InvalidOptionError(
            f"a PNG needs a headless Chromium, and none of {', '.join(BROWSERS)} is on the PATH; "
            "install one (Debian: apt-get install chromium) or open the HTML page instead")
    with tempfile.TemporaryDirectory(prefix="qbeast-chromium-") as profile:
        done = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}", f"--screenshot={target.resolve()}",
             f"--window-size={width},{height}", Path(page).resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0 or not target.is_file():
        raise InvalidOptionError(f"{browser} could not take the screenshot: {done.stderr[-500:]}")
    return target


def show_index(path: str, output: str | Path, fraction: float | None = None,
               filter: str | ex.Expression | None = None,  # noqa: A002
               version: int | None = None, png: str | Path | None = None) -> Path:
    """Write the index page of the table at ``path`` to ``output``; with ``fraction`` and/or
    ``filter`` the page marks what that read opens (the read planner's own choice); with
    ``png``, also a screenshot of it (:func:`screenshot`)."""
    page = write_page(table_picture(path, fraction, filter, version), output)
    if png is not None:
        screenshot(page, png)
    return page
