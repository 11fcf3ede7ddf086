"""A small Open Inference Protocol client for the Cat Comfort service, over gRPC and REST.

Needs grpcio and grpcio-tools (requirements.txt). The gRPC stubs are generated on first import from
the service's proto/inference.proto into a cache folder, so no generated code is kept in the repository.

    from catcomfort_oip import GrpcClient, RestClient
    client = GrpcClient("127.0.0.1:8001", api_key="...")
    print(client.infer("bc-v1", [open("cat.jpg", "rb").read()]))
"""
import base64
import hashlib
import importlib
import json
import os
import struct
import sys
import tempfile
import urllib.error
import urllib.request

import grpc

PROTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto", "inference.proto")


def _stubs():
    """The generated modules (inference_pb2, inference_pb2_grpc), made once per proto version."""
    from grpc_tools import protoc

    with open(PROTO, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    out = os.path.join(tempfile.gettempdir(), f"catcomfort-oip-{digest}")
    if not os.path.exists(os.path.join(out, "inference_pb2_grpc.py")):
        os.makedirs(out, exist_ok=True)
        proto_dir = os.path.dirname(os.path.abspath(PROTO))
        code = protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}", os.path.abspath(PROTO)])
        if code != 0:
            raise RuntimeError(f"protoc failed on {PROTO}")
    sys.path.insert(0, out)
    return importlib.import_module("inference_pb2"), importlib.import_module("inference_pb2_grpc")


pb, pb_grpc = _stubs()


def pack_bytes(elements):
    """A raw BYTES tensor: each element as a 4-byte little-endian length and its bytes."""
    return b"".join(struct.pack("<I", len(e)) + e for e in elements)


def unpack_bytes(raw):
    out, at = [], 0
    while at < len(raw):
        (n,) = struct.unpack_from("<I", raw, at)
        out.append(raw[at + 4 : at + 4 + n])
        at += 4 + n
    return out


def decode_tensor(datatype, shape, raw):
    """Raw contents as a flat list: str for BYTES, float for FP32, int for INT32."""
    if datatype == "BYTES":
        return [b.decode("utf-8") for b in unpack_bytes(raw)]
    fmt = {"FP32": "f", "INT32": "i"}[datatype]
    return list(struct.unpack(f"<{len(raw) // 4}{fmt}", raw))


def per_image(outputs):
    """{name: flat values} as one dict per image, the fields of /v2/predict's answer."""
    n = len(outputs["detection"])
    return [
        {
            "detection": outputs["detection"][i],
            "confidence": outputs["confidence"][i],
            "box": outputs["box"][4 * i : 4 * i + 4],
            "score": outputs["score"][i],
            "label": outputs["label"][i],
            "image_size": outputs["image_size"][2 * i : 2 * i + 2],
        }
        for i in range(n)
    ]


class GrpcClient:
    def __init__(self, target, api_key=None):
        self.channel = grpc.insecure_channel(target, options=[("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)])
        self.stub = pb_grpc.GRPCInferenceServiceStub(self.channel)
        self.metadata = [("api-key", api_key)] if api_key else []

    def live(self):
        return self.stub.ServerLive(pb.ServerLiveRequest()).live

    def ready(self):
        return self.stub.ServerReady(pb.ServerReadyRequest()).ready

    def server_metadata(self):
        return self.stub.ServerMetadata(pb.ServerMetadataRequest(), metadata=self.metadata)

    def model_metadata(self, name, version=""):
        return self.stub.ModelMetadata(pb.ModelMetadataRequest(name=name, version=version), metadata=self.metadata)

    def model_ready(self, name, version=""):
        return self.stub.ModelReady(pb.ModelReadyRequest(name=name, version=version), metadata=self.metadata).ready

    def infer_request(self, name, images, version="", threshold=None, datatype="BYTES", raw=True):
        tensor = pb.ModelInferRequest.InferInputTensor(name="image", datatype=datatype, shape=[len(images)])
        request = pb.ModelInferRequest(model_name=name, model_version=version, inputs=[tensor])
        if raw:
            request.raw_input_contents.append(pack_bytes(images))
        else:
            request.inputs[0].contents.bytes_contents.extend(images)
        if threshold is not None:
            request.parameters["threshold"].double_param = threshold
        return request

    def infer(self, name, images, version="", threshold=None, timeout=None, raw=True):
        """{model_version, outputs: {name: flat values}} for the images (encoded files)."""
        response = self.stub.ModelInfer(self.infer_request(name, images, version, threshold, raw=raw), metadata=self.metadata, timeout=timeout)
        outputs = {o.name: decode_tensor(o.datatype, list(o.shape), r) for o, r in zip(response.outputs, response.raw_output_contents)}
        return {"model_name": response.model_name, "model_version": response.model_version, "outputs": outputs}


class RestClient:
    def __init__(self, url, api_key=None):
        self.url = url.rstrip("/")
        self.headers = {"api-key": api_key} if api_key else {}

    def call(self, method, path, body=None, headers=None):
        """(status, headers, body bytes); error statuses are returned, not raised."""
        request = urllib.request.Request(self.url + path, data=body, method=method, headers={**self.headers, **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, dict(r.headers), r.read()
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read()

    def infer(self, name, images, binary=True, threshold=None, version=None):
        """(status, answer): answer as GrpcClient.infer's on 200, else the protocol's error body."""
        path = f"/v2/models/{name}" + (f"/versions/{version}" if version else "") + "/infer"
        tensor = {"name": "image", "datatype": "BYTES", "shape": [len(images)]}
        request = {"inputs": [tensor], "parameters": {"binary_data_output": binary}}
        if threshold is not None:
            request["parameters"]["threshold"] = threshold
        if binary:
            data = pack_bytes(images)
            tensor["parameters"] = {"binary_data_size": len(data)}
            head = json.dumps(request).encode()
            status, headers, body = self.call("POST", path, head + data, {"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(head))})
        else:
            tensor["data"] = [base64.b64encode(i).decode() for i in images]
            status, headers, body = self.call("POST", path, json.dumps(request).encode(), {"Content-Type": "application/json"})
        if status != 200:
            return status, json.loads(body)
        length = {k.lower(): v for k, v in headers.items()}.get("inference-header-content-length")
        head = json.loads(body[: int(length)] if length else body)
        tail, outputs = body[int(length) :] if length else b"", {}
        for o in head["outputs"]:
            if "data" in o:
                outputs[o["name"]] = o["data"]
            else:
                size = o["parameters"]["binary_data_size"]
                outputs[o["name"]], tail = decode_tensor(o["datatype"], o["shape"], tail[:size]), tail[size:]
        return status, {"model_name": head["model_name"], "model_version": head["model_version"], "outputs": outputs}
