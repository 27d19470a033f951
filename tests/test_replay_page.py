"""The Replay a log page (AppTest): pick the sample log and a settings JSON, replay, read the aggregate,
and open a run in the Debugger and in Compare with both configurations."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = json.dumps({"budget": 250}).encode()


def _run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not [e.value for e in at.error], [e.value for e in at.error]
    return at


def _metric(at: AppTest, label: str) -> str:
    (value,) = [m.value for m in at.metric if m.label == label]
    return value


def _replayed() -> AppTest:
    at = _run(AppTest.from_file(str(ROOT / "app.py"), default_timeout=120))
    at.switch_page("pages/replay.py")
    _run(at)
    at.radio(key="rp.which").set_value("Upload a settings JSON")
    _run(at)
    at.file_uploader(key="rp.settings").set_value(("tight.json", SETTINGS, "application/json"))
    _run(at)
    at.button(key="rp.run").click()
    return _run(at)


def test_the_sample_log_replays_under_an_uploaded_settings_file():
    at = _replayed()
    # written by hand: the sample log under a 250-token docs budget (as the README's command shows)
    assert _metric(at, "Runs replayed") == "30"
    assert _metric(at, "Changed") == "15"
    assert _metric(at, "Cited passage lost") == "3"
    assert _metric(at, "Prompt tokens saved") == "1,506"
    assert _metric(at, "Unreadable") == "0"
    regressions = at.dataframe[0].value  # the first table: the likely regressions
    assert list(regressions["run"]) == ["run-00009", "run-00014", "run-00019"]
    assert list(regressions["cited as"]) == ["S5", "S5", "S4"]
    tokens, fates = (json.loads(c.proto.spec) for c in at.get("plotly_chart"))
    assert tokens["layout"]["title"]["text"] == "Prompt tokens saved per run"
    assert len(tokens["data"][0]["y"]) == 30
    assert fates["data"][0]["y"] == ["kept → over_budget"] and fates["data"][0]["x"] == [15]
    assert at.selectbox(key="rp.pick").value == at.session_state["rp.result"]["rows"][9]["index"]  # a regression first


def test_a_run_opens_in_the_debugger_and_in_compare_with_both_configurations():
    at = _replayed()
    at.button(key="rp.debugger").click()
    _run(at)
    loaded = at.session_state["ctx.loaded"]
    assert loaded.trace.logged.trace_id == "run-00009"
    assert loaded.trace is not None and loaded.trace.budget.docs == 400  # the baseline: the logged trace
    trace = at.session_state["ctx.trace"]
    assert trace.budget.docs == 250  # the Debugger builds under the new settings (the sidebar's now)
    assert "discount-001#5" not in [d.id for d in trace.kept()]  # the passage its answer cited is gone

    at = _replayed()
    at.button(key="rp.compare").click()
    _run(at)
    a, b = at.session_state["cmp.traces"]
    assert (a.budget.docs, b.budget.docs) == (400, 250)
    assert "discount-001#5" in [d.id for d in a.kept()] and "discount-001#5" not in [d.id for d in b.kept()]
