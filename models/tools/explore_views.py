#!/usr/bin/env python3
"""Detection-quality exploration of YOLOX-nano views on the fixture photos.

Reproduces the detector pre/post-processing of /work/shared/models/yolox-nano/SOURCE.md in
numpy + onnxruntime (CPU):
  * BGR, raw 0-255 values, no mean/std, NCHW float32;
  * aspect-preserving resize with r = min(416/W, 416/H) to (int(W*r), int(H*r)) (YOLOX's own
    preproc truncates), bilinear, placed top-left on a 416x416 canvas filled with 114;
  * output rows [x, y, w, h, obj, 80 classes] decoded on the 52x52 / 26x26 / 13x13 grids:
    x,y = (raw + cell) * stride, w,h = exp(raw) * stride; cat score = obj * cls[15];
  * candidates >= scoreFloor, NMS at IoU 0.45, boxes / r (and view transforms undone).

Views (src/native/addon.ts DetectorView):
  plain      as above
  flip       the image mirrored left-right, then as plain; boxes mirrored back
  half       the image letterboxed at HALF the plain scale, centred on the 114 canvas
             (size (int(W*r/2), int(H*r/2)), offset ((416-w)//2, (416-h)//2))
  half_flip  half of the mirrored image

For each photo it computes the best cat score per view; a view set's score is the max over its
views. Reports recall on cat photos and false positives on no-cat photos at the cutoffs, per tag,
and the IoU of the best box with the manifest's rough box.

Usage:
  python3 models/tools/explore_views.py [--photos DIR] [--model FILE] [--json OUT] [--resample lanczos]
  python3 models/tools/explore_views.py --batch-check PATCHED.onnx   # batch 1 vs 4 equality + timing
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort
from PIL import Image

SIZE = 416
PAD = 114.0
STRIDES = (8, 16, 32)
CAT = 15
NMS_IOU = 0.45
FLOOR = 0.01  # exploration floor (lower than any manifest floor, to see the low scores)
VIEWS = ('plain', 'flip', 'half', 'half_flip')
CUTOFFS = (0.69, 0.5)
RESAMPLE = {'bilinear': Image.BILINEAR, 'bicubic': Image.BICUBIC, 'lanczos': Image.LANCZOS, 'nearest': Image.NEAREST}
_resample = Image.BILINEAR

DEFAULT_PHOTOS = Path('/work/shared/fixtures/photos')
DEFAULT_MODEL = Path(os.environ.get('CATCOMFORT_MODEL_MIRROR', '/work/shared/models')) / 'yolox-nano/yolox_nano.onnx'


def load_rgb(path: Path) -> Image.Image:
    img = Image.open(path)
    img.load()
    return img.convert('RGB')


def letterbox(img: Image.Image, view: str) -> tuple[np.ndarray, dict]:
    """Returns the CHW float32 BGR canvas and the transform back to image pixels."""
    W, H = img.size
    flip = view.endswith('flip')
    half = view.startswith('half')
    if flip:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    r = min(SIZE / W, SIZE / H)
    if half:
        r /= 2
    nw, nh = max(1, int(W * r)), max(1, int(H * r))
    dx, dy = ((SIZE - nw) // 2, (SIZE - nh) // 2) if half else (0, 0)
    canvas = np.full((SIZE, SIZE, 3), PAD, np.float32)
    canvas[dy:dy + nh, dx:dx + nw] = np.asarray(img.resize((nw, nh), _resample), np.float32)
    chw = canvas[:, :, ::-1].transpose(2, 0, 1)  # RGB -> BGR, HWC -> CHW
    return np.ascontiguousarray(chw), {'r': r, 'dx': dx, 'dy': dy, 'flip': flip, 'W': W, 'H': H}


_GRID = None


def grid() -> tuple[np.ndarray, np.ndarray]:
    global _GRID
    if _GRID is None:
        cells, strides = [], []
        for s in STRIDES:
            n = SIZE // s
            yv, xv = np.meshgrid(np.arange(n), np.arange(n), indexing='ij')
            cells.append(np.stack([xv, yv], -1).reshape(-1, 2))
            strides.append(np.full((n * n, 1), s))
        _GRID = (np.concatenate(cells).astype(np.float32), np.concatenate(strides).astype(np.float32))
    return _GRID


def iou(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    x0 = np.maximum(a[..., 0], b[..., 0]); y0 = np.maximum(a[..., 1], b[..., 1])
    x1 = np.minimum(a[..., 2], b[..., 2]); y1 = np.minimum(a[..., 3], b[..., 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area = lambda t: (t[..., 2] - t[..., 0]) * (t[..., 3] - t[..., 1])
    return inter / np.maximum(area(a) + area(b) - inter, 1e-9)


def nms(boxes: np.ndarray, scores: np.ndarray, thr: float) -> list[int]:
    order = np.argsort(-scores, kind='stable')
    keep: list[int] = []
    while order.size:
        i = int(order[0]); keep.append(i)
        order = order[1:][iou(boxes[i], boxes[order[1:]]) <= thr]
    return keep


def decode(out: np.ndarray, tf: dict, floor: float = FLOOR) -> list[tuple[float, list[float]]]:
    """One image's [3549, 85] output -> cat detections [(score, [x0,y0,x1,y1] image px)], best first."""
    cells, strides = grid()
    xy = (out[:, :2] + cells) * strides
    wh = np.exp(out[:, 2:4]) * strides
    score = out[:, 4] * out[:, 5 + CAT]
    m = score >= floor
    if not m.any():
        return []
    xy, wh, score = xy[m], wh[m], score[m]
    b = np.concatenate([xy - wh / 2, xy + wh / 2], 1)
    b[:, [0, 2]] -= tf['dx']; b[:, [1, 3]] -= tf['dy']
    b /= tf['r']
    if tf['flip']:
        b[:, [0, 2]] = tf['W'] - b[:, [2, 0]]
    b[:, [0, 2]] = b[:, [0, 2]].clip(0, tf['W']); b[:, [1, 3]] = b[:, [1, 3]].clip(0, tf['H'])
    keep = nms(b, score, NMS_IOU)
    return [(float(score[i]), b[i].tolist()) for i in keep]


def session(model: bytes | str) -> ort.InferenceSession:
    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(model, so, providers=['CPUExecutionProvider'])


def run_views(sess: ort.InferenceSession, img: Image.Image) -> dict[str, list]:
    res = {}
    for v in VIEWS:
        x, tf = letterbox(img, v)
        out = sess.run(None, {'images': x[None]})[0][0]
        res[v] = decode(out, tf)
    return res


def view_sets() -> list[tuple[str, ...]]:
    sets = []
    for k in range(1, len(VIEWS) + 1):
        sets.extend(itertools.combinations(VIEWS, k))
    return sets


def explore(photos: Path, model: Path, json_out: Path | None) -> None:
    manifest = json.loads((photos / 'manifest.json').read_text())['images']
    sess = session(str(model))
    rows = []
    for e in manifest:
        img = load_rgb(photos / e['file'])
        dets = run_views(sess, img)
        row = {'file': e['file'], 'group': e['group'], 'tag': e['tag'], 'box': e['box'], 'views': {}}
        for v, d in dets.items():
            best = d[0] if d else (0.0, None)
            ov = float(iou(np.array(best[1]), np.array(e['box'], float))) if best[1] and e['box'] else None
            row['views'][v] = {'score': best[0], 'box': best[1], 'iou': ov, 'n': len(d),
                               'second': d[1][0] if len(d) > 1 else 0.0}
        rows.append(row)

    # ---- per photo table
    print('## Best cat score per photo and view (IoU of that box with the manifest box)\n')
    print('| photo | tag | ' + ' | '.join(VIEWS) + ' |')
    print('|---|---|' + '---|' * len(VIEWS))
    for r in rows:
        cells = []
        for v in VIEWS:
            s = r['views'][v]
            cells.append(f"{s['score']:.3f}" + (f" ({s['iou']:.2f})" if s['iou'] is not None else ''))
        print(f"| {r['file']} | {r['tag']} | " + ' | '.join(cells) + ' |')

    # ---- per view set summary
    cats = [r for r in rows if r['group'] == 'cat']
    nocats = [r for r in rows if r['group'] == 'nocat']

    def setscore(r, vs):
        best = max(vs, key=lambda v: r['views'][v]['score'])
        return r['views'][best]['score'], r['views'][best]['iou']

    print('\n## View sets: recall on cat photos (20) / no-cat photos reaching the cutoff (19)\n')
    print('| views | cost | recall>=0.69 | recall>=0.5 | FP>=0.69 | FP>=0.5 | min cat | max no-cat | median IoU |')
    print('|---|---|---|---|---|---|---|---|---|')
    for vs in view_sets():
        cs = [setscore(r, vs) for r in cats]
        ns = [setscore(r, vs)[0] for r in nocats]
        rec = [sum(s >= c for s, _ in cs) for c in CUTOFFS]
        fp = [sum(s >= c for s in ns) for c in CUTOFFS]
        ious = [i for _, i in cs if i is not None]
        print(f"| {'+'.join(vs)} | {len(vs)} | {rec[0]}/20 | {rec[1]}/20 | {fp[0]}/19 | {fp[1]}/19 | "
              f"{min(s for s, _ in cs):.3f} | {max(ns):.3f} | {np.median(ious):.2f} |")

    print('\n## Per tag: recall>=0.69 / >=0.5, or FP>=0.69 / >=0.5\n')
    tags = sorted({(r['group'], r['tag']) for r in rows})
    key_sets = [('plain',), ('plain', 'flip'), ('plain', 'half'), ('plain', 'half_flip'), VIEWS]
    print('| group | tag | n | ' + ' | '.join('+'.join(vs) for vs in key_sets) + ' |')
    print('|---|---|---|' + '---|' * len(key_sets))
    for g, t in tags:
        rs = [r for r in rows if r['tag'] == t and r['group'] == g]
        cells = []
        for vs in key_sets:
            sc = [setscore(r, vs)[0] for r in rs]
            cells.append(f"{sum(s >= 0.69 for s in sc)} / {sum(s >= 0.5 for s in sc)}")
        print(f"| {g} | {t} | {len(rs)} | " + ' | '.join(cells) + ' |')

    if json_out:
        json_out.write_text(json.dumps(rows, indent=1))


def batch_check(patched: Path, photos: Path, model: Path) -> None:
    manifest = json.loads((photos / 'manifest.json').read_text())['images']
    files = [e['file'] for e in manifest]
    x = np.stack([letterbox(load_rgb(photos / f), 'plain')[0] for f in files])
    orig, dyn = session(str(model)), session(str(patched))
    print('patched input', dyn.get_inputs()[0].shape, 'output', dyn.get_outputs()[0].shape)
    ref = np.stack([orig.run(None, {'images': x[i:i + 1]})[0][0] for i in range(len(x))])
    one = np.stack([dyn.run(None, {'images': x[i:i + 1]})[0][0] for i in range(len(x))])
    n4 = len(x) // 4 * 4
    four = np.concatenate([dyn.run(None, {'images': x[i:i + 4]})[0] for i in range(0, n4, 4)])
    print(f'max |patched b1 - original| = {np.abs(one - ref).max():.3g}; '
          f'max |patched b4 - original| over {n4} images = {np.abs(four - ref[:n4]).max():.3g}')
    b4 = x[:4]
    for name, fn in [('original 4 x batch 1', lambda: [orig.run(None, {'images': b4[i:i + 1]}) for i in range(4)]),
                     ('patched  4 x batch 1', lambda: [dyn.run(None, {'images': b4[i:i + 1]}) for i in range(4)]),
                     ('patched  1 x batch 4', lambda: dyn.run(None, {'images': b4}))]:
        for _ in range(3):
            fn()
        ts = []
        for _ in range(20):
            t = time.perf_counter(); fn(); ts.append(time.perf_counter() - t)
        print(f'{name}: median {np.median(ts) * 1e3:.1f} ms, min {min(ts) * 1e3:.1f} ms (20 runs, CPU, '
              f'{os.cpu_count()} cores, ORT {ort.__version__})')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--photos', type=Path, default=DEFAULT_PHOTOS)
    ap.add_argument('--model', type=Path, default=DEFAULT_MODEL)
    ap.add_argument('--json', type=Path)
    ap.add_argument('--batch-check', type=Path, metavar='PATCHED')
    ap.add_argument('--resample', choices=sorted(RESAMPLE), default='bilinear',
                    help='PIL resampling filter of the letterbox resize (sensitivity check)')
    args = ap.parse_args()
    global _resample
    _resample = RESAMPLE[args.resample]
    if args.batch_check:
        batch_check(args.batch_check, args.photos, args.model)
    else:
        explore(args.photos, args.model, args.json)
    return 0


if __name__ == '__main__':
    sys.exit(main())
