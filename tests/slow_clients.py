"""A slow-client attack on a caseboard server, as a process of its own: ``python -m tests.slow_clients PORT
SECONDS HEADERS BODIES SOURCE TOKEN``.

From the loopback address SOURCE (127.0.0.2: another client address than the test's own), it keeps HEADERS
connections sending their request headers a byte at a time and BODIES connections that sent the headers of
an artifact upload with a valid key (TOKEN) sending its large body a byte at a time; each connection the
server closes is opened again at once (after a 20 ms pause, so that the attacker does not spin on a refused
address). It stops by itself after SECONDS and prints one JSON line: how many connections it opened and how
many the server closed or refused."""

from __future__ import annotations

import asyncio
import json
import sys
import time

DRIBBLE_S = 0.5
HEADERS = b"GET /health HTTP/1.1\r\nHost: caseboard\r\nX-Slow: "


def body_head(token: str) -> bytes:
    return (
        f"POST /artifacts HTTP/1.1\r\nHost: caseboard\r\nAuthorization: Bearer {token}\r\n"
        "Content-Type: text/plain\r\nContent-Length: 1000000\r\n\r\n"
    ).encode()


async def slot(port: int, source: str, first: bytes, byte: bytes, until: float, counts: dict[str, int]) -> None:
    while time.monotonic() < until:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        except OSError:
            counts["connect_failed"] += 1
            await asyncio.sleep(0.02)
            continue
        counts["opened"] += 1
        try:
            writer.write(first)
            await writer.drain()
            while time.monotonic() < until:
                try:
                    if await asyncio.wait_for(reader.read(4096), DRIBBLE_S) == b"":
                        break  # the server closed it
                    counts["answered"] += 1  # a 408 or a 503, then the close
                    break
                except TimeoutError:
                    writer.write(byte)
                    await writer.drain()
        except OSError:
            pass
        finally:
            counts["closed"] += 1
            writer.close()
        await asyncio.sleep(0.02)


async def attack(port: int, seconds: float, headers: int, bodies: int, source: str, token: str) -> dict[str, int]:
    until = time.monotonic() + seconds
    counts = {"opened": 0, "closed": 0, "answered": 0, "connect_failed": 0}
    slots = [slot(port, source, HEADERS, b"a", until, counts) for _ in range(headers)]
    slots += [slot(port, source, body_head(token), b"x", until, counts) for _ in range(bodies)]
    await asyncio.gather(*slots)
    return counts


if __name__ == "__main__":
    port, seconds, headers, bodies, source, token = sys.argv[1:7]
    done = asyncio.run(attack(int(port), float(seconds), int(headers), int(bodies), source, token))
    print(json.dumps(done), flush=True)
