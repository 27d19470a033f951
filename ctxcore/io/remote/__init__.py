"""Readers of traces that live in a tracing tool: importing this package registers one per tool with
:mod:`ctxcore.io.sources` (the CLI and the app import it; the engine alone does not need it).

Each reader fetches one trace with the tool's own client, imported only when a fetch runs, and hands back
the bytes of the export the format readers already take, so a fetched trace imports as a downloaded file."""

from . import langfuse, langsmith, mlflow, phoenix  # noqa: F401 - each registers its reader

from .common import Credentials, fetch_with  # noqa: F401
