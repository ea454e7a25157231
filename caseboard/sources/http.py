"""The one HTTP door of the HTTP sources: GET only, on the paths a source declares, bounded in bytes and time.

Read-only is enforced here, not described: ``ReadOnlyHttp.get`` refuses a path outside the source's declared
read paths before anything is sent, and the client has no other method. The response is read in chunks up to
``max_bytes`` (the rest is never read); a connection that drops mid-response is a failure carrying what came.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import httpx

from caseboard.sources.base import Deadline, SourceFailed
from caseboard.sources.config import SourceConfig


@dataclass(frozen=True)
class Response:
    status: int
    raw: bytes
    truncated: bool
    media_type: str


class ReadOnlyHttp:
    def __init__(self, config: SourceConfig, paths: Sequence[str]) -> None:
        if not config.endpoint:
            raise SourceFailed("the source has no endpoint")
        self.base = config.endpoint.rstrip("/")
        self.paths = tuple(paths)
        self.credential = config.credential
        self.max_bytes = config.guardrails.max_bytes
        self.client = httpx.Client(follow_redirects=False)

    def close(self) -> None:
        self.client.close()

    def get(self, path: str, params: list[tuple[str, str | int | float | bool | None]], deadline: Deadline) -> Response:
        if path not in self.paths:
            raise SourceFailed(f"{path} is not a declared read path of this source ({', '.join(self.paths)})")
        headers = self.credential.headers() if self.credential is not None else {}
        left = deadline.left()
        timeout = httpx.Timeout(left, connect=min(left, 5.0))
        taken: list[bytes] = []
        size = 0
        truncated = False
        try:
            with self.client.stream("GET", self.base + path, params=params, headers=headers, timeout=timeout) as reply:
                for chunk in reply.iter_bytes():
                    if size + len(chunk) > self.max_bytes:
                        taken.append(chunk[: self.max_bytes - size])
                        truncated = True
                        break
                    taken.append(chunk)
                    size += len(chunk)
                    if deadline.passed():
                        raise SourceFailed(
                            "the deadline passed while the response was read", timeout=True, raw=b"".join(taken)
                        )
                media = reply.headers.get("content-type", "application/octet-stream").split(";")[0]
                status = reply.status_code
        except httpx.TimeoutException as error:
            raise SourceFailed(
                f"timed out: {str(error) or type(error).__name__}", timeout=True, raw=b"".join(taken)
            ) from None
        except httpx.HTTPError as error:
            what = "the connection dropped mid-response" if taken else "cannot reach the source"
            raise SourceFailed(f"{what}: {str(error) or type(error).__name__}", raw=b"".join(taken)) from None
        return Response(status, b"".join(taken), truncated, media)


def plain_error(raw: bytes) -> str:
    """A short message out of an error body (a JSON ``error`` field, or the text's start)."""
    text = raw[:2000].decode("utf-8", errors="replace")
    found = re.search(r'"error"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
    return found.group(1) if found else " ".join(text.split())[:300]
