"""Child process of the update-to-phase figure: PATCH pod statuses at a fixed rate.

Run as ``python -m benchmarks.patcher`` with a JSON request on stdin::

    {"server", "ca", "cert", "key", "updates": [[namespace, name, phase], ...],
     "rate", "start_at" (CLOCK_MONOTONIC seconds), "threads"}

Update ``i`` is due at ``start_at + i / rate``; ``threads`` connections share them round
robin. Prints ``[[i, t_send, t_done, status], ...]`` (monotonic seconds) as JSON. Bounded:
each request times out after 30 s and nothing is retried.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
import time
from typing import Any

import httpx


def patch_all(req: dict[str, Any]) -> list[tuple[int, float, float, int]]:
    ctx = ssl.create_default_context(cafile=req["ca"])
    ctx.load_cert_chain(req["cert"], req["key"])
    updates = req["updates"]
    rate, start_at, threads = float(req["rate"]), float(req["start_at"]), int(req["threads"])
    out: list[tuple[int, float, float, int]] = []
    lock = threading.Lock()

    def run(offset: int) -> None:
        mine: list[tuple[int, float, float, int]] = []
        with httpx.Client(base_url=req["server"], verify=ctx, timeout=30.0, trust_env=False) as c:
            for i in range(offset, len(updates), threads):
                ns, name, phase = updates[i]
                delay = start_at + i / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                t_send = time.monotonic()
                try:
                    r = c.patch(f"/api/v1/namespaces/{ns}/pods/{name}/status",
                                content=json.dumps({"status": {"phase": phase}}),
                                headers={"Content-Type": "application/merge-patch+json"})
                    status = r.status_code
                except httpx.HTTPError:
                    status = 0
                mine.append((i, t_send, time.monotonic(), status))
        with lock:
            out.extend(mine)

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return sorted(out)


if __name__ == "__main__":
    json.dump(patch_all(json.load(sys.stdin)), sys.stdout)
