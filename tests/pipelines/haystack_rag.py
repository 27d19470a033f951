"""The support bot as a Haystack pipeline: an InMemoryDocumentStore holding the knowledge base, a
retriever component that returns the run's documents from it with their scores (fixed, so the
broken runs break the same way every time), a top-k filter component, a ChatPromptBuilder and a
fake chat generator that answers from a fixed text with a model name in its reply's meta."""

from __future__ import annotations

from haystack import Document, Pipeline, component
from haystack.components.builders import ChatPromptBuilder
from haystack.dataclasses import ChatMessage
from haystack.document_stores.in_memory import InMemoryDocumentStore

from .scenario import COPIES, CORRECT, MODEL, STALE, SYSTEM, Run

RUNS = (CORRECT, COPIES, STALE)

TEMPLATE = [ChatMessage.from_system(SYSTEM),
            ChatMessage.from_user("Context:\n{% for d in documents %}[{{ loop.index }}] {{ d.content }}"
                                  "{% if not loop.last %}\n\n{% endif %}{% endfor %}\n\nQuestion: {{ query }}")]


@component
class FixedRetriever:
    """Reads the run's documents from the store, in retrieval order, with the run's scores."""

    def __init__(self, store: InMemoryDocumentStore, scores: dict):
        self.store, self.scores = store, scores

    @component.output_types(documents=list[Document])
    def run(self, query: str) -> dict:
        by_id = {d.id: d for d in self.store.filter_documents()}
        order = sorted(self.scores, key=lambda i: -self.scores[i])
        return {"documents": [Document(id=i, content=by_id[i].content, meta=by_id[i].meta, score=self.scores[i])
                              for i in order]}


@component
class TopK:
    """The pipeline's post-retrieval step: the k best by score."""

    def __init__(self, k: int):
        self.k = k

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict:
        return {"documents": sorted(documents, key=lambda d: -d.score)[:self.k]}


@component
class FakeChatGenerator:
    """Answers ``answer`` whatever it is asked, naming the model in the reply's meta as real generators do."""

    def __init__(self, answer: str):
        self.answer = answer

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict:
        return {"replies": [ChatMessage.from_assistant(self.answer, meta={"model": MODEL})]}


def pipeline(run: Run) -> Pipeline:
    store = InMemoryDocumentStore()
    store.write_documents([Document(id=d.id, content=d.text, meta={"source": f"kb/{d.id}.md", **dict(d.meta)})
                           for d in run.retrieved])
    p = Pipeline()
    p.add_component("retriever", FixedRetriever(store, {d.id: d.score for d in run.retrieved}))
    p.add_component("top_k", TopK(run.top_k))
    p.add_component("prompt_builder", ChatPromptBuilder(template=TEMPLATE, required_variables=["documents", "query"]))
    p.add_component("llm", FakeChatGenerator(run.answer))
    p.connect("retriever.documents", "top_k.documents")
    p.connect("top_k.documents", "prompt_builder.documents")
    p.connect("prompt_builder.prompt", "llm.messages")
    return p


def run_haystack(exporter_setup) -> None:
    """Log the correct, the copies and the stale request, one trace each."""
    with exporter_setup():
        for run in RUNS:
            pipeline(run).run({"retriever": {"query": run.query}, "prompt_builder": {"query": run.query}})
