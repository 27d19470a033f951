"""Every logged-trace family (issue #14): the fixtures in tests/fixtures/traces (shape sources in
their README.md) import with the right document ids, scores, texts, query, logged prompt and answer;
multi-run files pick the run with retrieval and an LLM call; what cannot be read is one clear line."""

from __future__ import annotations

import copy
import io
import json
import os

import pytest

from ctxcore import InputError, load, trace_from_json

from ctxcore.io import formats
from ctxcore.analysis.explain import findings

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "fixtures", "traces")


def path(name):
    return os.path.join(TRACES, name)


def read_json(name):
    with open(path(name), encoding="utf-8") as f:
        return json.load(f)


def read_jsonl(name):
    with open(path(name), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


# the scenario every new fixture shares (see the fixtures README)
Q = "How long does a refund take for a blender that arrived damaged?"
TEXTS = ["Refunds are processed within five business days after the returned item reaches our warehouse.",
         "Damaged on arrival: ask the customer for a photo of the damage and of the box, then email a prepaid "
         "return label.",
         "Store credit is issued instantly when the customer prefers it to a refund to the original payment method."]
IDS = ["kb-101", "kb-102", "kb-103"]
SCORES = [0.91, 0.84, 0.62]
SYSTEM = "Answer only from the numbered sources and cite them as [1], [2]. If the sources do not answer, say so."
ANSWER = ("The refund is processed within five business days after the blender reaches the warehouse [1]. "
          "First ask for a photo of the damage and of the box, then email a prepaid return label [2].")
CANDIDATES = path("genai_candidates.json")

# fixture -> (format, ids or None when the source has none, scores, model, prompt tokens)
FAMILIES = {
    "otlp_openinference.jsonl": ("otlp", IDS, SCORES, "gpt-4o-mini", 152),
    "phoenix_otlpv1.json": ("phoenix-otlp", IDS, SCORES, "gpt-4o-mini", 152),
    "openllmetry_langchain.json": ("otlp", None, [None, None, None], "gpt-4o-mini-2024-07-18", 152),
    "langsmith_runs.json": ("langsmith", IDS, SCORES, "gpt-4o-mini", 152),
    "mlflow_trace.json": ("mlflow", IDS, SCORES, "gpt-4o-mini", 152),
    "langfuse_sdk_dump.json": ("langfuse", IDS, SCORES, "gpt-4o-mini", 152),
    "llamaindex_streaming.json": ("openinference", IDS, SCORES, "gpt-4o-mini", 152),
}


def _load(name):
    if name == "otlp_genai.json":
        return formats.load_file(path(name), texts=_texts())
    return load(path(name))


def _texts():
    return {c["id"]: c["text"] for c in json.load(open(CANDIDATES, encoding="utf-8"))}


def _check_scenario(got, fmt, ids, scores, model, tokens):
    assert got.format == fmt
    if ids is None:
        assert len(got.candidates) == 3  # the source logs no document ids: counted, named doc-1 ...
        assert [c.id for c in got.candidates] == ["doc-1", "doc-2", "doc-3"]
    else:
        assert [c.id for c in got.candidates] == ids
    assert [c.score for c in got.candidates] == scores
    assert [c.text for c in got.candidates] == TEXTS
    assert got.query == Q
    lg = got.logged
    assert lg.format == fmt and lg.model == model and lg.prompt_tokens == tokens
    assert lg.prompt_text.startswith("system: " + SYSTEM)
    assert all(t in lg.prompt_text for t in TEXTS) and lg.prompt_text.rstrip().endswith(f"Question: {Q}")
    assert lg.answer == ANSWER
    assert got.inputs.system == SYSTEM


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_family_imports_ids_scores_texts_query_prompt_and_answer(name):
    _check_scenario(load(path(name)), *FAMILIES[name])


def test_genai_conventions_with_ids_only_take_text_from_the_candidates_file():
    with pytest.raises(InputError) as err:
        load(path("otlp_genai.json"))
    msg = str(err.value)
    assert "has no text" in msg and "3 of 3 documents carry only an id (kb-101, kb-102, kb-103)" in msg
    assert "--candidates FILE" in msg
    got = _load("otlp_genai.json")
    _check_scenario(got, "otlp", IDS, SCORES, "gpt-4o-mini-2024-07-18", 152)
    assert got.logged.conventions == ("gen_ai",)
    assert got.config.get("max_output") == 400
    assert any("recorded 3 documents by id only: took the text of 3" in w for w in got.warnings)


def test_genai_documents_with_content_need_no_candidates_file(tmp_path):
    data = read_json("otlp_genai.json")
    for s in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for a in s["attributes"]:
            if a["key"] == "gen_ai.retrieval.documents":
                a["value"] = {"stringValue": json.dumps([{"id": i, "score": sc, "content": t}
                                                         for i, sc, t in zip(IDS, SCORES, TEXTS)])}
    p = tmp_path / "genai.json"
    p.write_text(json.dumps(data))
    _check_scenario(load(p), "otlp", IDS, SCORES, "gpt-4o-mini-2024-07-18", 152)


def test_otlp_jsonl_export_batches_form_runs_and_the_default_has_retrieval_and_an_llm_call():
    got = load(path("otlp_openinference.jsonl"))
    lg = got.logged
    assert [r["id"] for r in lg.runs] == ["5f0c3a2b1d4e6f708192a3b4c5d6e7f8", "0a1b2c3d4e5f60718293a4b5c6d7e8f9"]
    assert [(r["retrieval"], r["llm"], r["documents"]) for r in lg.runs] == [(True, True, 3), (False, True, 0)]
    assert lg.runs[0]["start"] == "2025-05-15T09:06:40.000Z"
    assert lg.trace_id == lg.runs[0]["id"]
    # the spans of run 1 came in two batches (lines); the span panel lists all three, in time order
    assert [s["name"] for s in lg.spans] == ["RetrievalQA", "VectorStoreRetriever", "ChatOpenAI"]
    llm = lg.spans[2]
    assert (llm["kind"], llm["model"], llm["prompt_tokens"], llm["completion_tokens"]) == ("LLM", "gpt-4o-mini", 152, 48)
    assert llm["duration_ms"] == 1739.0 and llm["parent"] == "a0a0a0a0b1b1b1b1"
    with pytest.raises(InputError) as err:
        formats.load_file(path("otlp_openinference.jsonl"), trace_id=lg.runs[1]["id"])
    assert "no RETRIEVER or RERANKER span" in str(err.value)


def test_otlp_jsonl_generated_with_many_batches(tmp_path):
    batches = read_jsonl("otlp_openinference.jsonl")
    spans = [s for b in batches for s in b["resourceSpans"][0]["scopeSpans"][0]["spans"]]
    lines = []
    for k in range(40):  # 40 runs, each span its own export batch
        for s in spans:
            s = copy.deepcopy(s)
            s["traceId"] = f"{k:032x}"
            s["startTimeUnixNano"] = str(int(s["startTimeUnixNano"]) + k * 10**11)
            s["endTimeUnixNano"] = str(int(s["endTimeUnixNano"]) + k * 10**11)
            lines.append(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {}, "spans": [s]}]}]}))
    p = tmp_path / "many.jsonl"
    p.write_text("\n".join(lines) + "\n")
    got = load(p)
    assert len(got.logged.runs) == 40 and got.logged.trace_id == f"{0:032x}"
    assert [c.id for c in got.candidates] == IDS
    assert formats.load_file(p, trace_id=f"{7:032x}").logged.trace_id == f"{7:032x}"


def test_openllmetry_older_indexed_prompt_attributes(tmp_path):
    data = read_json("openllmetry_langchain.json")
    chat = next(s for s in data["resourceSpans"][0]["scopeSpans"][0]["spans"] if s["name"] == "ChatOpenAI.chat")
    attrs = {a["key"]: a["value"] for a in chat["attributes"]}
    system = json.loads(attrs.pop("gen_ai.system_instructions")["stringValue"])[0]["content"]
    user = json.loads(attrs.pop("gen_ai.input.messages")["stringValue"])[0]["parts"][0]["content"]
    answer = json.loads(attrs.pop("gen_ai.output.messages")["stringValue"])[0]["parts"][0]["content"]
    attrs.update({"gen_ai.prompt.0.role": {"stringValue": "system"}, "gen_ai.prompt.0.content": {"stringValue": system},
                  "gen_ai.prompt.1.role": {"stringValue": "user"}, "gen_ai.prompt.1.content": {"stringValue": user},
                  "gen_ai.completion.0.role": {"stringValue": "assistant"},
                  "gen_ai.completion.0.content": {"stringValue": answer}})
    chat["attributes"] = [{"key": k, "value": v} for k, v in attrs.items()]
    p = tmp_path / "old.json"
    p.write_text(json.dumps(data))
    got = load(p)
    _check_scenario(got, "otlp", None, [None, None, None], "gpt-4o-mini-2024-07-18", 152)
    assert got.logged.conventions == ("traceloop",)
    assert got.candidates[0].doc_id == "refund-policy" and got.candidates[0].title == "Refund timing"


def _phoenix_frame():
    """A span dataframe as Phoenix builds it: semantic-convention list columns, timestamps, the
    span id as both index and column."""
    import pandas as pd

    rows = []
    for s in read_json("phoenix_otlpv1.json")["data"]:
        attrs = {a["key"]: next(iter(a["value"].values())) for a in s["attributes"]}
        row = {"name": s["name"], "span_kind": attrs["openinference.span.kind"], "parent_id": s["parent_span_id"],
               "start_time": pd.Timestamp(s["start_time_unix_nano"], unit="ns", tz="UTC"),
               "end_time": pd.Timestamp(s["end_time_unix_nano"], unit="ns", tz="UTC"), "status_code": "OK",
               "status_message": "", "events": [], "context.span_id": s["span_id"], "context.trace_id": s["trace_id"]}
        lists: dict = {}
        for k, v in attrs.items():
            parts = k.split(".")
            if k.startswith(("retrieval.documents.", "llm.input_messages.", "llm.output_messages.")):
                n = next(i for i, p in enumerate(parts) if p.isdigit())
                col, idx, inner = ".".join(parts[:n]), int(parts[n]), ".".join(parts[n + 1:])
                if inner == "document.metadata":
                    v = json.loads(v)
                lists.setdefault(col, {}).setdefault(idx, {})[inner] = v
            else:
                row[f"attributes.{k}"] = v
        for col, items in lists.items():
            row[f"attributes.{col}"] = [items[i] for i in sorted(items)]
        rows.append(row)
    return pd.DataFrame.from_records(rows).set_index("context.span_id", drop=False)


def test_phoenix_parquet_export_reads_like_its_json():
    buf = io.BytesIO()
    _phoenix_frame().to_parquet(buf)
    raw = buf.getvalue()
    assert raw[:4] == b"PAR1" and len(raw) < 50_000
    got = load(raw, name="spans.parquet")
    _check_scenario(got, "phoenix-parquet", IDS, SCORES, "gpt-4o-mini", 152)
    assert got.candidates[0].title == "Refund timing"
    ref = load(path("phoenix_otlpv1.json"))
    assert got.candidates == ref.candidates and got.logged.spans == ref.logged.spans
    assert formats.load_file(raw, name="spans.parquet").candidates == got.candidates


def test_a_damaged_parquet_file_is_one_clear_line():
    with pytest.raises(InputError) as err:
        load(b"PAR1" + b"\x00" * 64, name="x.parquet")
    assert "not a readable parquet file" in str(err.value)


@pytest.mark.parametrize("orient", ["index", "split", "columns", "records"])
def test_pandas_dumps_of_a_span_dataframe_in_every_orient(tmp_path, orient):
    frame = _phoenix_frame()
    frame["start_time"] = frame["start_time"].astype(str)
    frame["end_time"] = frame["end_time"].astype(str)
    p = tmp_path / "spans.json"
    p.write_text(frame.drop(columns=["context.span_id"]).to_json(orient=orient) if orient != "records"
                 else frame.to_json(orient=orient))
    got = load(p)
    _check_scenario(got, "openinference", IDS, SCORES, "gpt-4o-mini", 152)


def test_spans_that_lost_their_trace_links_are_grouped_by_time(tmp_path):
    rows = read_jsonl("phoenix_multi.jsonl")
    ref = load(path("phoenix_multi.jsonl"))
    for r in rows:
        r["context"]["trace_id"] = r["context"]["span_id"] + "0" * 17
        r["parent_id"] = None
    p = tmp_path / "lost.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = load(p)
    assert any("every span is its own trace" in w and "into 2 runs by time" in w for w in got.warnings)
    assert len(got.logged.runs) == 2 and all(r["retrieval"] and r["llm"] for r in got.logged.runs)
    assert [c.id for c in got.candidates] == [c.id for c in ref.candidates]
    assert got.query == ref.query and got.logged.prompt_text == ref.logged.prompt_text
    other = formats.load_file(p, trace_id=got.logged.runs[1]["id"])
    assert other.query.startswith("Can the customer keep a cracked")


def test_a_streaming_run_takes_its_llm_call_from_a_sibling_trace_and_no_false_finding():
    got = load(path("llamaindex_streaming.json"))
    assert got.logged.trace_id == "4e5f60718293a4b5c6d7e8f901a2b3c4"
    assert got.logged.llm_span == "ChatCompletion"
    assert any("took the LLM 'ChatCompletion' span of trace 9f8e7d6c5b4a39281706f5e4d3c2b1a0" in w
               for w in got.warnings)
    _assert_no_false_findings(got)


def test_a_json_input_value_is_never_taken_as_the_prompt(tmp_path):
    spans = read_json("llamaindex_streaming.json")
    # the LlamaIndex side records an LLM span too, with only a JSON input.value (its call arguments)
    spans.append({"name": "OpenAI.astream_chat", "span_kind": "LLM", "parent_id": "cc22cc22cc22cc22",
                  "start_time": "2025-05-15T09:06:40.100+00:00", "end_time": "2025-05-15T09:06:40.120+00:00",
                  "context": {"trace_id": "4e5f60718293a4b5c6d7e8f901a2b3c4", "span_id": "ee44ee44ee44ee44"},
                  "attributes": {"openinference.span.kind": "LLM",
                                 "input.value": json.dumps({"args": [TEXTS[0][:40] + "..."], "kwargs": {}})}})
    p = tmp_path / "stream.json"
    p.write_text(json.dumps(spans))
    got = load(p)
    assert got.logged.llm_span == "ChatCompletion" and got.logged.prompt_text.startswith("system: ")
    _assert_no_false_findings(got)


def _assert_no_false_findings(got):
    trace = got.build()
    kinds = {f.kind for f in findings(trace, logged_prompt=got.logged.prompt_text,
                                      logged_prompt_tokens=got.logged.prompt_tokens)}
    assert not kinds & {"missing_from_logged_prompt", "cut_in_logged_prompt"}, kinds


@pytest.mark.parametrize("name", [*FAMILIES, "otlp_genai.json"])
def test_no_never_sent_or_cut_off_finding_when_the_prompt_holds_every_passage(name):
    _assert_no_false_findings(_load(name))


def test_langfuse_sdk_dump_unquotes_a_twice_encoded_trace_input(tmp_path):
    data = read_json("langfuse_sdk_dump.json")
    assert data["input"].startswith('"')
    retriever = next(o for o in data["observations"] if o["type"] == "RETRIEVER")
    del retriever["input"]
    p = tmp_path / "lf.json"
    p.write_text(json.dumps(data))
    got = load(p)
    assert got.query == Q and got.logged.query_from == "trace input"


def test_langfuse_llamaindex_blocks_are_read_as_the_prompt():
    got = load(path("langfuse_sdk_dump.json"))
    assert got.logged.prompt_text == ("system: " + SYSTEM + "\n\nuser: Sources:\n"
                                      + "\n".join(f"[{i}] {t}" for i, t in enumerate(TEXTS, 1))
                                      + f"\n\nQuestion: {Q}")
    assert [s["kind"] for s in got.logged.spans] == ["SPAN", "RETRIEVER", "GENERATION"]


@pytest.mark.parametrize("name,closest", [("bare_openinference_llm.json", "OpenInference span attributes"),
                                          ("bare_genai_chat.json", "OpenTelemetry GenAI span attributes")])
def test_a_bare_attribute_map_is_one_line_naming_the_closest_format(name, closest):
    with pytest.raises(InputError) as err:
        load(path(name))
    msg = str(err.value)
    assert "a single span's attributes, not a trace" in msg and closest in msg and "span kind LLM" in msg
    assert err.value.field == "retrieval.documents" and "candidates" not in msg and "\n" not in msg


def test_a_bare_retriever_attribute_map_reads_as_one_span(tmp_path):
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": Q}
    for i, (d, sc, t) in enumerate(zip(IDS, SCORES, TEXTS)):
        attrs.update({f"retrieval.documents.{i}.document.id": d, f"retrieval.documents.{i}.document.score": sc,
                      f"retrieval.documents.{i}.document.content": t})
    p = tmp_path / "attrs.json"
    p.write_text(json.dumps(attrs))
    got = load(p)
    assert [c.id for c in got.candidates] == IDS and got.query == Q and got.logged.prompt_text is None


def test_reranker_kept_documents_are_recorded_in_order():
    got = load(path("phoenix_nested.json"))
    assert got.logged.reranked == ("kb-207#1", "kb-207#3", "kb-207#2")
    assert got.logged.reranker_cut == ("kb-301#0",)
    back = trace_from_json(got.build().to_json())
    assert back.logged.reranked == got.logged.reranked and back.logged.runs == got.logged.runs


def test_every_family_is_registered():
    names = [f.name for f in formats.FAMILIES]
    assert names == ["langfuse", "otlp", "mlflow", "langsmith", "openinference", "span-attributes"]


# ---------------------------------------------------------------------------------------------
# the CLI: inspect, --run, --candidates
# ---------------------------------------------------------------------------------------------

def _cli(*args):
    from ctxcore.cli import run

    out = io.StringIO()
    code = run([str(a) for a in args], out=out)
    return code, out.getvalue()


def test_inspect_lists_runs_and_the_chosen_run():
    code, out = _cli("inspect", path("otlp_openinference.jsonl"))
    assert code == 0
    assert "format: otlp (attributes: openinference)" in out
    assert "* 1    5f0c3a2b1d4e6f708192a3b4c5d6e7f8     yes        yes  3     2025-05-15T09:06:40.000Z" in out
    assert "  2    0a1b2c3d4e5f60718293a4b5c6d7e8f9     no         yes  0" in out
    assert f"query: {Q}" in out and "model: gpt-4o-mini   prompt tokens: 152" in out
    assert "| system: " + SYSTEM in out and "kb-101                   0.91" in out
    code, out = _cli("inspect", path("phoenix_multi.jsonl"), "--run", 2, "--format", "json")
    rep = json.loads(out)
    assert code == 0 and rep["run"] == 2 and rep["query"].startswith("Can the customer keep a cracked")
    assert [r["run"] for r in rep["runs"]] == [1, 2] and rep["spans"][0]["name"] == "query"


def test_inspect_says_what_was_not_found_and_why(tmp_path):
    rows = [r for r in read_jsonl("phoenix_flat.jsonl") if r.get("span_kind") != "LLM"]
    p = tmp_path / "nollm.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = json.loads(_cli("inspect", p, "--format", "json")[1])
    assert any(m.startswith("logged prompt: no LLM call") for m in rep["not_found"])
    assert any(m.startswith("model:") for m in rep["not_found"])


def test_inspect_of_an_unsupported_shape_is_one_line_naming_the_closest_format(tmp_path):
    code, out = _cli("inspect", path("bare_genai_chat.json"))
    assert code == 2 and out.count("\n") == 1
    assert "closest format recognised: OpenTelemetry GenAI span attributes" in out and "retrieval.documents" in out
    p = tmp_path / "mlflow.json"
    p.write_text(json.dumps({"info": {"trace_id": "tr-1"}, "data": {}}))
    code, out = _cli("inspect", p)
    assert code == 2 and out.strip().endswith("closest format recognised: an MLflow trace, which lacks data.spans")
    code, out = _cli("inspect", path("otlp_genai.json"))
    assert code == 2 and "--candidates FILE" in out and "(detected format: otlp)" in out


def test_run_and_candidates_flags_reach_build_and_explain():
    code, out = _cli("build", path("phoenix_multi.jsonl"), "--run", 2, "--format", "json")
    assert code == 0 and json.loads(out)["query"].startswith("Can the customer keep a cracked")
    code, out = _cli("explain", path("otlp_genai.json"), "--candidates", CANDIDATES)
    assert code == 0 and "never sent" not in out and "cut off" not in out
    with pytest.raises(InputError) as err:
        _cli("build", path("otlp_openinference.jsonl"), "--run", 3)
    assert "run 3 is not in the file; it holds 2 runs" in str(err.value)


# ---------------------------------------------------------------------------------------------
# the app: the run picker for every family, "About this file", the companion uploader
# ---------------------------------------------------------------------------------------------

def _app(name, data=None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(os.path.join(os.path.dirname(HERE), "app.py"), default_timeout=90)
    at.run()
    at.file_uploader(key="dbg.upload").set_value((name, data if data is not None else open(path(name), "rb").read(),
                                                  "application/octet-stream"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _page_text(at):
    return " ".join(str(m.value) for m in at.markdown).replace("\\", "") + " ".join(str(c.value) for c in at.code)


def test_app_about_panel_and_run_picker_for_an_otlp_file():
    at = _app("otlp_openinference.jsonl")
    assert any(e.label == "About this file" for e in at.expander)
    text = _page_text(at)
    assert "Format: otlp" in text and f"Query: {Q}" in text and "system: " + SYSTEM in text
    picker = next(s for s in at.selectbox if s.label.startswith("This file logged 2 traces"))
    assert picker.value == "5f0c3a2b1d4e6f708192a3b4c5d6e7f8"


def test_app_reads_a_phoenix_parquet_upload():
    buf = io.BytesIO()
    _phoenix_frame().to_parquet(buf)
    at = _app("spans.parquet", buf.getvalue())
    loaded = at.session_state["ctx.loaded"]
    assert loaded.format == "phoenix-parquet" and [c.id for c in loaded.candidates] == IDS


def test_app_companion_uploader_gives_the_text_of_documents_logged_by_id():
    at = _app("otlp_genai.json")
    assert "--candidates FILE" in " ".join(str(e.value) for e in at.error).replace("\\", "")
    at.file_uploader(key="dbg.companion").set_value(("genai_candidates.json", open(CANDIDATES, "rb").read(),
                                                     "application/json"))
    at.run()
    assert not at.exception
    loaded = at.session_state["ctx.loaded"]
    assert loaded.format == "otlp" and [c.text for c in loaded.candidates] == TEXTS


# ---------------------------------------------------------------------------------------------
# more shapes of the same families, and size
# ---------------------------------------------------------------------------------------------

def test_langsmith_run_with_nested_child_runs(tmp_path):
    runs = read_json("langsmith_runs.json")
    root = {**runs[0], "child_runs": runs[1:]}
    p = tmp_path / "run.json"
    p.write_text(json.dumps(root))
    _check_scenario(load(p), *FAMILIES["langsmith_runs.json"])


def test_mlflow_traces_as_jsonl_pick_by_trace_id(tmp_path):
    one = read_json("mlflow_trace.json")
    two = copy.deepcopy(one)
    two["info"]["trace_id"] = "tr-00000000000000000000000000000002"
    for s in two["data"]["spans"]:
        s["trace_id"] = two["info"]["trace_id"]
        s["attributes"]["mlflow.traceRequestId"] = json.dumps(two["info"]["trace_id"])
        s["start_time_unix_nano"] += 10 ** 11
        s["end_time_unix_nano"] += 10 ** 11
    p = tmp_path / "traces.jsonl"
    p.write_text(json.dumps(one) + "\n" + json.dumps(two) + "\n")
    got = load(p)
    assert [r["id"] for r in got.logged.runs] == [one["info"]["trace_id"], two["info"]["trace_id"]]
    assert formats.load_run(p, run=2).logged.trace_id == two["info"]["trace_id"]


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_many_spans_without_trace_links_group_in_linear_time(tmp_path):
    rows = read_jsonl("phoenix_multi.jsonl")[:3]
    out = []
    for k in range(1500):  # 4,500 spans, each its own trace, 1,500 runs 10 s apart
        for r in rows:
            r = copy.deepcopy(r)
            r["context"] = {"trace_id": f"{k:06d}{r['context']['span_id']}", "span_id": f"{k:06d}{r['context']['span_id']}"}
            r["parent_id"] = None
            for key in ("start_time", "end_time"):
                r[key] = f"2024-05-{14 + k // 8640:02d}T{(k * 10 // 3600) % 24:02d}:{(k * 10 // 60) % 60:02d}:" \
                         f"{k * 10 % 60:02d}.{r[key][20:23]}+00:00"
            out.append(r)
    p = tmp_path / "big.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in out))
    got = load(p)
    assert len(got.logged.runs) == 1500 and all(r["retrieval"] and r["llm"] for r in got.logged.runs)


def test_openllmetry_llamaindex_retriever_nodes(tmp_path):
    """OpenLLMetry's LlamaIndex instrumentation: span ``VectorIndexRetriever.task``, input the bound
    arguments, output the NodeWithScore list each encoded by ``to_json()`` (see the fixtures README)."""
    data = read_json("openllmetry_langchain.json")
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    retr = next(s for s in spans if s["name"].startswith("vector_db_retrieve"))
    nodes = [json.dumps({"node": {"id_": i, "embedding": None, "metadata": {"title": f"t{n}"}, "text": t,
                                  "class_name": "TextNode"}, "score": sc, "class_name": "NodeWithScore"})
             for n, (i, sc, t) in enumerate(zip(IDS, SCORES, TEXTS))]
    retr["name"] = "VectorIndexRetriever.task"
    retr["attributes"] = [{"key": "traceloop.span.kind", "value": {"stringValue": "task"}},
                          {"key": "traceloop.entity.name", "value": {"stringValue": "VectorIndexRetriever.task"}},
                          {"key": "traceloop.entity.input",
                           "value": {"stringValue": json.dumps({"str_or_query_bundle": {"query_str": Q}})}},
                          {"key": "traceloop.entity.output", "value": {"stringValue": json.dumps(nodes)}}]
    p = tmp_path / "llamaindex.json"
    p.write_text(json.dumps(data))
    got = load(p)
    _check_scenario(got, "otlp", IDS, SCORES, "gpt-4o-mini-2024-07-18", 152)


def test_inspect_reads_a_saved_trace_that_kept_its_logged_request(tmp_path):
    got = load(path("mlflow_trace.json"))
    assert got.logged.conventions == ("mlflow",)
    p = tmp_path / "saved.json"
    p.write_text(got.build().to_json())
    code, out = _cli("inspect", p, "--format", "json")
    rep = json.loads(out)
    assert code == 0 and rep["format"] == "mlflow" and rep["query"] == Q and rep["runs"][0]["documents"] == 3


def test_a_document_the_reranker_cut_is_reported_as_such_not_as_never_sent():
    from ctxcore.analysis.diagnosis import diagnose

    got = load(path("phoenix_nested.json"))
    trace = got.build()
    found = diagnose(trace, logged_prompt=got.logged.prompt_text, answer=got.logged.answer).findings
    by_kind = {f.kind: f for f in found}
    assert by_kind["cut_by_reranker"].ids == ("kb-301#0",)
    assert "before context construction" in by_kind["cut_by_reranker"].title
    assert not any(f.kind == "missing_from_logged_prompt" and "kb-301#0" in f.ids for f in found)
