"""The browser test's screenshots never rewrite tracked files unless asked to."""

from __future__ import annotations

import browserkit


def test_screenshots_go_to_the_ignored_folder_by_default(monkeypatch):
    monkeypatch.delenv("CTXCORE_SCREENSHOTS", raising=False)
    path = browserkit.screenshot_path("screenshot.png")
    assert path == browserkit.ROOT / "screenshots" / "screenshot.png"
    ignored = (browserkit.ROOT / ".gitignore").read_text().split()
    assert "screenshots/" in ignored


def test_screenshots_go_to_docs_only_when_asked(monkeypatch):
    monkeypatch.setenv("CTXCORE_SCREENSHOTS", "docs")
    assert browserkit.screenshot_path("learn.png") == browserkit.ROOT / "docs" / "learn.png"
    monkeypatch.setenv("CTXCORE_SCREENSHOTS", "yes")
    assert browserkit.screenshot_path("learn.png").parent.name == "screenshots"
