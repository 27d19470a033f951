"""The bugs the guard tests of issue #29 were checked against (tests/test_guard_*.py), planted one at a time.

    python bench/mutation_plants.py            # every plant: CAUGHT or MISSED, and STALE when its line moved
    python bench/mutation_plants.py replay     # the plants whose name holds "replay"

Each plant is (name, module, the line as it stands, the plausible wrong one, the guard files that must catch it). The
tracked files are copied to a scratch folder; each plant is written there, the guard files run (-x), the module
restored. The repository is never touched. About a minute on two cores.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DST = os.path.join(tempfile.gettempdir(), "ctxcore-guard-plants")
PLANTS = [
 ("sent: cut passage counted whole", "ctxcore/analysis/sent.py",
  "sent_tokens = tok.count(c.text) if share >= 1 else max(1, round(tok.count(c.text) * share))",
  "sent_tokens = tok.count(c.text)", ["tests/test_guard_sent.py", "tests/test_guard_diagnosis.py"]),
 ("sent: over window at equality", "ctxcore/analysis/sent.py", "total, limit, total > limit,", "total, limit, total >= limit,",
  ["tests/test_guard_sent.py"]),
 ("sent: near copy strictly above threshold", "ctxcore/analysis/sent.py", "            if s >= threshold:\n                dup, sim = e.id, round(s, 3)\n                break\n        earlier.append(c)\n        sent_tokens",
  "            if s > threshold:\n                dup, sim = e.id, round(s, 3)\n                break\n        earlier.append(c)\n        sent_tokens", ["tests/test_guard_sent.py"]),
 ("sent: DEFAULT_NEAR 0.9", "ctxcore/analysis/sent.py", "DEFAULT_NEAR = 0.8", "DEFAULT_NEAR = 0.9", ["tests/test_guard_sent.py"]),
 ("sent: stem >=", "ctxcore/analysis/sent.py", "if len(w) > len(suffix) + 3", "if len(w) >= len(suffix) + 3", ["tests/test_guard_sent.py"]),
 ("sent: reworded question 0.7", "ctxcore/analysis/sent.py", ">= 0.8 * len(qw)", ">= 0.7 * len(qw)", ["tests/test_guard_sent.py"]),
 ("sent: blank line = any newline", "ctxcore/analysis/sent.py", 'gap.count("\\n") >= 2', 'gap.count("\\n") >= 1', ["tests/test_guard_sent.py"]),
 ("runs: reach = last end", "ctxcore/io/formats/runs.py", "reach = max(reach, end if end is not None else start)",
  "reach = end if end is not None else start", ["tests/test_guard_formats.py"]),
 ("runs: gap >=", "ctxcore/io/formats/runs.py", "start > reach + gap", "start >= reach + gap", ["tests/test_guard_formats.py"]),
 ("runs: GAP 20 s", "ctxcore/io/formats/runs.py", "GAP_SECONDS = 2.0", "GAP_SECONDS = 20.0", ["tests/test_guard_formats.py"]),
 ("runs: no time sort", "ctxcore/io/formats/runs.py", "    timed.sort(key=lambda x: (x[0], x[2].index))\n", "", ["tests/test_guard_formats.py"]),
 ("formats: OTLP ids decoded leniently", "ctxcore/io/formats/otlp.py", "raw = base64.b64decode(value, validate=True)",
  "raw = base64.b64decode(value)", ["tests/test_guard_formats.py"]),
 ("formats: companion text replaces a document's own", "ctxcore/io/formats/family.py",
  'bare = [d for d in docs if d.get("content") is None or (isinstance(d.get("content"), str)\n'
  '                                                            and not d["content"].strip())]',
  "bare = list(docs)", ["tests/test_guard_formats.py"]),
 ("formats: a later run read without the companion texts", "ctxcore/io/formats/shapes.py",
  "load_file(raw, trace_id=wanted, name=source, texts=texts)", "load_file(raw, trace_id=wanted, name=source)",
  ["tests/test_guard_formats.py"]),
 ("formats: OTLP's old instrumentationLibrarySpans dropped", "ctxcore/io/formats/otlp.py",
  ' or rs.get("instrumentationLibrarySpans")', "", ["tests/test_guard_formats.py"]),
 ("generation: tie by place only", "ctxcore/io/formats/messages.py",
  "final is not None and squash(answer_of(c) or \"\") == final, place(c)", "place(c)", ["tests/test_guard_formats.py"]),
 ("replay: regressions per lost passage", "ctxcore/replay/report.py", "self.regression_count += 1",
  "self.regression_count += len(row[\"lost_ids\"])", ["tests/test_guard_replay.py"]),
 ("replay: move runs per candidate", "ctxcore/replay/report.py", "self.move_runs.update(pairs.keys())",
  "self.move_runs.update(pairs)", ["tests/test_guard_replay.py"]),
 ("replay: percentile floor", "ctxcore/replay/report.py", "math.ceil(p / 100 * n)", "math.floor(p / 100 * n)", ["tests/test_guard_replay.py"]),
 ("casestore: 2100 accepted", "ctxui/casestore.py", "not lo <= value < hi", "not lo <= value <= hi", ["tests/test_guard_casestore.py"]),
 ("casestore: limit >=", "ctxui/casestore.py", "if len(value) > limit:", "if len(value) >= limit:", ["tests/test_guard_casestore.py"]),
 ("inspect: cut <", "ctxcore/io/inspect.py", "len(text) <= n else", "len(text) < n else", ["tests/test_guard_inspect.py"]),
 ("diagnosis: buried 1 of 4", "ctxcore/analysis/diagnosis.py", "if not edge < best.position <= n - edge:",
  "if not edge <= best.position <= n - edge:", ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: buried 3 of 4 missed", "ctxcore/analysis/diagnosis.py", "if not edge < best.position <= n - edge:",
  "if not edge < best.position < n - edge:", ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: buried before crowd-out", "ctxcore/analysis/diagnosis.py",
  '"duplicates_crowd_out", "paraphrased_duplicates", "threshold_cut", "per_document_cap", "buried_in_middle",',
  '"buried_in_middle", "duplicates_crowd_out", "paraphrased_duplicates", "threshold_cut", "per_document_cap",',
  ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: second cause folded as a note", "ctxcore/analysis/diagnosis.py",
  'for f in causes[1:] if f.kind == "not_sent"] + notes', 'for f in causes[1:] if f.kind in ("not_sent", "buried_in_middle")] + notes',
  ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: reach verifies any fate", "ctxcore/analysis/findings.py",
  'if d.fate == "kept" and (not edge or d.position in (1, len(t.kept()))):', 'if True:',
  ["tests/test_guard_diagnosis.py", "tests/test_guard_findings.py"]),
 ("diagnosis: UNRELATED <=", "ctxcore/analysis/diagnosis.py", "closest < UNRELATED or", "closest <= UNRELATED or", ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: LOW_SCORE <=", "ctxcore/analysis/diagnosis.py", "max(scores) < LOW_SCORE", "max(scores) <= LOW_SCORE", ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: 2*UNRELATED <=", "ctxcore/analysis/diagnosis.py", "closest < 2 * UNRELATED", "closest <= 2 * UNRELATED", ["tests/test_guard_diagnosis.py"]),
 ("replay: order-only change unchanged", "ctxcore/replay/run.py", '"changed": bool(moved) or reordered,', '"changed": bool(moved),',
  ["tests/test_guard_replay.py"]),
 ("replay: unreadable counted as a run", "ctxcore/replay/report.py", "            self.unreadable_count += 1\n",
  "            self.unreadable_count += 1\n            self.runs += 1\n", ["tests/test_guard_replay.py"]),
 ("diagnosis: crowd share over prompt tokens", "ctxcore/analysis/diagnosis.py", "share = tokens / ctx.sent.evidence_tokens",
  "share = tokens / ctx.sent.prompt_tokens", ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: buried position from 0", "ctxcore/analysis/diagnosis.py", "f\"{best.position} of {n}), where models",
  "f\"{best.position - 1} of {n}), where models", ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: RELEVANT >", "ctxcore/analysis/diagnosis.py", "overlap(ctx.by_id[cid].text, ctx.q) >= RELEVANT))",
  "overlap(ctx.by_id[cid].text, ctx.q) > RELEVANT))", ["tests/test_guard_diagnosis.py"]),
 ("diagnosis: RELEVANT 0.1", "ctxcore/analysis/findings.py", "RELEVANT = 0.25 ", "RELEVANT = 0.1 ", ["tests/test_guard_diagnosis.py"]),
 ("sent: versions read as copies", "ctxcore/analysis/sent.py",
  "    return c.id in newest and newest.get(e.id) == newest[c.id] and version_key(c) != version_key(e)",
  "    return False", ["tests/test_guard_sent.py"]),
 ("sent: newest superseded by itself", "ctxcore/analysis/sent.py", "version_key(c) >= top[0]", "version_key(c) > top[0]",
  ["tests/test_guard_sent.py"]),
 ("sent: abstain read with the rule pattern", "ctxcore/analysis/sent.py", "bool(_ABSTAIN.search(prompt))",
  "bool(_RULE.search(prompt))", ["tests/test_guard_sent.py"]),
 ("sent: of_build not-sent inverted", "ctxcore/analysis/sent.py",
  "tuple(c.id for c in trace.candidates if c.id not in kept_ids)", "tuple(c.id for c in trace.candidates if c.id in kept_ids)",
  ["tests/test_guard_sent.py"]),
 ("sent: attach skips a logged prompt", "ctxcore/analysis/sent.py",
  "if logged is None or not logged.prompt_text or logged.sent is not None:",
  "if logged is None or logged.prompt_text or logged.sent is not None:", ["tests/test_guard_sent.py"]),
 # the format readers' hand-valued tables (tests/test_table_*.py, issue #29's ninth run)
 ("tables: an answer's fields read in another order", "ctxcore/io/formats/messages.py",
  'for key in ("content", "answer", "output", "text", "response", "result", "completion"):',
  'for key in ("answer", "content", "output", "text", "response", "result", "completion"):',
  ["tests/test_table_messages.py"]),
 ("tables: the generation ignores the run's own answer", "ctxcore/io/formats/messages.py",
  'final is not None and squash(answer_of(c) or "") == final, place(c)), default=None)',
  'place(c)), default=None)', ["tests/test_table_messages.py"]),
 ("tables: milliseconds from 1e11 exclusive", "ctxcore/io/formats/values.py", "if abs(t) >= 1e11:", "if abs(t) > 1e11:",
  ["tests/test_table_values.py"]),
 ("tables: a naive datetime in the machine's zone", "ctxcore/io/formats/values.py",
  "return (v if v.tzinfo else v.replace(tzinfo=timezone.utc)).timestamp()", "return v.timestamp()",
  ["tests/test_table_values.py"]),
 ("tables: repeated document ids not told apart", "ctxcore/io/formats/documents.py",
  'base = r if seen[r] == 1 else f"{r}#{seen[r]}"', "base = r", ["tests/test_table_documents.py"]),
 ("tables: GenAI system instructions dropped", "ctxcore/io/formats/genai.py",
  'msgs = [{"message": {"role": "system", "content": system}}] + msgs', "msgs = msgs", ["tests/test_table_genai.py"]),
 ("tables: a span's UNKNOWN kind wins", "ctxcore/io/formats/spans.py",
  'kind = first(*(k for k in (top.get("span_kind"), top.get("spanKind")) if k != "UNKNOWN"),',
  'kind = first(*(k for k in (top.get("span_kind"), top.get("spanKind"))),', ["tests/test_table_spans.py"]),
 ("tables: a Langfuse observation needs its trace id", "ctxcore/io/formats/langfuse.py",
  '("traceId" in obj or "parentObservationId" in obj or "startTime" in obj)', '("traceId" in obj)',
  ["tests/test_table_langfuse.py"]),
 ("tables: an answer's role prefix kept", "ctxcore/io/formats/openinference.py",
  "return text[len(prefix):].strip()", "return text", ["tests/test_table_openinference.py"]),
 ("tables: a LangSmith generation's message ignored", "ctxcore/io/formats/langsmith.py",
  'if text is None and g.get("message") is not None:', "if False:", ["tests/test_table_langsmith_mlflow.py"]),
]
if os.path.exists(DST):
    shutil.rmtree(DST)
files = subprocess.run(["git", "ls-files"], cwd=SRC, capture_output=True, text=True).stdout.split()
for f in files:
    os.makedirs(os.path.dirname(os.path.join(DST, f)) or DST, exist_ok=True)
    shutil.copy2(os.path.join(SRC, f), os.path.join(DST, f))
only = sys.argv[1:]
caught = 0
# a plant that catches nothing is MISSED; pytest's exit code 1 is "a test failed"
for name, path, old, new, tests in PLANTS:
    if only and not any(o in name for o in only):
        continue
    full = os.path.join(DST, path)
    text = open(full).read()
    if text.count(old) != 1:
        print(f"STALE  {name}: the line stands {text.count(old)} times"); continue
    open(full, "w").write(text.replace(old, new))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests], cwd=DST,
                       capture_output=True, text=True)
    open(full, "w").write(text)
    ok = r.returncode == 1
    caught += ok
    print(("CAUGHT " if ok else "MISSED ") + name + "  " + r.stdout.strip().splitlines()[-1])
print(f"{caught} caught")
