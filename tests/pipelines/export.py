"""Exporter setups for the pipelines: the real OpenTelemetry SDK with an in-memory exporter whose
spans are written as OTLP JSON with opentelemetry's own encoder, or MLflow's autolog."""

from __future__ import annotations

import contextlib
import json

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def otlp_json(spans) -> dict:
    """One ExportTraceServiceRequest as protobuf's JSON mapping (what an OTLP/JSON client sends)."""
    return MessageToDict(encode_spans(spans))


@contextlib.contextmanager
def otlp_file(path: str, instrumentor):
    """Instrument with ``instrumentor`` on a fresh TracerProvider; on exit write its spans to ``path``."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        instrumentor.uninstrument()
        provider.shutdown()
        with open(path, "w", encoding="utf-8") as f:
            json.dump(otlp_json(exporter.get_finished_spans()), f, indent=1)


@contextlib.contextmanager
def mlflow_file(path: str, workdir: str):
    """MLflow's LangChain autolog into a local sqlite tracking store in ``workdir`` (artifacts there too, not
    in the current directory); on exit write every trace's ``to_json()``, one a line, in logged order."""
    import mlflow  # noqa: PLC0415 - a third-party module (MLflow), imported only by the tests that use it

    mlflow.set_tracking_uri(f"sqlite:///{workdir}/mlflow.db")
    mlflow.set_experiment(experiment_id=mlflow.create_experiment("support-bot", artifact_location=f"{workdir}/artifacts"))
    mlflow.langchain.autolog()
    try:
        yield
    finally:
        mlflow.langchain.autolog(disable=True)
        mlflow.flush_trace_async_logging()
        traces = mlflow.search_traces(return_type="list", order_by=["timestamp_ms ASC"])
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(json.dumps(json.loads(t.to_json())) + "\n" for t in traces))
