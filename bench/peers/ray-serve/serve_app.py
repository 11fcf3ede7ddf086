"""Benchmark peer: the v2 POST /v2/predict contract served by Ray Serve with dynamic batching.

The same pipeline and HTTP contract as the FastAPI peer (bench/peers/python), in a Serve deployment
whose FastAPI ingress hands each request to a @serve.batch method: concurrent requests in one
replica are gathered up to PEER_MAX_BATCH_SIZE or PEER_MAX_BATCH_DELAY_US (the pack's batching
section, else the service's CATCOMFORT_BATCH_* defaults, as for the service's micro-batcher), then
decoded and detected one after the other and their crops classified in one Run (analyze_many), in a
thread so the replica's event loop keeps taking requests.

Replicas: PEER_WORKERS (one per core, as the FastAPI peer's uvicorn workers), each with
PEER_INTRA_OP_THREADS ONNX Runtime threads; Serve's HTTP proxy and controller run beside them. A
local Ray instance on 127.0.0.1 only: no dashboard, usage reporting off, logs not forwarded.

    python bench/peers/ray-serve/serve_app.py      # PEER_HOST, PEER_PORT; other settings as the FastAPI peer
"""

import asyncio
import os
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Optional

os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
PYTHON_DIR = str(Path(__file__).resolve().parents[1] / "python")
sys.path.insert(0, PYTHON_DIR)
# Replicas are other processes: they find the shared modules the same way.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (PYTHON_DIR, os.environ.get("PYTHONPATH", "")) if p)

import ray  # noqa: E402
from fastapi import Depends, Request  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402
from ray import serve  # noqa: E402

from peer_http import InvalidImage, PredictRequest, answer, make_app, require_key  # noqa: E402

HOST = os.environ.get("PEER_HOST", "127.0.0.1")
PORT = int(os.environ.get("PEER_PORT", "8000"))
REPLICAS = int(os.environ.get("PEER_WORKERS", "1"))
MAX_BATCH = int(os.environ.get("PEER_MAX_BATCH_SIZE", "4"))
BATCH_WAIT_S = int(os.environ.get("PEER_MAX_BATCH_DELAY_US", "500")) / 1e6

app = make_app("Cat Comfort API v2 (Ray Serve peer)")


@serve.deployment(num_replicas=REPLICAS, ray_actor_options={"num_cpus": 1}, max_ongoing_requests=4 * MAX_BATCH)
@serve.ingress(app)
class Peer:
    def __init__(self) -> None:
        import catcomfort_peer  # in the replica: its own ONNX Runtime sessions

        self.pipeline = catcomfort_peer

    @app.post("/v2/predict", dependencies=[Depends(require_key)])
    async def predict(self, body: PredictRequest, request: Request) -> JSONResponse:
        result = await self.batched((body.image, body.threshold))
        if isinstance(result, self.pipeline.ImageError):
            raise InvalidImage(result.message)
        return answer(request, self.pipeline.MANIFEST["id"], result)

    @serve.batch(max_batch_size=MAX_BATCH, batch_wait_timeout_s=BATCH_WAIT_S)
    async def batched(self, items: list[tuple[str, Optional[float]]]) -> list[object]:
        return await asyncio.to_thread(self.pipeline.analyze_many, items)


def main() -> None:
    ray.init(
        num_cpus=max(REPLICAS, os.cpu_count() or 1),
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=tempfile.mkdtemp(prefix="ray-peer-"),
        _node_ip_address="127.0.0.1",
    )
    serve.start(http_options={"host": HOST, "port": PORT}, logging_config={"log_level": "WARNING"})
    serve.run(Peer.bind(), route_prefix="/", name="peer")
    print(f"Ray Serve peer listening on http://{HOST}:{PORT} ({REPLICAS} replicas, batch {MAX_BATCH}, wait {BATCH_WAIT_S * 1e6:.0f} us)", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    # Not serve.shutdown(): its graceful drain waits on replicas for many seconds. Stopping the local
    # Ray instance ends the controller, proxy and replicas with it.
    ray.shutdown()


if __name__ == "__main__":
    main()
