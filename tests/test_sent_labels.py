"""The labelling of passages in a sent prompt (issue #28 item 5): every common shape is read, the ids found in
order, the labelling named on Sent, and an answer's "[2]" checked against the passage so labelled.

The shapes, and where each comes from:
- bracket-number / bracket-s / document-number: ctxcore's own [S1] and the "[1]" / "Document 1:" forms read before.
- xml-doc: Anthropic's long-context tips ("wrap each document in <document> tags with <document_content> and
  <source> subtags", platform.claude.com/docs/en/build-with-claude/prompt-engineering/long-context-tips), and the
  shorter <doc id=...> form.
- source-number: "Source 1:", as in "[Source 2: report.pdf]"-citing RAG system prompts.
- passage-number: "Passage 1 - Title" on its own line, the passage under it.
- markdown-heading: "### Section" headings, one per passage.
- llamaindex-metadata: LlamaIndex's DEFAULT_TEXT_QA_PROMPT_TMPL ("Context information is below.\\n-----...\\n
  {context_str}\\n-----...\\nGiven the context information and not prior knowledge, answer the query.\\nQuery:
  {query_str}\\nAnswer: "), each node as get_content(metadata_mode=LLM) gives it: DEFAULT_TEXT_NODE_TMPL
  "{metadata_str}\\n\\n{content}" with DEFAULT_METADATA_TMPL "{key}: {value}" (llama_index schema), the nodes
  joined by a blank line.
- blank-line: LangChain's stuff-documents chain: DEFAULT_DOCUMENT_PROMPT "{page_content}" joined by
  DEFAULT_DOCUMENT_SEPARATOR "\\n\\n" (langchain chains/combine_documents/base), in the default stuff prompt
  ("Use the following pieces of context to answer the question at the end. ...\\n\\n{context}\\n\\nQuestion:
  {question}\\nHelpful Answer:").
- blank-line too: Haystack's default RAG template ("Given these documents, answer the question.\\nDocuments:\\n{% for doc in
  documents %}\\n    {{ doc.content }}\\n{% endfor %}\\nQuestion: {{question}}\\nAnswer:", Haystack's Get Started page):
  each document on its own indented line, a blank line between two.
- line: passages one per line.
- space: unlabelled passages joined by one space.
"""

import pytest

from ctxcore import Candidate, Config, build
from ctxcore.analysis.answer import check_answer
from ctxcore.analysis.sent import reconstruct

A = "Refunds are issued within 14 days of receiving the returned item at our warehouse."
B = "Return shipping costs a flat fee of 49 EUR, deducted from the refund amount."
C = "Damaged items must be reported within 48 hours of delivery with a photo of the damage."
IDS = ["kb-refund", "kb-shipping", "kb-damage"]
Q = "How much does return shipping cost?"


def _trace():
    return build([Candidate("kb-refund", A, 0.9), Candidate("kb-shipping", B, 0.8), Candidate("kb-damage", C, 0.7)],
                 Q, Config(budget=2000))


LLAMA = ("Context information is below.\n---------------------\nfile_path: docs/refunds.md\n\n" + A +
         "\n\nfile_path: docs/shipping.md\n\n" + B + "\n\nfile_path: docs/damage.md\n\n" + C +
         "\n---------------------\nGiven the context information and not prior knowledge, answer the query.\n"
         f"Query: {Q}\nAnswer: ")
LANGCHAIN = ("Use the following pieces of context to answer the question at the end. If you don't know the answer, "
             "just say that you don't know, don't try to make up an answer.\n\n" + "\n\n".join((A, B, C)) +
             f"\n\nQuestion: {Q}\nHelpful Answer:")
HAYSTACK = ("Given these documents, answer the question.\nDocuments:\n" + "".join(f"\n    {t}\n" for t in (A, B, C))
            + f"\nQuestion: {Q}\nAnswer:")
ANTHROPIC = ("<documents>\n" + "".join(
    f'<document index="{i}">\n<source>{src}</source>\n<document_content>\n{t}\n</document_content>\n</document>\n'
    for i, (src, t) in enumerate((("refunds.pdf", A), ("shipping.pdf", B), ("damage.pdf", C)), 1))
    + f"</documents>\n\n{Q}")

PROMPTS = {
    "bracket-number": ("Context:\n[1] " + A + "\n[2] " + B + "\n[3] " + C + f"\n\nQuestion: {Q}",
                       ["[1]", "[2]", "[3]"]),
    "bracket-s": ("[S1] " + A + "\n[S2] " + B + "\n[S3] " + C + f"\n\n{Q}", ["[S1]", "[S2]", "[S3]"]),
    "document-number": ("Document 1: " + A + "\nDocument 2: " + B + "\nDocument 3: " + C + f"\n\n{Q}",
                        ["Document 1", "Document 2", "Document 3"]),
    "xml-doc": (ANTHROPIC, ['<document index="1">', '<document index="2">', '<document index="3">']),
    "xml-doc ids": ("".join(f"<doc id={i}>{t}</doc>\n" for i, t in enumerate((A, B, C), 1)) + Q,
                    ['<document id="1">', '<document id="2">', '<document id="3">']),
    "source-number": ("Source 1:\n" + A + "\n\nSource 2:\n" + B + "\n\nSource 3:\n" + C + f"\n\n{Q}",
                      ["Source 1", "Source 2", "Source 3"]),
    "passage-number": ("Passage 1 - Refund timing\n" + A + "\n\nPassage 2 - Return shipping\n" + B +
                       "\n\nPassage 3 - Damaged items\n" + C + f"\n\n{Q}", ["Passage 1", "Passage 2", "Passage 3"]),
    "markdown-heading": ("## Sources\n\n### Refund timing\n" + A + "\n\n### Return shipping\n" + B +
                         "\n\n### Damaged items\n" + C + f"\n\n## Question\n{Q}",
                         ["### Refund timing", "### Return shipping", "### Damaged items"]),
    "llamaindex-metadata": (LLAMA, ["file_path: docs/refunds.md", "file_path: docs/shipping.md",
                                    "file_path: docs/damage.md"]),
    "blank-line": (LANGCHAIN, [None, None, None]),
    "blank-line haystack": (HAYSTACK, [None, None, None]),  # "\n    A\n" + "\n    B\n": a blank line between
    "line": ("\n".join((A, B, C)) + f"\n{Q}", [None, None, None]),
    "space": (" ".join((A, B, C)) + f" {Q}", [None, None, None]),
}


@pytest.mark.parametrize("name", PROMPTS)
def test_each_labelling_is_read(name):
    prompt, labels = PROMPTS[name]
    sent = reconstruct(_trace(), prompt)
    assert [p.id for p in sent.passages] == IDS
    assert [p.label for p in sent.passages] == labels
    assert sent.labelling == name.split()[0]


@pytest.mark.parametrize("name", PROMPTS)
def test_an_answer_citing_the_second_passage_is_checked_against_it(name):
    # the old failure: "the answer cites [2], which is not a label in the prompt; the prompt has labels (none)"
    prompt, _ = PROMPTS[name]
    cite = "[S2]" if name == "bracket-s" else "[2]"
    checks = check_answer(_trace(), f"Return shipping costs a flat fee of 49 EUR {cite}.", prompt)
    assert [(c.claim, c.verdict, c.ids) for c in checks if c.kind == "citation"] == [(cite, "ok", ("kb-shipping",))]


def test_a_citation_past_the_last_unlabelled_passage_names_the_places():
    checks = check_answer(_trace(), "Return shipping costs a flat fee of 49 EUR [4].", LANGCHAIN)
    assert [(c.verdict, c.detail) for c in checks if c.kind == "citation"] == [
        ("unknown_label", "the prompt has labels 1, 2, 3")]


def test_a_number_ending_the_previous_passage_is_no_label():
    # "... within 2." then a blank line: the "2." is the end of a passage, not a numbered-list label
    a = "Refunds are issued within 14 days, or for gift cards within 2."
    t = build([Candidate("a", a, 0.9), Candidate("b", B, 0.8)], Q, Config(budget=2000))
    sent = reconstruct(t, a + "\n\n" + B + f"\n\n{Q}")
    assert [(p.id, p.label) for p in sent.passages] == [("a", None), ("b", None)]
    assert sent.labelling == "blank-line"


def test_the_labelling_is_serialised_with_the_trace():
    from ctxcore.records import Sent
    sent = reconstruct(_trace(), LLAMA)
    assert Sent(**{**sent.__dict__}).labelling == "llamaindex-metadata"
    assert "labelling" in {f for f in sent.__dataclass_fields__}
