"""AppTest: samples open in their failure state, uploads get their own budget, "as sent" views of a logged
trace, span panels, readable tables and prompt maps on a stable, shared scale. Expected values come from
ctxcore for the same settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import ctxcore
import ctxui
from ctxcore import Config
from ctxcore.analysis.reach import reached
from conftest import rerun  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLES = sorted((ROOT / "sample_data").glob("*.json"), key=lambda p: p.name)
TRUNCATED = FIXTURES / "traces" / "phoenix_truncated_prompt.json"




def start(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    for k, v in params.items():
        at.query_params[k] = v
    return rerun(at)


def metric(at: AppTest, label: str) -> str:
    return [m.value for m in at.metric if m.label == label][0]


def upload(at: AppTest, path: Path, name: str | None = None) -> AppTest:
    at.file_uploader(key="dbg.upload").set_value((name or path.name, path.read_bytes(), "application/json"))
    return rerun(at)


def naive_config(loaded) -> Config:
    return Config.from_dict({**Config().to_dict(), **loaded.extra["scenario"]["naive_config"]})


@pytest.mark.parametrize("sample", [p for p in SAMPLES if ctxui.has_failure(ctxcore.load(p))],
                         ids=lambda p: p.stem)
def test_a_sample_opens_in_its_failure_and_the_toggle_shows_the_fix(sample):
    at = start()
    at.selectbox(key="dbg.sample").set_value(sample.name)
    rerun(at)
    loaded = ctxcore.load(sample)
    failure, fix = loaded.build(naive_config(loaded)), loaded.build()
    assert at.session_state["ctx.trace"].config == failure.config
    assert at.toggle(key="dbg.fix").value is False
    assert metric(at, "Kept") == str(failure.fate_counts()["kept"])
    assert metric(at, "Prompt / safe input") == f"{failure.prompt.tokens:,} / {failure.budget.safe_input:,}"
    assert any("What goes wrong (shown now)" in w.value for w in at.warning)
    at.toggle(key="dbg.fix").set_value(True)
    rerun(at)
    assert at.session_state["ctx.trace"].config == fix.config
    assert metric(at, "Kept") == str(fix.fate_counts()["kept"])
    assert metric(at, "Prompt / safe input") == f"{fix.prompt.tokens:,} / {fix.budget.safe_input:,}"
    assert any("What fixes it (shown now)" in s.value for s in at.success)
    at.toggle(key="dbg.fix").set_value(False)
    rerun(at)
    assert metric(at, "Kept") == str(failure.fate_counts()["kept"])


def test_an_upload_without_settings_does_not_keep_the_samples_budget():
    at = start()  # sample 01: a direct 340-token docs budget
    assert at.toggle(key="dbg.budget_on").value is True
    upload(at, FIXTURES / "seed.json")
    trace = at.session_state["ctx.trace"]
    assert trace.config == Config() and not trace.budget.docs_direct
    assert any("carries none" in c.value and "window split" in c.value for c in at.caption)
    upload(at, FIXTURES / "with_config.json")
    assert any("this file's own config" in c.value for c in at.caption)


def test_a_missing_question_is_said_plainly():
    at = start()
    data = json.loads((FIXTURES / "seed.json").read_text())
    data.pop("query")
    at.file_uploader(key="dbg.upload").set_value(("noq.json", json.dumps(data).encode(), "application/json"))
    rerun(at)
    assert any("has no question" in w.value for w in at.warning)


def test_as_sent_mode_lists_the_logged_passages_in_logged_order_with_their_replay_fates():
    at = upload(start(), TRUNCATED)
    at.radio(key="dbg.view").set_value("sent")
    rerun(at)
    trace = at.session_state["ctx.trace"]
    loaded = at.session_state["ctx.loaded"]
    sent = sorted((r for r in reached(trace.candidates, loaded.logged.prompt_text) if r.order),
                  key=lambda r: r.order)
    table = next(df.value for df in at.dataframe if "replay fate" in df.value.columns)  # not "About this file"
    assert list(table["id"]) == [r.id for r in sent]
    assert list(table["order"]) == list(range(1, len(sent) + 1))
    fates = {d.id: d.fate for d in trace.decisions}
    assert list(table["replay fate"]) == [fates[r.id] for r in sent]
    assert any(s.startswith("partly") for s in table["sent"])  # the fixture's cut passage
    assert metric(at, "Passages sent") == str(len(sent))
    if loaded.logged.spans:  # the importer keeps the run's spans: the panel lists each one
        spans = next(df.value for df in at.dataframe if "duration (ms)" in df.value.columns)
        assert len(spans) == len(loaded.logged.spans)
    else:
        assert any("no span timings" in c.value for c in at.caption)
    assert any(c.value == loaded.logged.prompt_text for c in at.code)


def test_compare_has_an_as_sent_side_on_the_shared_axis():
    at = upload(start(), TRUNCATED)
    at.switch_page("pages/compare.py")
    rerun(at)
    at.selectbox(key="cmp.a").set_value("sent")
    rerun(at)
    assert metric(at, "Passages sent")
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(specs) == 2
    assert specs[0]["layout"]["xaxis"]["range"] == specs[1]["layout"]["xaxis"]["range"]
    assert [c for c in at.code if c.language == "diff"]


def test_compare_maps_share_one_axis():
    at = start(scenario="03_overflow")
    at.switch_page("pages/compare.py")
    rerun(at)
    at.selectbox(key="cmp.a").set_value("failure")  # a 32k window against the file's 8k
    at.selectbox(key="cmp.b").set_value("file")
    rerun(at)
    a, b = at.session_state["cmp.traces"]
    assert a.budget.safe_input != b.budget.safe_input
    ranges = [json.loads(c.proto.spec)["layout"]["xaxis"]["range"] for c in at.get("plotly_chart")]
    longest = max(a.prompt.tokens, b.prompt.tokens)
    step = next(x for x in (500, 1000, 2000, 4000, 8000, 16000, 32000) if x >= longest * 1.1)
    expected = step if step * 2 <= max(a.budget.safe_input, b.budget.safe_input) else \
        max(a.budget.safe_input, b.budget.safe_input)
    assert ranges[0] == ranges[1] and ranges[0][1] == expected
    assert any(c.value.endswith("Both maps share this axis.") and c.value.startswith("Scale: ") for c in at.caption)


def test_the_debugger_map_keeps_its_scale_when_a_control_moves():
    at = start()
    trace = at.session_state["ctx.trace"]
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    # auto: a 445-token prompt is drawn on the first 500 tokens, not as a sliver of the 6,809-token safe input
    assert (trace.prompt.tokens, trace.budget.safe_input) == (445, 6809)
    assert spec["layout"]["xaxis"]["range"][1] == 500
    assert ("Scale: the first 500 tokens, fitted to the prompt (445 tokens); the safe input, 6,809, is off the "
            "chart.") in [c.value for c in at.caption]
    at.number_input(key="dbg.budget").set_value(120)
    rerun(at)
    again = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert at.session_state["ctx.trace"].prompt.tokens < 445
    assert again["layout"]["xaxis"]["range"] == spec["layout"]["xaxis"]["range"]  # no step crossed: it stays
    at.selectbox(key="dbg.map_scale").set_value("safe")
    rerun(at)
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["xaxis"]["range"][1] == 6809
    at.selectbox(key="dbg.map_scale").set_value(1000)
    rerun(at)
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["xaxis"]["range"][1] == 1000
    assert json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["uniformtext"]["mode"] == "hide"


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.stem)
def test_the_fates_table_has_no_none_cells_and_rows_tall_enough_for_each_reason(sample):
    at = start()
    at.selectbox(key="dbg.sample").set_value(sample.name)
    rerun(at)
    table = at.dataframe[0]
    shown = table.value
    for col in shown.columns:
        assert not shown[col].isna().any(), col
        assert "None" not in [str(v) for v in shown[col]], col
    need = max(ctxui.wrap_lines(r) for r in shown["reason"])
    height = table.proto.row_height or 35
    assert need == 1 or height >= need * ctxui.tables.LINE_PX  # every line of the longest reason is in its row
    if need == 1:  # a one-line row cuts what passes the cell's edge: every reason fits the line
        assert max(map(ctxui.tables.text_px, shown["reason"])) <= ctxui.tables.line_room()
    assert json.loads(table.proto.columns)["reason"]["width"] == ctxui.REASON_WIDTH


def test_spans_are_shown_as_a_tree_in_start_order():
    spans = [{"name": "llm", "kind": "LLM", "id": "c", "parent": "r", "start": 2.0, "duration_ms": 800,
              "model": "gpt-4o", "prompt_tokens": 236, "completion_tokens": 40},
             {"name": "run", "kind": "CHAIN", "id": "r", "parent": None, "start": 1.0, "duration_ms": 1500},
             {"name": "retrieve", "kind": "RETRIEVER", "id": "b", "parent": "r", "start": 1.1, "duration_ms": 300}]
    df = ctxui.spans_frame(spans)
    assert [s.strip() for s in df["span"]] == ["run", "└ retrieve", "└ llm"]
    assert list(df["prompt tokens"].astype(object).where(df["prompt tokens"].notna(), None)) == [None, None, 236]
    fig = ctxui.span_timeline(ctxui.sent._tree(spans))
    assert list(fig.data[0].base) == pytest.approx([0, 100, 1000])


@pytest.mark.parametrize("text, room, lines", [
    # 75 characters, 453 px: one line would run past a 430 px reason column's 413 px of room
    ("the passage limit (max_passages 3) was already reached before this candidate", 407, 2),
    ("over budget", 70.6, 1),            # exactly its own width: fits
    ("over budget", 70.5, 2),            # a hair less: the second word moves down
    ("a\nb", 400, 2),                    # its own line breaks are kept
    ("x" * 100, 100, 7),                 # a word wider than a line is cut (x is 6.244 px: 16 to a line)
])
def test_a_reason_is_wrapped_where_the_font_fits_it(text, room, lines):
    wrapped = ctxui.tables.wrap_px(text, room)
    assert len(wrapped) == lines
    assert all(ctxui.tables.text_px(line) <= room for line in wrapped)
    assert "".join(wrapped).replace(" ", "") == text.replace(" ", "").replace("\n", "")


def test_a_reason_too_wide_for_one_line_gets_a_two_line_row():
    # 75 characters, 453 px drawn: a count of characters (80 to a line) left it cut in a one-line row
    reason = "the passage limit (max_passages 3) was already reached before this candidate"
    assert ctxui.wrap_lines(reason) == 2
    assert ctxui.row_height_for([reason]) == 66       # two lines of 21 px + padding, at least Streamlit's 4rem
    assert ctxui.row_height_for(["over budget"]) is None
    assert ctxui.row_height_for([reason * 3]) == 4 * ctxui.tables.LINE_PX + ctxui.tables.ROW_PAD_PX
