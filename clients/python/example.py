"""Infer photos over gRPC and over REST, and print one line per photo (docs/oip.md "Open Inference Protocol").

    clients/python/.venv/bin/python clients/python/example.py 127.0.0.1:8001 http://127.0.0.1:8080 "$KEY" cat.jpg [more.jpg ...]
"""
import sys

from catcomfort_oip import GrpcClient, RestClient, per_image

target, url, key, *files = sys.argv[1:]
images = [open(f, "rb").read() for f in files]
over_grpc = GrpcClient(target, api_key=key).infer("bc-v1", images)
status, over_rest = RestClient(url, api_key=key).infer("bc-v1", images)
print(f"bc-v1 {over_grpc['model_version']} (REST: HTTP {status})")
for name, a, b in zip(files, per_image(over_grpc["outputs"]), per_image(over_rest["outputs"])):
    same = "same over REST" if a == b else f"REST differs: {b}"
    print(f"{name}: {a['detection']} {a['label'] or '-'} score={a['score']:.4f} box={[round(v) for v in a['box']]} ({same})")
