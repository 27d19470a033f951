"""LangSmith: a trace's runs from the LangSmith API, with ``langsmith.Client`` (``list_runs``, ``read_run``).

Source: ``langsmith:https://api.smith.langchain.com#RUN_ID`` (the trace's root run, or any run in it), or the
run's URL as the LangSmith UI shows it: ``https://smith.langchain.com/o/ORG/projects/p/PROJECT/r/RUN_ID``
(``?trace_id=`` in it is used when present). The export is the trace's runs (LangSmith runs JSON).
Key: ``LANGSMITH_API_KEY``.
"""

from __future__ import annotations

import os
import re
from typing import Optional
from urllib.parse import parse_qs, urlsplit

from ...errors import InputError
from ..limits import FETCH_TIMEOUT, MAX_SPANS
from ..sources import Reader, Source, register
from .common import Credentials, base_url, client, credential, export, refused, unreachable

KEY = "LANGSMITH_API_KEY"
_URL = re.compile(r"^(https?)://([^/\s?#]+)(/[^\s?#]*?)?/o/[^/\s?#]+/projects/p/[^/\s?#]+/r/([0-9a-fA-F-]{36})/?"
                  r"(\?[^\s#]*)?(#\S*)?$")
_API = {"smith.langchain.com": "api.smith.langchain.com", "eu.smith.langchain.com": "eu.api.smith.langchain.com"}


def recognise(text: str) -> Optional[Source]:
    """A run's URL as copied from the LangSmith UI; the API is ``api.`` beside the cloud UI, and ``/api/v1``
    under a self-hosted one.

    >>> recognise("https://smith.langchain.com/o/9a1/projects/p/5c2/r/1b2c3d4e-0000-4000-8000-000000000001?poll=true")
    Source(scheme='langsmith', location='https://api.smith.langchain.com', trace='1b2c3d4e-0000-4000-8000-000000000001')
    >>> recognise("http://ls.internal/o/9a1/projects/p/5c2/r/1b2c3d4e-0000-4000-8000-000000000002"
    ...           "?trace_id=1b2c3d4e-0000-4000-8000-000000000001").location
    'http://ls.internal/api/v1'
    """
    m = _URL.match(text.strip())
    if not m:
        return None
    host = _API.get(m[2].lower())
    api = f"{m[1]}://{host}" if host else f"{m[1]}://{m[2]}{m[3] or ''}/api/v1"
    trace = parse_qs(urlsplit(text.strip()).query).get("trace_id", [m[4]])[0]
    return Source("langsmith", api, trace)


def fetch(source: Source, credentials: Credentials = None) -> tuple[str, bytes]:
    """Every run of the trace: by the trace's id, else the trace the named run belongs to."""
    url = base_url(source)
    key = credential(KEY, credentials, os.environ)
    langsmith = client("langsmith", "langsmith", source)
    utils = client("langsmith.utils", "langsmith", source)
    retry = client("urllib3.util", "urllib3", source)
    ls = langsmith.Client(api_url=url, api_key=key, timeout_ms=int(FETCH_TIMEOUT * 1000),
                          retry_config=retry.Retry(total=0), auto_batch_tracing=False)
    try:
        runs = _runs(ls, source.trace, source)
        if not runs:
            runs = _runs(ls, str(ls.read_run(source.trace).trace_id), source)
    except utils.LangSmithError as err:
        raise _one_line(err, utils, source) from None
    finally:
        ls.session.close()
    if not runs:
        raise refused(404, source, KEY)
    return export(f"langsmith-{source.trace}.json", runs)


def _runs(ls, trace: str, source: Source) -> list[dict]:
    runs = []
    for run in ls.list_runs(trace_id=trace, limit=MAX_SPANS + 1):
        runs.append(run.model_dump(mode="json", exclude={"attachments"}))
    if len(runs) > MAX_SPANS:
        raise InputError(f"the trace has more than {MAX_SPANS:,} runs; the limit is {MAX_SPANS:,}",
                         source=str(source))
    return runs


def _one_line(err, utils, source: Source) -> InputError:
    """A LangSmith client error as one line."""
    if isinstance(err, (utils.LangSmithConnectionError, utils.LangSmithRequestTimeout)):
        return unreachable(source, str(err).splitlines()[0].partition("API. ")[2] or str(err).splitlines()[0])
    if isinstance(err, utils.LangSmithAuthError):
        return refused(401, source, KEY)
    if isinstance(err, utils.LangSmithNotFoundError):
        return refused(404, source, KEY)
    status = re.search(r"\b(\d{3}) (?:Client|Server) Error", str(err))
    if status:
        return refused(int(status[1]), source, KEY)
    return InputError(f"the LangSmith client could not get the trace: {str(err).splitlines()[0][:200]}",
                      source=str(source))


register(Reader("langsmith", fetch, recognise, help="langsmith:https://api.smith.langchain.com#RUN_ID, or a run's URL"))
