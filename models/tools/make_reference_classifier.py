#!/usr/bin/env python3
"""Generate the *reference* comfort classifier of bc-legacy.

(bc-v1's reference is a head on its ImageNet backbone since pack 1.2.0:
src/tools/make-reference-head.ts.)

THIS NETWORK IS NOT TRAINED. Its weights are pseudo-random numbers drawn
from fixed seeds (numpy.random.default_rng); no data set, no labels and no
training step are involved. Its output is a deterministic function of the
pixels that varies from photo to photo, but it carries NO information about a
cat's comfort. It exists so that the whole pipeline (crop, resize, normalise,
ONNX Runtime session, batching, output index) can be built, tested and
benchmarked end to end with a real model file of a realistic shape, until a
trained classifier replaces it.

Output (ONNX opset 17, IR version 8):
  models/bc-legacy/classifier.onnx  "BC-Legacy" reference CNN ("original mood
                                     model"; 5x5 stem + max-pool, widths 8-16-32,
                                     a tanh hidden layer, seed 1970)
      input  `input`        float32 [N, 3, 224, 224] (N dynamic, dim_param "batch"),
                            RGB, (x/255 - ImageNet mean) / ImageNet std
      output `p_discomfort` float32 [N, 1] = sigmoid(logit_scale * (z + logit_bias))

The graphs are written with onnx.helper directly from numpy arrays (no torch
export), so the files are byte-reproducible: running this script twice gives
the same sha256 (it prints them). ir_version, producer and opset are pinned so
that the bytes do not depend on the installed onnx version.

logit_bias / logit_scale per network are constants written below. They were
chosen once with `--spread PHOTOS_DIR` (which runs the generated model on the
cat crops of the fixture photos and prints the raw logit statistics), so that
real cat crops give scores spread over (0, 1) instead of all ~0.5. The fixture
photos are NOT an input of the generator: the constants are literals here.

Usage:
  python3 models/tools/make_reference_classifier.py            # write both files, print sha256
  python3 models/tools/make_reference_classifier.py --spread /work/shared/fixtures/photos
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parents[2]
OPSET = 17
IR_VERSION = 8


@dataclass(frozen=True)
class Net:
    name: str
    out: Path
    seed: int
    logit_bias: float  # added to the raw logit z
    logit_scale: float  # multiplies (z + bias) before the sigmoid


NETS = [
    Net('bc-legacy-reference', REPO / 'models/bc-legacy/classifier.onnx', 1970, logit_bias=0.05, logit_scale=7.3),
]


class Builder:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.n = 0

    def _name(self, kind: str) -> str:
        self.n += 1
        return f'{kind}_{self.n}'

    def const(self, arr: np.ndarray, kind: str) -> str:
        name = self._name(kind)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(self, op: str, inputs: list[str], **attrs: object) -> str:
        out = self._name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out + '_node', **attrs))
        return out

    def conv(self, x: str, cin: int, cout: int, k: int, stride: int) -> str:
        fan_in = cin * k * k
        w = (self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / fan_in)).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.05).astype(np.float32)
        pad = k // 2
        return self.node('Conv', [x, self.const(w, 'w'), self.const(b, 'b')],
                         kernel_shape=[k, k], strides=[stride, stride], pads=[pad, pad, pad, pad])

    def dense(self, x: str, cin: int, cout: int) -> str:
        w = (self.rng.standard_normal((cin, cout)) * np.sqrt(1.0 / cin)).astype(np.float32)
        b = (self.rng.standard_normal(cout) * 0.05).astype(np.float32)
        return self.node('Gemm', [x, self.const(w, 'w'), self.const(b, 'b')])

    def head(self, z: str, bias: float, scale: float) -> str:
        z = self.node('Add', [z, self.const(np.array([bias], np.float32), 'logit_bias')])
        z = self.node('Mul', [z, self.const(np.array([scale], np.float32), 'logit_scale')])
        return z


def build(net: Net, with_head: bool = True) -> onnx.ModelProto:
    b = Builder(net.seed)
    x = 'input'
    # "original mood model": 5x5/4 stem, max-pool, two 3x3/2 convs, tanh hidden layer.
    x = b.node('Relu', [b.conv(x, 3, 8, 5, 4)])  # 56
    x = b.node('MaxPool', [x], kernel_shape=[2, 2], strides=[2, 2])  # 28
    x = b.node('Relu', [b.conv(x, 8, 16, 3, 2)])  # 14
    x = b.node('Relu', [b.conv(x, 16, 32, 3, 2)])  # 7
    x = b.node('Flatten', [b.node('GlobalAveragePool', [x])], axis=1)
    x = b.node('Tanh', [b.dense(x, 32, 8)])
    z = b.dense(x, 8, 1)
    if with_head:
        z = b.head(z, net.logit_bias, net.logit_scale)
        out_name = 'p_discomfort'
        b.nodes.append(helper.make_node('Sigmoid', [z], [out_name], name='p_discomfort_node'))
    else:
        out_name = 'logit'
        b.nodes.append(helper.make_node('Identity', [z], [out_name], name='logit_node'))
    graph = helper.make_graph(
        b.nodes, net.name,
        [helper.make_tensor_value_info('input', TensorProto.FLOAT, ['batch', 3, 224, 224])],
        [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, ['batch', 1])],
        initializer=b.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid('', OPSET)],
        producer_name='catcomfort make_reference_classifier.py',
        producer_version='1',
        doc_string='Reference classifier with UNTRAINED pseudo-random weights (seed %d); '
                   'its output carries no information about comfort.' % net.seed,
    )
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model, full_check=True)
    return model


def serialize(model: onnx.ModelProto) -> bytes:
    return model.SerializeToString(deterministic=True)


def preprocess_crop(path: Path, box: list[int], margin: float) -> np.ndarray:
    """The classifier preprocessing of models/bc-legacy/manifest.json: crop box (+margin), stretch to
    224x224, RGB, x/255, ImageNet mean/std, NCHW."""
    from PIL import Image

    img = Image.open(path).convert('RGB')
    W, H = img.size
    x0, y0, x1, y1 = box
    mw, mh = (x1 - x0) * margin, (y1 - y0) * margin
    crop = (max(0, round(x0 - mw)), max(0, round(y0 - mh)), min(W, round(x1 + mw)), min(H, round(y1 + mh)))
    a = np.asarray(img.crop(crop).resize((224, 224), Image.BILINEAR), np.float32) / 255.0
    a = (a - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    return a.transpose(2, 0, 1)[None]


def spread(photos: Path) -> None:
    import onnxruntime as ort

    manifest = json.loads((photos / 'manifest.json').read_text())
    crops = [preprocess_crop(photos / e['file'], e['box'], 0.1) for e in manifest['images'] if e['group'] == 'cat']
    batch = np.concatenate(crops)
    for net in NETS:
        for with_head in (False, True):
            sess = ort.InferenceSession(serialize(build(net, with_head)), providers=['CPUExecutionProvider'])
            y = sess.run(None, {'input': batch})[0][:, 0]
            label = 'raw logit z' if not with_head else 'p_discomfort'
            print(f'{net.name} {label}: mean {y.mean():.4f} std {y.std():.4f} '
                  f'min {y.min():.4f} max {y.max():.4f}')
            if not with_head:
                print(f'  suggested logit_bias {-float(np.median(y)):.6g} logit_scale {1.5 / float(y.std()):.6g}')
            else:
                print('  ' + ' '.join(f'{v:.3f}' for v in np.sort(y)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--spread', type=Path, help='photos dir: print score spread on cat crops, write nothing')
    args = ap.parse_args()
    if args.spread:
        spread(args.spread)
        return 0
    for net in NETS:
        data = serialize(build(net))
        net.out.parent.mkdir(parents=True, exist_ok=True)
        net.out.write_bytes(data)
        print(f'{hashlib.sha256(data).hexdigest()}  {net.out.relative_to(REPO)}  ({len(data)} bytes)')
    return 0


if __name__ == '__main__':
    sys.exit(main())
