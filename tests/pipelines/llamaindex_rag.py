"""The support bot as a LlamaIndex query engine: a retriever returning fixed scored nodes, a top-k node
postprocessor (the filter step), the engine's own response synthesizer with a chat prompt, and a fake
LLM that answers from a fixed text. The engine's ``retrieve`` span wraps the retriever's: the
nested-retriever shape."""

from __future__ import annotations

from typing import Any, Optional

from llama_index.core import QueryBundle
from llama_index.core.base.llms.types import CompletionResponse, CompletionResponseGen, LLMMetadata
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.custom import CustomLLM
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.prompts import ChatPromptTemplate
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.response_synthesizers import get_response_synthesizer
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, TextNode

from .scenario import COPIES, CORRECT, MODEL, STALE, SYSTEM, Run

RUNS = (CORRECT, COPIES, STALE)


class FixedRetriever(BaseRetriever):
    """Returns the run's nodes in retrieval order, as a vector index would for this question."""

    def __init__(self, run: Run):
        self._run = run
        super().__init__()

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=d.id, text=d.text, metadata=dict(d.meta),
                                            excluded_llm_metadata_keys=[k for k, _ in d.meta]), score=d.score)
                for d in self._run.retrieved]


class TopK(BaseNodePostprocessor):
    """The pipeline's post-retrieval step: the k best by score."""

    k: int = 4

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: Optional[QueryBundle] = None):
        return sorted(nodes, key=lambda n: -(n.score or 0))[:self.k]


class FixedLLM(CustomLLM):
    """A fake chat LLM with a model name that always answers ``answer``."""

    answer: str = ""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name=MODEL, is_chat_model=True)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self.answer)

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        yield CompletionResponse(text=self.answer, delta=self.answer)


PROMPT = ChatPromptTemplate([ChatMessage(role=MessageRole.SYSTEM, content=SYSTEM),
                             ChatMessage(role=MessageRole.USER,
                                         content="Context:\n{context_str}\n\nQuestion: {query_str}")])


def engine(run: Run) -> RetrieverQueryEngine:
    llm = FixedLLM(answer=run.answer)
    synth = get_response_synthesizer(llm=llm, response_mode="compact", text_qa_template=PROMPT)
    return RetrieverQueryEngine(FixedRetriever(run), response_synthesizer=synth,
                                node_postprocessors=[TopK(k=run.top_k)])


def run_llamaindex(exporter_setup) -> None:
    """Log the correct, the copies and the stale request, one trace each."""
    with exporter_setup():
        for run in RUNS:
            engine(run).query(run.query)
