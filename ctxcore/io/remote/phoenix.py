"""Phoenix: a trace's spans from a running Phoenix server, with its official client (``arize-phoenix-client``).

Source: ``phoenix:http://HOST:6006#TRACE_ID`` (every project searched), ``phoenix:http://HOST:6006/projects/P#ID``,
or the trace's URL as the Phoenix UI shows it: ``http://HOST:6006/projects/PROJECT/traces/TRACE_ID``. The
export is the span list of ``GET /v1/projects/{project}/spans`` (Phoenix span JSON). Key: ``PHOENIX_API_KEY``.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from ...errors import InputError
from ..limits import FETCH_TIMEOUT, MAX_SPANS
from ..sources import Reader, Source, register
from .common import Credentials, base_url, client, credential, export, refused, unreachable

KEY = "PHOENIX_API_KEY"
_URL = re.compile(r"^(https?://[^\s?#]+?)/projects/([^/\s?#]+)/traces/([0-9A-Za-z_-]+)/?(?:[?#]\S*)?$")


def recognise(text: str) -> Optional[Source]:
    """A trace's URL as copied from the Phoenix UI.

    >>> recognise("http://127.0.0.1:6006/projects/UHJvamVjdDox/traces/0af7651916cd43dd8448eb211c80319c")
    Source(scheme='phoenix', location='http://127.0.0.1:6006/projects/UHJvamVjdDox', trace='0af7651916cd43dd8448eb211c80319c')
    >>> recognise("https://cloud.langfuse.com/project/p1/traces/abc") is None
    True
    """
    m = _URL.match(text.strip())
    return Source("phoenix", f"{m[1]}/projects/{m[2]}", m[3]) if m else None


def fetch(source: Source, credentials: Credentials = None) -> tuple[str, bytes]:
    """The trace's spans, from the project the source names or else from the first project that has them."""
    httpx = client("httpx", "arize-phoenix-client", source)
    phoenix = client("phoenix.client", "arize-phoenix-client", source)
    exceptions = client("phoenix.client.exceptions", "arize-phoenix-client", source)
    base, _, project = base_url(source).partition("/projects/")
    key = credential(KEY, credentials, os.environ)
    http = httpx.Client(base_url=base + "/", timeout=FETCH_TIMEOUT,
                        headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        px = phoenix.Client(base_url=base, http_client=http)
        found = [px.projects.get(project_id=project)] if project else px.projects.list()
        projects = [p["name"] for p in found]  # the UI's URL names a project by its id; spans are asked by name
        for name in projects:
            spans = px.spans.get_spans(project_identifier=name, trace_ids=[source.trace], limit=MAX_SPANS + 1,
                                       timeout=FETCH_TIMEOUT)
            if spans:
                return _export(source, spans)
    except httpx.HTTPStatusError as err:
        if err.response.status_code == 404 and project:
            raise InputError(f"no project {project!r} on this Phoenix server (HTTP 404): check the URL",
                             source=str(source)) from None
        raise refused(err.response.status_code, source, KEY) from None
    except httpx.TransportError as err:
        raise unreachable(source, err) from None
    except exceptions.PhoenixException as err:  # e.g. a server older than the trace filter (Phoenix 13.9)
        raise InputError(f"the Phoenix client cannot fetch from this server: {err}", source=str(source)) from None
    finally:
        http.close()
    where = f"project {project!r}" if project else f"any of its {len(projects)} projects"
    raise InputError(f"no trace {source.trace!r} in {where} on this Phoenix server: check the trace id",
                     source=str(source))


def _export(source: Source, spans: list) -> tuple[str, bytes]:
    if len(spans) > MAX_SPANS:
        raise InputError(f"the trace has more than {MAX_SPANS:,} spans; the limit is {MAX_SPANS:,}",
                         source=str(source))
    return export(f"phoenix-{source.trace}.json", spans)


register(Reader("phoenix", fetch, recognise, help="phoenix:http://HOST:6006#TRACE_ID, or a trace's URL"))
