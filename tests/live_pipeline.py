"""An instrumented RAG pipeline for the live tests: a LangChain retriever, prompt and fake chat model traced by
the OpenInference LangChain instrumentor, exported by the real OpenTelemetry SDK exporters over OTLP/HTTP."""

from __future__ import annotations

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnablePassthrough
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.json.http.trace_exporter import OTLPSpanExporter as JsonExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as ProtobufExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

EXPORTERS = {"protobuf": ProtobufExporter, "json": JsonExporter}
QUERY = "How long do refunds take?"
ANSWER = "I could not find how long refunds take."
# the decisive passage is retrieved third; the pipeline sends the top two only
DOCS = [("shipping-1", "Standard shipping takes 3 to 5 business days within the EU.", 0.82),
        ("returns-2", "Items can be returned within 30 days of delivery if unused.", 0.74),
        ("refunds-3", "Refunds are processed within five business days of receiving the return.", 0.61)]
SENT = 2


class Retriever(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        return [Document(page_content=text, metadata={"score": score}, id=doc_id) for doc_id, text, score in DOCS]


def _context(docs) -> str:
    return "\n\n".join(d.page_content for d in docs[:SENT])


def send(url: str, protocol: str = "protobuf", service: str = "support-bot", query: str = QUERY) -> str:
    """Run the pipeline once, its spans exported to ``url`` with the real SDK exporter; the model's answer."""
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(EXPORTERS[protocol](endpoint=url)))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        prompt = ChatPromptTemplate.from_messages([("system", "Answer only from the context.\n\n{context}"),
                                                   ("human", "{question}")])
        chain = ({"context": Retriever() | _context, "question": RunnablePassthrough()} | prompt
                 | FakeListChatModel(responses=[ANSWER]) | StrOutputParser())
        return chain.invoke(query)
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
