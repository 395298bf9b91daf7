"""Headless Chromium for the picture tests: render a page offline, read back the DOM it built
and a screenshot. Mermaid's JavaScript comes from the npm registry (`npm install` into a cache
folder at test time, never a CDN at view time); Chromium is Debian's `chromium` package.

`browser()` and `mermaid_js()` return None when the tool is missing (the tests skip with one
line), except under CI=true, where a missing browser or Mermaid fails the test.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

MERMAID_VERSION = "11.17.2"
"""The Mermaid release the charts are checked with (GitHub renders with its own 11.x)."""
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--allow-file-access-from-files",
    "--virtual-time-budget=15000",
)
CACHE = Path(os.environ.get("MEMLEDGER_NPM_CACHE", Path.home() / ".cache" / "memledger-npm"))


def _required() -> bool:
    return os.environ.get("CI") == "true"


def _missing(what: str) -> None:
    if _required():
        pytest.fail(f"{what} (CI=true: the browser tests must run)")
    pytest.skip(what)


def browser() -> str:
    """The path of a Chromium executable (skips, or fails under CI=true, when there is none)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    _missing("no chromium on PATH: browser test skipped")
    raise AssertionError  # unreachable


def mermaid_js() -> Path:
    """mermaid.min.js from the npm registry, installed once into the cache folder."""
    target = CACHE / f"mermaid-{MERMAID_VERSION}" / "node_modules" / "mermaid" / "dist"
    script = target / "mermaid.min.js"
    if script.is_file():
        return script
    npm = shutil.which("npm")
    if npm is None:
        _missing("no npm to install Mermaid: browser test skipped")
    folder = CACHE / f"mermaid-{MERMAID_VERSION}"
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [
            str(npm),
            "install",
            "--silent",
            "--no-audit",
            "--no-fund",
            "--prefix",
            str(folder),
            f"mermaid@{MERMAID_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0 or not script.is_file():
        _missing(f"npm install mermaid@{MERMAID_VERSION} failed: {done.stderr.strip()[:200]}")
    return script


_ERRORS_HOOK = """<script>
window.__errors = [];
window.addEventListener("error", e => window.__errors.push(String(e.message)));
window.addEventListener("unhandledrejection", e => window.__errors.push(String(e.reason)));
const __error = console.error;
console.error = (...args) => {
  window.__errors.push(args.map(String).join(" "));
  __error(...args);
};
</script>"""
_REPORT = """<script>
function __report(state) {
  const out = document.createElement("pre");
  out.id = "__report";
  const sizes = Array.from(document.querySelectorAll("svg")).map(svg => {
    const box = svg.getBoundingClientRect();
    return [Math.round(box.width), Math.round(box.height), svg.querySelectorAll("*").length];
  });
  out.textContent = state + " " + JSON.stringify({errors: window.__errors, sizes: sizes});
  document.body.appendChild(out);
}
</script>"""


@dataclass(frozen=True)
class Rendered:
    """What the browser built: the DOM after scripts ran, and the console errors caught."""

    dom: str
    state: str
    errors: list[str]
    sizes: list[tuple[int, int, int]]
    """Each SVG's rendered width and height (CSS pixels) and its number of elements."""

    def svgs(self) -> list[str]:
        return re.findall(r"<svg\b.*?</svg>", self.dom, flags=re.S)


def run(
    page: Path, screenshot: Path | None = None, *, size: tuple[int, int] = (1100, 1400)
) -> Rendered:
    """Open `page` (a file) headless, offline; the DOM after its scripts, optionally a PNG."""
    chrome = browser()
    with tempfile.TemporaryDirectory(prefix="memledger-chromium-") as profile:
        flags = [
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}",
        ]
        dom = subprocess.run(
            [chrome, *flags, "--dump-dom", page.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        ).stdout
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                [chrome, *flags, f"--screenshot={screenshot}", page.as_uri()],
                capture_output=True,
                timeout=120,
                check=False,
            )
    report = re.search(r'<pre id="__report">(\w+) (.*?)</pre>', dom, flags=re.S)
    if report is None:
        return Rendered(dom, "missing", [], [])
    found = json.loads(html.unescape(report.group(2)))
    sizes = [(int(w), int(h), int(n)) for w, h, n in found["sizes"]]
    return Rendered(dom, report.group(1), list(found["errors"]), sizes)


def screenshot(page: Path, path: Path, size: tuple[int, int]) -> None:
    """A PNG of `page` at a window of `size` (offline, headless)."""
    with tempfile.TemporaryDirectory(prefix="memledger-chromium-") as profile:
        flags = [
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}",
        ]
        subprocess.run(
            [browser(), *flags, "--hide-scrollbars", f"--screenshot={path}", page.as_uri()],
            capture_output=True,
            timeout=120,
            check=False,
        )


def mermaid_page(markdown: str, folder: Path) -> Path:
    """An HTML page that renders each ```mermaid block of `markdown` with Mermaid (local)."""
    blocks = re.findall(r"```mermaid\n(.*?)```", markdown, flags=re.S)
    script = mermaid_js()
    charts = "\n".join(f'<pre class="mermaid">{html.escape(b)}</pre>' for b in blocks)
    page = folder / "mermaid.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'>"
        + _ERRORS_HOOK
        + f'<script src="{script.as_uri()}"></script>'
        + "</head><body style='width:1000px'>"
        + charts
        + _REPORT
        + "<script>mermaid.initialize({startOnLoad: false});"
        "mermaid.run().then(() => __report('ok')).catch(e => { window.__errors.push(String(e));"
        " __report('failed'); });</script></body></html>",
        encoding="utf-8",
    )
    return page


def html_page(report: str, folder: Path) -> Path:
    """memledger's HTML report as a file, with the console-error hook put before its content."""
    page = folder / "report.html"
    body = report.replace("<head>", "<head>" + _ERRORS_HOOK, 1)
    body = body.replace("</body>", _REPORT + "<script>__report('ok')</script></body>", 1)
    page.write_text(body, encoding="utf-8")
    return page


def chart_pages(report: str, folder: Path, stem: str) -> list[tuple[Path, tuple[int, int]]]:
    """One page per SVG chart of an HTML report (with the report's style), and its size: for a
    screenshot of one chart."""
    style = re.search(r"<style>.*?</style>", report, flags=re.S)
    heading = re.search(r"<h1>(.*?)</h1>", report, flags=re.S)
    pages = []
    for index, svg in enumerate(re.findall(r"<svg\b.*?</svg>", report, flags=re.S)):
        size = re.search(r'width="(\d+)" height="(\d+)"', svg)
        assert size is not None
        width, height = int(size.group(1)) + 40, int(size.group(2)) + 70
        page = folder / f"{stem}-{index}.html"
        page.write_text(
            "<!doctype html><html><head><meta charset='utf-8'>"
            + (style.group(0) if style else "")
            + "</head><body style='margin: 8px 16px'>"
            + (f"<h3>{heading.group(1)}</h3>" if heading else "")
            + svg
            + "</body></html>",
            encoding="utf-8",
        )
        pages.append((page, (width, height)))
    return pages
