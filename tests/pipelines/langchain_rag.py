"""The support bot as a LangChain (langchain-core) chain: a retriever returning fixed Documents with
id/score/source in their metadata, a ``select_top_docs`` RunnableLambda (the filter step), a
ChatPromptTemplate and a fake chat model that answers from a fixed list."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda, RunnablePassthrough

from .scenario import COPIES, CORRECT, MODEL, STALE, SYSTEM, Run, context

RUNS = (CORRECT, COPIES, STALE)


class FixedRetriever(BaseRetriever):
    """Returns the run's documents in retrieval order, as a vector store would for this question."""

    run: Any

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document(page_content=d.text, metadata=d.metadata()) for d in self.run.retrieved]


class FakeChat(FakeListChatModel):
    """langchain-core's fake chat model with a model name, as a real provider's model logs one."""

    model_name: str = MODEL

    @property
    def _llm_type(self) -> str:
        return "fake-chat"


def select_top_docs(docs: list[Document], k: int) -> list[Document]:
    """The pipeline's post-retrieval step: the k best by the score kept in the metadata."""
    return sorted(docs, key=lambda d: -d.metadata["score"])[:k]


def chain(run: Run):
    prompt = ChatPromptTemplate.from_messages([("system", SYSTEM),
                                               ("user", "Context:\n{context}\n\nQuestion: {question}")])
    top = RunnableLambda(lambda docs: select_top_docs(docs, run.top_k)).with_config(run_name="select_top_docs")
    fill = RunnableLambda(lambda docs: context([_Passage(d.page_content) for d in docs])).with_config(
        run_name="format_docs")
    return ({"context": FixedRetriever(run=run) | top | fill, "question": RunnablePassthrough()}
            | prompt | FakeChat(responses=[run.answer]) | StrOutputParser())


class _Passage:
    def __init__(self, text):
        self.text = text


def run_langchain(exporter_setup) -> None:
    """Log the correct, the copies and the stale request, one trace each."""
    with exporter_setup():
        for run in RUNS:
            chain(run).invoke(run.query)
