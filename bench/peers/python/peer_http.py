"""The v2 POST /v2/predict contract of the Python benchmark peers, in FastAPI: the request model,
the key check, the error shapes (401, 400 invalid_image, 422 invalid_request) and the answer. Each
peer defines its own route (a FastAPI function, or a method of a Ray Serve ingress) with these.

Environment: PEER_API_KEYS (comma-separated, required), PEER_SERVICE_VERSION (model.version).
"""

from __future__ import annotations

import hmac
import os
import re
import uuid
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

API_KEYS = [k.strip() for k in os.environ.get("PEER_API_KEYS", "").split(",") if k.strip()]
if not API_KEYS:
    raise RuntimeError("PEER_API_KEYS must name at least one key")
SERVICE_VERSION = os.environ.get("PEER_SERVICE_VERSION", "1.0.0")
REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


class PredictRequest(BaseModel):
    image: str = Field(min_length=1)
    threshold: Optional[float] = Field(default=None, ge=0, le=1)


class Unauthorized(Exception):
    pass


class InvalidImage(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def request_id(request: Request) -> str:
    rid = request.headers.get("x-request-id")
    if rid is None or not REQUEST_ID.match(rid):
        rid = str(uuid.uuid4())
    request.state.request_id = rid
    return rid


def error(request: Request, status: int, code: str, message: str, details: Optional[dict] = None) -> JSONResponse:
    rid = getattr(request.state, "request_id", None) or request_id(request)
    return JSONResponse(
        status_code=status,
        content={"request_id": rid, "error": {"code": code, "message": message, "details": details or {}}},
        headers={"X-Request-ID": rid},
    )


def require_key(request: Request) -> None:
    """A FastAPI dependency: the request id, then the api-key header; raises Unauthorized."""
    request_id(request)
    key = request.headers.get("api-key", "")
    if not any(hmac.compare_digest(key.encode(), k.encode()) for k in API_KEYS):
        raise Unauthorized()


def make_app(title: str) -> FastAPI:
    """A FastAPI app with the contract's error handlers; the peer adds its route."""
    app = FastAPI(title=title)

    @app.exception_handler(Unauthorized)
    async def on_unauthorized(request: Request, _exc: Unauthorized) -> JSONResponse:
        return error(request, 401, "unauthorized", "Missing or invalid API key.")

    @app.exception_handler(InvalidImage)
    async def on_invalid_image(request: Request, exc: InvalidImage) -> JSONResponse:
        return error(request, 400, "invalid_image", exc.message)

    @app.exception_handler(RequestValidationError)
    async def on_validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = []
        for e in exc.errors():
            loc = [str(p) for p in e.get("loc", ()) if p != "body"]
            errors.append({"field": ".".join(loc) or "body", "message": e.get("msg", "")})
        return error(request, 422, "invalid_request", "Request validation failed.", {"errors": errors})

    return app


def answer(request: Request, model_id: str, result: dict) -> JSONResponse:
    """The 200 answer from analyze()'s fields."""
    rid = request.state.request_id
    return JSONResponse(
        content={"request_id": rid, "model": {"id": model_id, "version": SERVICE_VERSION}, **result},
        headers={"X-Request-ID": rid},
    )
