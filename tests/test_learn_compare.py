"""AppTest: the learn walkthrough, the compare page, and shareable links (query parameters).

Expected numbers come from ctxcore for the same settings, so these tests check the wiring: link ->
settings store -> widgets -> Config -> build -> what the page shows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import ctxcore
from ctxcore import Config
from ctxui.text import md_escape
from conftest import app, rerun  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLES = ROOT / "sample_data"
S1 = SAMPLES / "01_duplicates_crowd_out.json"


# --------------------------------------------------------------------------- helpers



def goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"pages/{page}.py")
    return rerun(at)


def metrics(at: AppTest) -> list[tuple[str, str, str]]:
    return [(m.label, m.value, m.delta) for m in at.metric]


def metric(at: AppTest, label: str) -> tuple[str, str]:
    found = [(m.value, m.delta) for m in at.metric if m.label == label]
    assert len(found) == 1, (label, metrics(at))
    return found[0]


def frame_with(at: AppTest, column: str):
    frames = [d.value for d in at.dataframe if column in d.value.columns]
    assert frames, [list(d.value.columns) for d in at.dataframe]
    return frames[0]


def plain(markdown: str) -> str:
    return markdown.replace("\\", "").replace("\u2060", "")


def warnings(at: AppTest) -> list[str]:
    return [plain(w.value) for w in at.warning]


def link_warnings(at: AppTest) -> list[str]:
    return [w for w in warnings(at) if w.startswith("This link has")]


def kept(trace: ctxcore.Trace) -> int:
    return trace.fate_counts()["kept"]


def step_header(at: AppTest) -> str:
    return [h.value for h in at.header][0]


def n_steps(at: AppTest) -> int:
    return len(at.selectbox(key="learn.jump").options)


# --------------------------------------------------------------------------- learn

def test_every_learn_step_renders_and_is_kept_in_the_url():
    at = rerun(app())
    goto(at, "learn")
    N_STEPS = n_steps(at)
    assert N_STEPS >= 11
    seen = []
    for k in range(1, N_STEPS + 1):
        assert at.query_params.get("step") == str(k)
        progress = at.get("progress")[0].proto
        assert progress.text.startswith(f"Step {k} of {N_STEPS}")
        assert step_header(at).startswith(f"{k}. ")
        seen.append(step_header(at))
        labels = [label for label, _, _ in metrics(at)]
        assert labels == ["Kept", "Dropped", "Evidence tokens", "Prompt tokens", "Fates changed"], labels
        before, after = at.session_state["learn.traces"]
        moved = [d for b, d in zip(before.decisions, after.decisions) if b.fate != d.fate]
        assert metric(at, "Fates changed")[0] == f"{len(moved):,}"
        assert metric(at, "Kept")[0] == f"{kept(after):,}"
        assert metric(at, "Prompt tokens") == (f"{after.prompt.tokens:,}",
                                               f"{after.prompt.tokens - before.prompt.tokens:+,}")
        if k < N_STEPS:
            at.button(key="learn.next").click()
            rerun(at)
    assert at.button(key="learn.next").disabled
    assert len(set(seen)) == N_STEPS
    at.button(key="learn.prev").click()
    rerun(at)
    assert at.query_params.get("step") == str(N_STEPS - 1)
    assert step_header(at).startswith(f"{N_STEPS - 1}. ")
    at.selectbox(key="learn.jump").set_value(2)
    rerun(at)
    assert at.query_params.get("step") == "2" and step_header(at).startswith("2. ")


def test_a_link_with_a_step_opens_the_walkthrough_there():
    at = rerun(app(step="5"))
    goto(at, "learn")
    assert step_header(at).startswith("5. ")
    assert at.get("progress")[0].proto.text.startswith(f"Step 5 of {n_steps(at)}")
    assert at.query_params.get("step") == "5"
    assert not link_warnings(at)


def test_a_bad_step_in_a_link_is_one_warning_and_step_one():
    at = rerun(app(step="99"))
    goto(at, "learn")
    found = link_warnings(at)
    assert len(found) == 1 and "step='99'" in found[0], warnings(at)
    assert step_header(at).startswith("1. ")


def _go_to_step(at: AppTest, title_word: str) -> AppTest:
    """Jump to the first step whose header contains ``title_word``."""
    options = at.selectbox(key="learn.jump").options
    index = next(i for i, o in enumerate(options, 1) if title_word.lower() in o.lower())
    at.selectbox(key="learn.jump").set_value(index)
    return rerun(at)


def _check_numbers(at: AppTest, before: ctxcore.Trace, after: ctxcore.Trace) -> None:
    assert metric(at, "Kept") == (f"{kept(after):,}", f"{kept(after) - kept(before):+,}")
    dropped_a, dropped_b = len(after.decisions) - kept(after), len(before.decisions) - kept(before)
    assert metric(at, "Dropped") == (f"{dropped_a:,}", f"{dropped_a - dropped_b:+,}")
    ea, eb = ctxcore.evidence_cost(after), ctxcore.evidence_cost(before)
    assert metric(at, "Evidence tokens") == (f"{ea:,}", f"{ea - eb:+,}")
    assert metric(at, "Prompt tokens") == (f"{after.prompt.tokens:,}",
                                           f"{after.prompt.tokens - before.prompt.tokens:+,}")
    changed = {d.id: (d.fate, a.fate) for d, a in zip(before.decisions, after.decisions) if d.fate != a.fate}
    # every step is chosen to change some fate: a step whose before and after agree shows nothing, and
    # the table check below would then pass without looking at anything
    assert changed, "the step's before and after settings decide every candidate alike"
    table = frame_with(at, "fate_a")
    assert {r.id: (r.fate_a, r.fate_b) for r in table.itertuples()} == changed


def test_near_dedup_step_numbers_are_what_ctxcore_builds():
    at = rerun(app())
    goto(at, "learn")
    _go_to_step(at, "Near duplicates")
    loaded = ctxcore.load(S1)
    before = loaded.build(loaded.settings(near_dup=None))
    _check_numbers(at, before, loaded.build(loaded.settings(near_dup=0.8)))
    table = frame_with(at, "fate_a").set_index("id")
    assert table.loc["returns-shipping-damaged", "fate_a"] == "over_budget"
    assert table.loc["returns-shipping-damaged", "fate_b"] == "kept"
    # the step's own control (not the sidebar) moves the after side, and the link follows it
    at.select_slider(key="learn.near").set_value(0.95)
    rerun(at)
    _check_numbers(at, before, loaded.build(loaded.settings(near_dup=0.95)))
    assert at.query_params.get("lv") == "0.95"
    assert at.session_state["ctx.controls"]["near_dup"] == pytest.approx(0.8)  # the sidebar store is untouched


def test_stale_selection_and_label_steps_match_ctxcore():
    at = rerun(app())
    goto(at, "learn")
    cases = [
        ("stale", "04_stale_policy", {"prefer_newest": False}, {"prefer_newest": True}),
        ("Selection", "07_density_vs_score", {"select": "score"}, {"select": "density"}),
        ("Labels", "01_duplicates_crowd_out", {"label_overhead": 0}, {"label_overhead": "auto"}),
        ("Compression", "07_density_vs_score", {"compress": False}, {"compress": True}),
        ("Budget", "03_overflow", {"window": 32768}, {"window": 8192}),
    ]
    for word, sample, before_settings, after_settings in cases:
        _go_to_step(at, word)
        loaded = ctxcore.load(SAMPLES / f"{sample}.json")
        _check_numbers(at, loaded.build(loaded.settings(**before_settings)),
                       loaded.build(loaded.settings(**after_settings)))


def test_a_link_sets_the_step_control():
    at = rerun(app(step="4", lv="0.9"))
    goto(at, "learn")
    assert at.select_slider(key="learn.near").value == pytest.approx(0.9)
    loaded = ctxcore.load(S1)
    _check_numbers(at, loaded.build(loaded.settings(near_dup=None)), loaded.build(loaded.settings(near_dup=0.9)))
    assert at.query_params.get("lv") == "0.9"


def test_ordering_step_shows_where_passages_sit():
    at = rerun(app())
    goto(at, "learn")
    _go_to_step(at, "Ordering")
    charts = [c for c in at.get("plotly_chart") if '"scatter"' in c.proto.spec]
    assert len(charts) == 2  # before and after, each with the middle shaded
    assert all('"rect"' in c.proto.spec for c in charts)
    moved = frame_with(at, "position_a").set_index("id")
    loaded = ctxcore.load(SAMPLES / "02_buried_in_middle.json")
    after = loaded.build(loaded.settings(order="sandwich"))
    best = max(after.kept(), key=lambda d: next(c.score for c in after.candidates if c.id == d.id))
    assert moved.loc[best.id, "position_b"] == 1


def test_exact_dedup_step_shows_what_one_space_does():
    at = rerun(app())
    goto(at, "learn")
    _go_to_step(at, "Exact duplicates")
    table = frame_with(at, "fate_a").set_index("id")
    assert table.loc["helpcenter-refund-timing", "fate_b"] == "exact_duplicate"
    assert table.loc["helpcenter-refund-timing", "fate_a"] != "exact_duplicate"
    hashes = frame_with(at, "SHA-256 of the text")
    assert hashes["SHA-256 of the text"].nunique() == 1  # as retrieved: the same hash


# --------------------------------------------------------------------------- compare

def test_compare_naive_and_recommended_on_scenario_1():
    at = rerun(app(scenario="01_duplicates_crowd_out"))
    goto(at, "compare")
    assert at.selectbox(key="cmp.a").value == "naive"
    assert at.selectbox(key="cmp.b").value == "recommended"
    loaded = ctxcore.load(S1)
    naive = loaded.build(loaded.settings(**ctxcore.PRESETS["naive"]))
    recommended = loaded.build(loaded.settings(**ctxcore.PRESETS["recommended"]))
    table = frame_with(at, "fate_a").set_index("id")
    assert list(table.columns) == ["fate_a", "fate_b", "why_a", "why_b"]
    assert table.loc["returns-shipping-damaged", "fate_a"] == "over_budget"
    assert table.loc["returns-shipping-damaged", "fate_b"] == "kept"
    near_copies = [d.id for d in recommended.decisions if d.fate == "near_duplicate"]
    assert len(near_copies) == 4
    for cid in near_copies:
        assert table.loc[cid, "fate_b"] == "near_duplicate"
        assert table.loc[cid, "fate_a"] in ("kept", "over_budget")
    assert "kept" in {table.loc[c, "fate_a"] for c in near_copies}  # naive keeps a near copy
    want = {d.id for d, r in zip(naive.decisions, recommended.decisions) if d.fate != r.fate}
    assert set(table.index) == want
    assert table.loc["returns-shipping-damaged", "why_b"] == recommended.decision("returns-shipping-damaged").reason
    # headline numbers of each side
    assert [m.value for m in at.metric if m.label == "Kept"] == [str(kept(naive)), str(kept(recommended))]
    # by hand: naive keeps two refund copies (134 + 135 of 340 tokens); recommended keeps the FAQ chunk
    # and the shipping chunk (135 + 157)
    assert [m.value for m in at.metric if m.label == "Kept"] == ["2", "2"]
    assert table.loc["pdf-returns-guide-p3", "fate_a"] == "kept"
    assert [m.value for m in at.metric if m.label == "Prompt / safe input"] == [
        f"{t.prompt.tokens:,} / {t.budget.safe_input:,}" for t in (naive, recommended)]
    # token totals and the diff of the two prompts, as plain text
    totals = frame_with(at, "change").set_index("number")
    assert totals.loc["prompt tokens", "A"] == naive.prompt.tokens
    assert totals.loc["prompt tokens", "B"] == recommended.prompt.tokens
    diffs = [c.value for c in at.code if c.language == "diff"]
    assert len(diffs) == 1
    assert diffs[0].startswith("--- prompt A\n+++ prompt B")
    assert any(line.startswith("+") and "returns-shipping-damaged" in line for line in diffs[0].splitlines())
    assert len(at.get("plotly_chart")) == 2  # a prompt map per side


def test_compare_presets_come_from_the_link_and_go_back_into_it():
    at = rerun(app(scenario="07_density_vs_score", a="file", b="sidebar", sel="mmr"))
    goto(at, "compare")
    assert at.selectbox(key="cmp.a").value == "file"
    assert at.selectbox(key="cmp.b").value == "sidebar"
    loaded = ctxcore.load(SAMPLES / "07_density_vs_score.json")
    a, b = at.session_state["cmp.traces"]
    assert a.config == loaded.settings()
    assert b.config == loaded.settings(select="mmr")
    assert at.query_params.get("a") == "file" and at.query_params.get("sel") == "mmr"
    at.selectbox(key="cmp.a").set_value("naive")
    rerun(at)
    assert "a" not in at.query_params  # back at its default


def test_compare_bad_preset_in_link_warns():
    at = rerun(app(a="bogus"))
    goto(at, "compare")
    found = link_warnings(at)
    assert len(found) == 1 and "a='bogus'" in found[0]
    assert at.selectbox(key="cmp.a").value == "naive"


def test_compare_on_an_upload_says_the_link_has_settings_only():
    at = rerun(app())
    at.file_uploader(key="dbg.upload").set_value(("seed.json", (FIXTURES / "seed.json").read_bytes(),
                                                    "application/json"))
    rerun(at)
    assert "scenario" not in at.query_params
    goto(at, "compare")
    assert any("carries the settings only" in c.value for c in at.caption)
    a, b = at.session_state["cmp.traces"]
    assert [d.id for d in a.decisions] == [c.id for c in ctxcore.load(FIXTURES / "seed.json").candidates]


# --------------------------------------------------------------------------- shareable links

LINK = {"scenario": "04_stale_policy", "budget": "200", "newest": "0", "order": "original", "nd": "0.9",
        "label": "0", "maxp": "2", "win": "16384"}


def _link_config() -> Config:
    loaded = ctxcore.load(SAMPLES / "04_stale_policy.json")
    return loaded.settings(budget=200, prefer_newest=False, order="original", near_dup=0.9, label_overhead=0,
                           max_passages=2, window=16384)


def test_a_link_sets_the_scenario_and_every_control():
    at = rerun(app(**LINK))
    assert at.selectbox(key="dbg.sample").value == "04_stale_policy.json"
    assert at.toggle(key="dbg.budget_on").value is True
    assert at.number_input(key="dbg.budget").value == 200
    assert at.checkbox(key="dbg.prefer_newest").value is False
    assert at.selectbox(key="dbg.order").value == "original"
    assert at.slider(key="dbg.near_dup").value == pytest.approx(0.9)
    assert at.toggle(key="dbg.label_auto").value is False
    assert at.number_input(key="dbg.label_overhead").value == 0
    assert at.toggle(key="dbg.max_passages_on").value is True
    assert at.number_input(key="dbg.max_passages").value == 2
    assert at.number_input(key="dbg.window").value == 16384
    want = ctxcore.load(SAMPLES / "04_stale_policy.json").build(_link_config())
    assert at.session_state["ctx.trace"].config == want.config
    assert metric(at, "Kept")[0] == str(kept(want))
    assert list(frame_with(at, "fate")["fate"]) == [d.fate for d in want.decisions]
    assert dict(at.query_params) == LINK  # the address is written back the same, short
    assert not link_warnings(at)


@pytest.mark.parametrize("page", ["compare", "learn", "budget"])
def test_a_link_opened_on_any_page_keeps_its_settings(page):
    at = rerun(app(**LINK))
    goto(at, page)
    store = at.session_state["ctx.controls"]
    assert (store["budget_on"], store["budget"], store["order"], store["window"]) == (True, 200, "original", 16384)
    assert at.session_state["ctx.sample"] == "04_stale_policy.json"
    if page == "budget":
        assert at.number_input(key="bud.window").value == 16384
    if page == "compare":
        at.selectbox(key="cmp.b").set_value("sidebar")
        rerun(at)
        assert at.session_state["cmp.traces"][1].config == _link_config()
    for key in ("scenario", "budget", "order", "win"):
        assert at.query_params.get(key) == LINK[key]


def test_changing_a_control_updates_the_link_with_non_default_values_only():
    at = rerun(app())
    at.toggle(key="dbg.fix").set_value(True)  # a sample opens in its failure state: show its own settings
    rerun(at)
    assert dict(at.query_params) == {"scenario": "01_duplicates_crowd_out"}  # the file's own settings: nothing else
    at.slider(key="dbg.near_dup").set_value(0.95)
    rerun(at)
    assert at.query_params.get("nd") == "0.95"
    at.toggle(key="dbg.near_dup_on").set_value(False)
    rerun(at)
    assert at.query_params.get("nd") == "off"
    at.toggle(key="dbg.near_dup_on").set_value(True)
    rerun(at)
    at.slider(key="dbg.near_dup").set_value(0.8)  # the file's value again
    rerun(at)
    assert "nd" not in at.query_params
    at.selectbox(key="dbg.sample").set_value("06_unanswerable.json")
    rerun(at)
    at.toggle(key="dbg.fix").set_value(True)
    rerun(at)
    assert dict(at.query_params) == {"scenario": "06_unanswerable"}
    at.text_input(key="dbg.query").set_value("Where is my parcel?")
    rerun(at)
    assert at.query_params.get("q") == "Where is my parcel?"


def test_the_link_round_trips_through_a_new_session():
    at = rerun(app())
    at.selectbox(key="dbg.sample").set_value("07_density_vs_score.json")
    rerun(at)
    at.radio(key="dbg.select").set_value("mmr")
    at.toggle(key="dbg.max_chunk_on").set_value(True)
    at.checkbox(key="dbg.compress").check()
    rerun(at)
    at.number_input(key="dbg.max_chunk_tokens").set_value(120)
    at.slider(key="dbg.mmr_lambda").set_value(0.4)
    rerun(at)
    shown = at.session_state["ctx.trace"]
    link = dict(at.query_params)
    again = rerun(app(**link))
    assert again.session_state["ctx.trace"].config == shown.config
    assert again.session_state["ctx.trace"].prompt.text == shown.prompt.text
    assert dict(again.query_params) == link


def test_settings_from_a_link_without_a_scenario_are_kept_when_the_first_sample_loads():
    at = rerun(app(nd="off", order="rank"))
    want = ctxcore.load(S1).build(Config(near_dup=None, order="rank"))
    assert at.session_state["ctx.trace"].config == want.config
    assert metric(at, "Kept")[0] == str(kept(want))


def test_invalid_link_parameters_are_one_warning_and_defaults():
    at = rerun(app(scenario="no_such_file", nd="7", win="abc", bogus="1"))
    found = link_warnings(at)
    assert len(found) == 1, warnings(at)
    for name in ("scenario='no_such_file'", "nd='7'", "win='abc'", "bogus"):
        assert name in found[0], found[0]
    assert at.selectbox(key="dbg.sample").value == "01_duplicates_crowd_out.json"  # the default sample
    at.toggle(key="dbg.fix").set_value(True)  # (which opens in its failure state)
    rerun(at)
    assert at.session_state["ctx.trace"].config == ctxcore.load(S1).settings()
    assert at.slider(key="dbg.near_dup").value == pytest.approx(0.8)


def test_settings_that_do_not_go_together_are_named():
    at = rerun(app(scenario="02_buried_in_middle", win="500", out="1024"))
    found = link_warnings(at)
    assert len(found) == 1 and "win='500'" in found[0] and "max_output" in found[0], found
    assert at.number_input(key="dbg.window").value == 8192
    assert at.number_input(key="dbg.max_output").value == 1024


def test_markup_in_a_link_stays_text():
    at = rerun(app(scenario="<img src=x onerror=alert(1)>", caller="![x](http://example.invalid/p.png)"))
    found = [w.value for w in at.warning if "This link" in w.value]
    assert len(found) == 1
    assert not re.search(r"(?<!\\)<", found[0]) and "![" not in found[0]  # escaped for markdown
    assert "<img src=x onerror=alert(1)>" in plain(found[0])  # and shown literally
    assert at.text_input(key="dbg.caller").value == "![x](http://example.invalid/p.png)"


def test_share_box_shows_the_full_link():
    at = app(scenario="03_overflow", sel="density")
    at.context["url"] = "http://example.test:8501/"
    rerun(at)
    codes = [c.value for c in at.sidebar.code]
    assert "http://example.test:8501/?scenario=03_overflow&sel=density" in codes, codes
    relative = rerun(app(scenario="03_overflow"))
    assert "?scenario=03_overflow" in [c.value for c in relative.sidebar.code]
    assert any("app's address" in c.value for c in relative.sidebar.caption)


def test_every_config_field_has_a_sidebar_control():
    import ctxui

    store_fields = set(ctxui.DEFAULT_CONTROLS)
    made = ctxui.config_from_controls(ctxui.DEFAULT_CONTROLS)
    assert set(made) == set(Config().to_dict())  # every Config field is set by the controls
    bound = set()
    at = rerun(app())
    for key, field in ctxui.BINDINGS.items():
        if key.startswith("dbg."):
            bound.add(field)
    assert store_fields <= bound, store_fields - bound
    linked = {p.field for p in ctxui.LINK_PARAMS} | {p.switch for p in ctxui.LINK_PARAMS if p.switch}
    assert store_fields <= linked, store_fields - linked  # and every control travels in a link
    del at


def test_link_parameters_are_documented():
    import ctxui

    doc = ctxui.link_params.__doc__
    for key in [p.key for p in ctxui.LINK_PARAMS] + ["scenario", *ctxui.LINK_PAGE_KEYS]:
        assert re.search(rf"\s{re.escape(key)}(\s|,|:|\))", doc), key


def test_a_learn_step_opens_in_the_debugger_with_its_after_settings():
    at = rerun(app())
    goto(at, "learn")
    _go_to_step(at, "stale")
    at.button(key="learn.open").click()
    rerun(at)
    assert [t.value for t in at.title] == ["Context construction debugger"]
    loaded = ctxcore.load(SAMPLES / "04_stale_policy.json")
    want = loaded.build(loaded.settings(prefer_newest=True))
    assert at.session_state["ctx.sample"] == "04_stale_policy.json"
    assert at.session_state["ctx.trace"].config == want.config
    assert metric(at, "Kept")[0] == str(kept(want))
    assert at.query_params.get("scenario") == "04_stale_policy"


def test_a_bad_step_value_in_a_link_is_named_and_the_start_value_used():
    at = rerun(app(step="4", lv="0.33"))
    goto(at, "learn")
    found = link_warnings(at)
    assert len(found) == 1 and "lv='0.33'" in found[0], warnings(at)
    assert at.select_slider(key="learn.near").value == pytest.approx(0.8)
    assert "lv" not in at.query_params


def test_learn_step_3_says_which_side_is_before_and_that_one_fate_moved():
    # the exact-duplicates step: the copy with a trailing space against an identical one changes no count, only
    # the copy's fate (over_budget -> exact_duplicate); the cards must not read as if nothing happened
    at = rerun(app())
    goto(at, "learn")
    for _ in range(2):
        at.button(key="learn.next").click()
        rerun(at)
    assert step_header(at).startswith("3. ")
    assert metric(at, "Prompt tokens") == ("445", "+0") and metric(at, "Kept") == ("2", "+0")
    assert metric(at, "Fates changed")[0] == "1"
    assert [m.help for m in at.metric if m.label == "Fates changed"] == [
        "helpcenter-refund-timing: over_budget → exact_duplicate"]
    assert md_escape("Each card shows the number after the change (identical copy); the small figure under it is "
                     "the change from before (copy with a trailing space).") in [c.value for c in at.caption]
