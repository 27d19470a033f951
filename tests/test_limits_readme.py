"""README's limits table states the limits the code has (issue #19, item 5)."""

import re
from pathlib import Path

from ctxcore import memo, settings

from ctxcore.io import limits, loaders
from ctxcore.stages.filters import _LONGEST_DATE
from ctxui import loading, tables

ROOT = Path(__file__).resolve().parents[1]


def _limits() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return readme[readme.index("## Limits"):readme.index("\n## ", readme.index("## Limits") + 5)]


def test_the_limits_table_states_the_numbers_in_the_code():
    text = _limits()
    upload_mb = int(re.search(r"maxUploadSize\s*=\s*(\d+)", (ROOT / ".streamlit" / "config.toml").read_text())[1])
    assert upload_mb * 2**20 == loaders.MAX_BYTES  # the uploader refuses what the loader would refuse
    expected = [f"| bytes per file | {loaders.MAX_BYTES // 2**20} MB |", f"| upload size (app) | {upload_mb} MB |",
                f"| candidates per file | {loaders.MAX_CANDIDATES:,} |", f"| {settings.MAX_TOKENS:,} |",
                f"at most {_LONGEST_DATE} characters", f"the last {memo.INPUTS} inputs (`memo.INPUTS`)",
                f"{loading.SMALL_KEPT} files under 1 MB, {loading.LARGE_KEPT} larger ones, {loading.BUILDS_KEPT} builds",
                f"| {tables.MAX_PICKER:,} |", f"deeper than {tables.SHOWN_DEPTH} levels", "`CTXCORE_CACHE_MB`",
                f"| {limits.MAX_SPANS:,} | `ctxcore/io/limits.py` `MAX_SPANS`", f"| {limits.MAX_KEYS:,} | `ctxcore/io/limits.py`",
                f"| {limits.MAX_DEPTH} levels", f"| {limits.MAX_FIELD_CHARS // 2**20} Mi characters |", "linear time"]
    for row in expected:
        assert row in text, row
    assert loading.SMALL_FILE == 2**20
    assert memo._total_bytes() == 512 * 2**20 or "CTXCORE_CACHE_MB" in __import__("os").environ
