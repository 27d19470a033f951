"""Small deterministic RAG pipelines, instrumented by the real tracing instrumentors (issue #31 item 1).

Each ``run_<framework>(exporter_setup)`` runs one CORRECT and one BROKEN request of the same support
bot through the framework's own retriever, prompt and (fake) chat model, inside
``with exporter_setup():`` -- the caller's context manager that instruments the framework and
exports what the instrumentation records (to a file, or to a tracing server). The model is fake;
the framework, the instrumentor and the exporter are the real ones. The scenarios are in
:mod:`tests.pipelines.scenario`."""
