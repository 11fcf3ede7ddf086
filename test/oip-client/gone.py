"""The issue's reproduction of calls their client gave up on (test/grpc-client-gone.test.ts runs this).

Argument: a JSON object {grpc, key, photo}. With the client's GrpcClient: one call to warm the channel,
20 ModelInfer futures on the photo each cancelled 8 ms in, 20 calls with a 1 ms deadline, each with its
own x-request-id, then one last call. Prints {calls: {id: the status the client saw}, cancel_seen_at:
{id: the wall-clock time in ms once the client had seen it cancelled (its reset leaves about then)},
after: the last id}.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
import grpc  # noqa: E402
from catcomfort_oip import GrpcClient  # noqa: E402

cfg = json.loads(sys.argv[1])
client = GrpcClient(cfg["grpc"], api_key=cfg["key"])
request = client.infer_request("bc-v1", [open(cfg["photo"], "rb").read()])


def metadata(request_id):
    return client.metadata + [("x-request-id", request_id)]


def seen(call):
    """The status name the client saw for a call (a function that waits for it)."""
    try:
        call()
        return "OK"
    except grpc.FutureCancelledError:
        return "CANCELLED"
    except grpc.RpcError as e:
        return e.code().name


client.stub.ModelInfer(request, metadata=metadata("first"))
calls = {}
cancel_seen_at = {}
for i in range(20):
    future = client.stub.ModelInfer.future(request, metadata=metadata(f"cancel-{i}"))
    time.sleep(0.008)
    future.cancel()
    calls[f"cancel-{i}"] = seen(future.result)
    cancel_seen_at[f"cancel-{i}"] = time.time() * 1000
for i in range(20):
    calls[f"deadline-{i}"] = seen(lambda: client.stub.ModelInfer(request, metadata=metadata(f"deadline-{i}"), timeout=0.001))
client.stub.ModelInfer(request, metadata=metadata("last"))
print(json.dumps({"calls": calls, "cancel_seen_at": cancel_seen_at, "after": "last"}))
