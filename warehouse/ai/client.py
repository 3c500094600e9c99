"""The one HTTP client of the AI functions: OpenAI-compatible requests to registered endpoints.

A model function runs Python inside DuckDB, where DuckDB's `enable_external_access` switch
does not reach: nothing but this client stops it from opening a socket. So every request is
checked against the registered endpoints first (`check_allowed`), redirects are refused, not
followed (a server could send the request on anywhere), and proxies from the environment are
ignored. A model's answer is only ever text returned to SQL: nothing here fetches a URL found in
a prompt or an answer.

Retries: a 429 or 5xx answer, or a connection that fails, is tried again (at most `TRIES`
times), after the server's `Retry-After` when it gives one, else 0.25 s doubling; all within
the model's `timeout_s`, which also bounds a server that never answers.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from warehouse.ai.models import ModelSpec

TRIES = 4
RETRIED = frozenset({429, 500, 502, 503, 504})
FIRST_WAIT_S = 0.25
#: Characters of a failed answer's body quoted in the error.
QUOTED = 200

_http = httpx.Client(
    trust_env=False, follow_redirects=False, limits=httpx.Limits(max_connections=64)
)


class CallFailed(Exception):
    """A request that gave no usable answer; the message is safe to show (no key in it)."""


class EndpointRefused(CallFailed):
    """A URL that is not a registered endpoint: never contacted."""


def check_allowed(url: str, allowed: frozenset[str]) -> None:
    """Refuse `url` unless it lies under one of the registered base URLs `allowed`.

    >>> known = frozenset({"http://10.0.0.7:8000/v1"})
    >>> check_allowed("http://10.0.0.7:8000/v1/chat/completions", known)
    >>> check_allowed("http://evil.example/v1/chat/completions", known)
    Traceback (most recent call last):
    ...
    warehouse.ai.client.EndpointRefused: http://evil.example/v1/chat/completions is not under \
a registered endpoint (wanka.ai_models): not contacted
    """
    parts = urlsplit(url)
    for base in allowed:
        known = urlsplit(base)
        if (
            (parts.scheme, parts.hostname, parts.port) == (known.scheme, known.hostname, known.port)
            and parts.path.startswith(known.path.rstrip("/") + "/")
            and not parts.query
            and ".." not in parts.path
        ):
            return
    raise EndpointRefused(
        f"{url} is not under a registered endpoint (wanka.ai_models): not contacted"
    )


def _retry_after_s(response: httpx.Response) -> float | None:
    given = response.headers.get("retry-after", "").strip()
    try:
        return max(0.0, float(given)) if given else None
    except ValueError:
        return None  # an HTTP date: the backoff applies instead


def _quoted(text: str, key: str | None) -> str:
    cut = " ".join(text.split())[:QUOTED]
    return cut.replace(key, "***") if key else cut


def post(
    spec: ModelSpec, path: str, body: dict[str, Any], allowed: frozenset[str], key: str | None
) -> dict[str, Any]:
    """POST `body` as JSON to `path` under the model's endpoint; the answer's JSON object."""
    url = spec.url(path)
    check_allowed(url, allowed)
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    deadline = time.monotonic() + spec.timeout_s
    wait = FIRST_WAIT_S
    problem = "no answer"
    for attempt in range(1, TRIES + 1):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            response = _http.post(url, json=body, headers=headers, timeout=left)
        except httpx.TimeoutException:
            raise CallFailed(
                f"model {spec.name!r} gave no answer within its timeout_s of {spec.timeout_s:g}"
            ) from None
        except httpx.TransportError as error:
            problem = f"cannot reach {spec.endpoint} ({type(error).__name__})"
            pause = wait
        else:
            if response.is_redirect:
                where = response.headers.get("location", "?")
                raise EndpointRefused(
                    f"model {spec.name!r} answered with a redirect to {where}: refused, a model "
                    "function reaches only registered endpoints"
                )
            if response.status_code in RETRIED:
                problem = f"HTTP {response.status_code}: {_quoted(response.text, key)}"
                pause = _retry_after_s(response) or wait
            elif response.status_code >= 400:
                raise CallFailed(
                    f"model {spec.name!r}: HTTP {response.status_code}: "
                    f"{_quoted(response.text, key)}"
                )
            else:
                try:
                    answer = response.json()
                except (json.JSONDecodeError, UnicodeDecodeError):
                    raise CallFailed(
                        f"model {spec.name!r} answered with something that is not JSON: "
                        f"{_quoted(response.text, key)!r}"
                    ) from None
                if not isinstance(answer, dict):
                    raise CallFailed(f"model {spec.name!r} answered JSON that is not an object")
                return answer
        if attempt == TRIES or time.monotonic() + pause > deadline:
            break
        time.sleep(pause)
        wait *= 2
    raise CallFailed(f"model {spec.name!r}: {problem} (gave up after {attempt} tries)")


def chat_text(answer: dict[str, Any], spec: ModelSpec) -> str:
    """The text of an OpenAI chat completion's first choice."""
    try:
        content = answer["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise CallFailed(
            f"model {spec.name!r} answered without choices[0].message.content"
        ) from None
    if not isinstance(content, str):
        raise CallFailed(f"model {spec.name!r} answered a content that is not text")
    return content


def embedding_vectors(answer: dict[str, Any], spec: ModelSpec, count: int) -> list[list[float]]:
    """The vectors of an OpenAI embeddings answer, in input order."""
    try:
        items = sorted(answer["data"], key=lambda item: int(item["index"]))
        vectors = [[float(x) for x in item["embedding"]] for item in items]
    except (KeyError, TypeError, ValueError):
        raise CallFailed(f"model {spec.name!r} answered without data[].embedding") from None
    if len(vectors) != count:
        raise CallFailed(f"model {spec.name!r} answered {len(vectors)} vectors for {count} texts")
    return vectors
