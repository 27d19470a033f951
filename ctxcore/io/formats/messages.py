"""Logged requests read as text: the question in an input, message contents, the answer in an
output, the model's settings and the parts of the request ctxcore rebuilds itself."""

from __future__ import annotations

import json
from typing import Optional

from ...records import Config
from ...encodings import encoding_for_model
from .values import as_int, as_number, dig, json_value, snippet, squash


_QUERY_KEYS = ("query", "question", "input", "query_str", "str_or_query_bundle", "user_input", "q", "text",
               "message")


def query_from(value) -> Optional[str]:
    """The question in a logged input: a string, or the usual field of a JSON object."""
    value = json_value(value)
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for key in _QUERY_KEYS:
            found = query_from(value[key]) if key in value and (not isinstance(value[key], dict)
                                                                 or key == "str_or_query_bundle") else None
            if found:
                return found
        if "messages" in value:
            return query_from(value["messages"])
        if isinstance(value.get("inputs"), dict):  # LangChain chain inputs, as OpenLLMetry and LangSmith log them
            return query_from(value["inputs"])
        args = value.get("args")
        if isinstance(args, list):  # Langfuse @observe: {"args": [...], "kwargs": {...}}
            for a in args:
                if isinstance(a, str) and a.strip():
                    return a.strip()
        if isinstance(value.get("kwargs"), dict):
            return query_from(value["kwargs"])
        return None
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, dict) and m.get("role") in ("user", "human")]
        if users:
            return message_text(users[-1])
    return None


def content_text(content) -> Optional[str]:
    """Message content as text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            part = part.get("message_content", part) if isinstance(part, dict) else part
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "\n".join(parts) if parts else None
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return content["text"]
    return None


def message_text(message) -> Optional[str]:
    """A chat message's text: its ``content``, else the text ``blocks`` of a LlamaIndex ``ChatMessage``
    (run-llama/llama_index ``llama-index-core/llama_index/core/base/llms/types.py``: ``model_dump()`` writes
    ``{"role", "additional_kwargs", "blocks": [{"block_type": "text", "text": ...}]}`` and no content)."""
    if not isinstance(message, dict):
        return None
    text = content_text(message.get("content"))
    if text is None and isinstance(message.get("blocks"), list):
        parts = [b["text"] for b in message["blocks"]
                 if isinstance(b, dict) and b.get("block_type", "text") == "text" and isinstance(b.get("text"), str)]
        text = "\n".join(parts) if parts else None
    return text


def joined(messages: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"{role}: {text}" for role, text in messages)


def count_docs_in(text: Optional[str], docs: list[dict]) -> int:
    if not text:
        return 0
    flat = squash(text)
    return sum(1 for d in docs if isinstance(d.get("content"), str) and snippet(d["content"])
               and snippet(d["content"]) in flat)


def generation(calls: list, docs: list[dict], prompt_of, answer_of, output: Optional[str], place):
    """The LLM call that wrote the run's answer: the one whose prompt holds the most retrieved documents; of
    those, the one whose answer is the run's own output (a judge or checker called after the answer quotes the
    same documents), then the last (a retry). A query rewrite holds none of the documents."""
    final = squash(output) if isinstance(output, str) and output.strip() else None
    return max(calls, key=lambda c: (count_docs_in(prompt_of(c), docs),
                                     final is not None and squash(answer_of(c) or "") == final, place(c)), default=None)


def text_of(value) -> Optional[str]:
    """An answer from an output value: the text, or the usual field of JSON output."""
    parsed = json_value(value)
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict):
        if isinstance(parsed.get("blocks"), list) and "content" not in parsed:  # a LlamaIndex ChatMessage
            return message_text(parsed)
        for key in ("content", "answer", "output", "text", "response", "result", "completion"):
            if isinstance(parsed.get(key), str):
                return parsed[key]
        msg = dig(parsed, "choices", 0, "message")
        if isinstance(msg, dict):
            return content_text(msg.get("content"))
        if isinstance(parsed.get("message"), dict):
            return message_text(parsed["message"])
        return json.dumps(parsed, ensure_ascii=False)
    if isinstance(parsed, list):
        said = [m for m in parsed if isinstance(m, dict) and m.get("role") in ("assistant", "ai")]
        if said:
            return message_text(said[-1])
        return json.dumps(parsed, ensure_ascii=False)
    return None


_MAX_TOKENS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "maxTokens", "max_new_tokens")


def settings_from(model: Optional[str], params, unmapped: list[str], warnings: list[str]) -> dict:
    config: dict = {}
    if model:
        try:
            encoding_for_model(model)
        except KeyError:
            warnings.append(f"model {model!r} has no known tokenizer: token counts use the default "
                            f"{Config().encoding} encoding")
            unmapped.append(f"model {model!r} (no known tokenizer)")
        else:
            config["model"] = model
    params = json_value(params)
    if isinstance(params, dict):
        rest = []
        for key, value in params.items():
            if key in _MAX_TOKENS and "max_output" not in config:
                n = as_int(value)
                if n and n < Config().window:
                    config["max_output"] = n
                    continue
            if key in ("model", "model_name") or value is None:
                continue
            rest.append(key)
        if rest:
            unmapped.append(f"model parameters {', '.join(rest)}")
    return config


def request_parts(messages: list[tuple[str, str]], docs: list[dict], unmapped: list[str]):
    """System text and earlier turns of the logged request, unless they carry retrieved passages."""
    system, history = "", ()
    sys_msgs = [text for role, text in messages if role in ("system", "developer")]
    if sys_msgs:
        system_text = "\n\n".join(sys_msgs)
        if count_docs_in(system_text, docs):
            unmapped.append("the system message (it carries the retrieved passages; ctxcore builds its own "
                            "evidence block)")
        else:
            system = system_text
    users = [i for i, (role, _) in enumerate(messages) if role in ("user", "human")]
    if users:
        turns = [(role, text) for role, text in messages[: users[-1]] if role not in ("system", "developer")]
        if turns:
            if any(count_docs_in(text, docs) for _, text in turns):
                unmapped.append(f"{len(turns)} earlier chat turns (they carry retrieved passages)")
            else:
                history = tuple({"role": "assistant" if role in ("assistant", "ai") else "user", "content": text}
                                for role, text in turns)
    return system, history


# Limits a log states in span metadata or model parameters, by their canonical ctxcore name (the
# names are the ones LangChain, LlamaIndex, vLLM and the rerankers use for them).
_STATED = {"context_window": "context_window", "max_model_len": "context_window", "max_context_tokens": "context_window",
           **{k: "max_output" for k in _MAX_TOKENS}, "ls_max_tokens": "max_output",
           "min_relevance_score": "min_score", "score_threshold": "min_score", "similarity_cutoff": "min_score",
           "top_n": "top_n", "top_k": "top_k", "k": "top_k", "similarity_top_k": "top_k"}
_LIMIT_WORDS = ("max_", "min_", "limit", "threshold", "cutoff", "top_", "window")


def stated_limits(sources: list[tuple[str, object, bool]], unmapped: list[str]) -> Optional[dict]:
    """The limits a log states, as {canonical name: value} (the first source that states one wins),
    from ``(where, mapping, report)`` sources in precedence order; other limit-like keys of a
    ``report`` source are named in ``unmapped``. A dict under ``search_kwargs`` is read as well."""
    stated: dict = {}
    for where, params, report in sources:
        params = json_value(params)
        if not isinstance(params, dict):
            continue
        inner = json_value(params.get("search_kwargs"))
        items = [*params.items(), *(inner.items() if isinstance(inner, dict) else ())]
        rest = []
        for key, value in items:
            name = _STATED.get(str(key))
            number = as_number(value)
            if name is not None and number is not None:
                stated.setdefault(name, int(number) if float(number).is_integer() else number)
            elif report and name is None and any(w in str(key).casefold() for w in _LIMIT_WORDS):
                rest.append(f"{key}={json.dumps(value, ensure_ascii=False)[:40]}")
        if rest:
            unmapped.append(f"stated limits of the {where} not read: {', '.join(rest)}")
    return stated or None
