"""MLflow: a trace from a running tracking server, with ``MlflowClient.get_trace`` (the ``mlflow`` package).

Source: ``mlflow:http://HOST:5000#tr-...``, or the trace's URL as the MLflow UI shows it:
``http://HOST:5000/#/experiments/1/traces?selectedEvaluationId=tr-...`` (the traces tab with one open) or
``http://HOST:5000/#/experiments/1/traces/tr-...``. The export is ``Trace.to_json()`` (MLflow trace JSON).
Credentials: ``MLFLOW_TRACKING_TOKEN``, or ``MLFLOW_TRACKING_USERNAME`` and ``MLFLOW_TRACKING_PASSWORD``.
"""

from __future__ import annotations

import os
import re
import threading
from contextlib import contextmanager
from typing import Iterator, Optional

from ...errors import InputError
from ..limits import FETCH_TIMEOUT
from ..sources import Reader, Source, register
from .common import Credentials, base_url, client, export, refused, unreachable

KEYS = ("MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD")
_URL = re.compile(r"^(https?://[^\s#?]+?)/?(?:\?[^#\s]*)?#/experiments/[^/\s?]+/traces"
                  r"(?:/(tr-[0-9A-Za-z_-]+)|\?\S*?\b(?:selectedEvaluationId|traceId)=(tr-[0-9A-Za-z_-]+))")
_STATUS = re.compile(r"error code (\d{3})\b")
_ENV = threading.Lock()  # the client reads its credentials and timeouts from the environment: one fetch at a time


def recognise(text: str) -> Optional[Source]:
    """A trace's URL as copied from the MLflow UI.

    >>> recognise("http://127.0.0.1:5000/#/experiments/1/traces?selectedEvaluationId=tr-9f2c&traceId=tr-9f2c")
    Source(scheme='mlflow', location='http://127.0.0.1:5000', trace='tr-9f2c')
    >>> recognise("http://h:5000/#/experiments/0/traces/tr-1a")
    Source(scheme='mlflow', location='http://h:5000', trace='tr-1a')
    """
    m = _URL.match(text.strip())
    return Source("mlflow", m[1], m[2] or m[3]) if m else None


@contextmanager
def _environ(values: dict) -> Iterator[None]:
    """The environment with ``values`` set for the length of one fetch, then as it was."""
    with _ENV:
        before = {k: os.environ.get(k) for k in values}
        os.environ.update({k: v for k, v in values.items() if v is not None})
        try:
            yield
        finally:
            for k, v in before.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def fetch(source: Source, credentials: Credentials = None) -> tuple[str, bytes]:
    """The trace as MLflow's own JSON; no retries, so a server that is down is one line within the timeout."""
    url = base_url(source)
    mlflow = client("mlflow", "mlflow", source)
    exceptions = client("mlflow.exceptions", "mlflow", source)
    settings = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": f"{FETCH_TIMEOUT:g}",
                **{k: v for k, v in (credentials or {}).items() if k in KEYS and v}}
    try:
        with _environ(settings):
            trace = mlflow.MlflowClient(tracking_uri=url).get_trace(source.trace)
    except exceptions.MlflowException as err:
        raise _one_line(err, exceptions, source) from None
    if trace is None:  # some versions answer None for an unknown id
        raise refused(404, source, ", ".join(KEYS))
    return export(f"mlflow-{source.trace}.json", trace.to_dict())


def _one_line(err, exceptions, source: Source) -> InputError:
    """An MLflow client error as one line: the server's status, or the request that never got an answer."""
    if isinstance(err, exceptions.RestException):
        return refused(err.get_http_status_code(), source, ", ".join(KEYS))
    status = _STATUS.search(err.message or "")
    if status:
        return refused(int(status[1]), source, ", ".join(KEYS))
    if "failed with exception" in (err.message or ""):
        return unreachable(source, err.message.rpartition("failed with exception")[2])
    return InputError(f"the MLflow client could not get the trace: {err.message}", source=str(source))


register(Reader("mlflow", fetch, recognise, help="mlflow:http://HOST:5000#tr-..., or a trace's URL"))
