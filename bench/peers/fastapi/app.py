"""Benchmark peer: the v2 POST /v2/predict contract in FastAPI + onnxruntime + Pillow + numpy.

Written the way a Python team would: pydantic request model, a sync endpoint (FastAPI runs it in
its thread pool; onnxruntime, Pillow and numpy release the GIL in their heavy parts), ONNX Runtime
sessions created once per worker at import. The pipeline and the HTTP contract are shared with the
Ray Serve peer (bench/peers/python). Run with uvicorn, one worker process per core:

    uvicorn app:app --app-dir bench/peers/fastapi --host 127.0.0.1 --port 8000 --workers 2

Environment: as bench/peers/python/catcomfort_peer.py and peer_http.py say.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

import catcomfort_peer as pipeline  # noqa: E402
from peer_http import InvalidImage, PredictRequest, answer, make_app, require_key  # noqa: E402

app = make_app("Cat Comfort API v2 (FastAPI peer)")


@app.post("/v2/predict", dependencies=[Depends(require_key)])
def predict(body: PredictRequest, request: Request) -> JSONResponse:
    try:
        result = pipeline.analyze(body.image, body.threshold)
    except pipeline.ImageError as e:
        raise InvalidImage(e.message)
    return answer(request, pipeline.MANIFEST["id"], result)
