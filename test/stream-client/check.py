"""Runs the Python live stream client (clients/python/catcomfort_stream.py) against a real service
for test/stream.test.ts and prints what it saw as JSON: a photo's answer, a frame that is not an
image, a threshold changed, a settings message refused, and a wrong key's close code."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
from catcomfort_stream import Stream, StreamClosed  # noqa: E402

config = json.loads(sys.argv[1])
out = {}
with open(config["photo"], "rb") as f:
    photo = f.read()
with Stream(config["url"], api_key=config["key"]) as stream:
    out["settings"] = stream.settings_answer
    stream.send_frame(photo)
    out["result"] = stream.next_answer(timeout=60)
    stream.send_frame(b"not an image at all")
    out["bad_frame"] = stream.next_answer(timeout=60)
    out["changed"] = stream.change(threshold=0.9)
    stream.send_frame(photo)
    out["after_change"] = stream.next_answer(timeout=60)
    try:
        stream.change(threshold=7)
    except ValueError as refused:
        out["refused"] = str(refused)
try:
    Stream(config["url"], api_key="not-the-key-0123456789").next_answer(timeout=30)
except StreamClosed as closed:
    out["wrong_key"] = closed.code
print(json.dumps(out))
