#!/usr/bin/env python3
"""Crop-verifier analysis for the bc-v1 SSD cat detector (development tool only).

Question: can an ImageNet classifier (MobileNetV2, int8, ONNX Model Zoo) run on the detector's
crops keep cat look-alikes (lynx, cougar, cheetah, fox, raccoon, red panda, plush toys...) from
being reported as domestic cats, without losing real cats? This script reproduces the study:

 1. Candidates. Every photo of the labelled fixture sets (photos-dev: 221, photos: 39) goes
    through a numpy port of the service's detector path: decode (EXIF rotation, alpha flattened
    onto white, JPEG shrink-on-load by 8/4/2 as libvips does it), stretch to 300x300 with a
    triangle (antialiased bilinear) filter, x/127.5 - 1, NHWC; SSD anchors as
    src/graphs/ssd-anchors.ts, box decoding as native/ssd.cc, sigmoid of cat class 8, score
    floor 0.05, greedy NMS at IoU 0.45 (native/decoder.cc). Plain view and mirrored view. The
    plain view's candidates with raw score >= 0.3 (at most 5, score order) are cropped as
    native/pipeline.cc ClassifierCrop does (integer box + 10 % margin), stretched to 224x224 and
    classified; the full softmax is saved in OUT/candidates.json (reused unless --recompute).
 2. Class groups of ImageNet (by meaning, see GROUPS below) and their softmax mass per photo tag.
 3. Verifier rules evaluated on the `detected` candidates (calibrated confidence >= 0.69, i.e.
    raw >= 0.37): a photo is `detected` when one of its first K detected candidates passes.
    Compared with today's service (plain only, and plain + flip with min), per tag, with the
    cost (crops per photo) and the sensitivity of each parameter (+-20 %).
 4. The cat photos the recommended rule rejects and the no-cat photos it accepts.

Rule families (C = softmax mass on the domestic-cat classes, L = on wild cats + wolves/foxes +
other look-alike animals, D = on dogs, conf = the detector's calibrated confidence):
  a  C >= t                       b  L <= r*C               b+dog  L + D <= r*C
  c  L <= r*C and (C >= t or conf >= s)                      d  L <= l (a veto)
  d+dog  L + D <= l               d+c  L <= l and (C >= t or conf >= s)
(c's r, t, s are the manifest's verifier.rule maxLookalikeRatio, minCatMass, trustDetectorAbove.)

Usage (from the repository root; a Python with numpy, pillow and onnxruntime, e.g. the
bench/.venv that bench/README.md describes; CPU only, about 15 s for step 1, 20 s for the rest):
  python3 models/tools/verifier_analysis.py [--out /tmp/verifier] [--recompute]
      [--dev ../shared/fixtures/photos-dev] [--heldout ../shared/fixtures/photos]
      [--detector models/bc-v1/ssd_mobilenetv2_oidv4.onnx] [--manifest models/bc-v1/manifest.json]
      [--classifier ../shared/models/mobilenetv2-12-int8/mobilenetv2-12-int8.onnx]
      [--synset ../shared/models/mobilenetv2-12-int8/synset.txt]
      [--service-json PLAIN.json [--service-flip-json BOTH.json [--use-service-scores]]]
      [--rule 'd: L<=l' --params '{"l": 0.7}' --k 2] [--compare 'b: L<=r*C@{"r": 1}' ...] [--no-grid]
  --service-json: the port check, against the service's own scores:
      node dist/src/tools/eval-detector.js --precision fp32 --views plain --json PLAIN.json
      node dist/src/tools/eval-detector.js --precision fp32 --json BOTH.json    # plain+flip, min
  --use-service-scores: the rules then see the service's top scores instead of the port's (the
      port's crops and softmax stay).
  --rule/--params/--k: the recommended rule (sweeps, sensitivity, error lists); --compare: more
      rules for the per-tag tables, as a family name (its grid-best parameters) or NAME@JSON.
Prints Markdown on stdout (progress of step 1 on stderr). Development only: never run at install,
not part of the service, and its output is not a test.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
from collections import OrderedDict, defaultdict

import numpy as np
import onnxruntime as ort
from PIL import Image, ImageOps

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if not os.path.exists(os.path.join(REPO, 'models/bc-v1/manifest.json')):
    REPO = os.getcwd()  # a copy outside the repository: run it from the repository root
SHARED = os.path.join(os.path.dirname(REPO), 'shared')

MAX_CANDIDATES = 5
CANDIDATE_FLOOR = 0.3  # raw score: calibrated 0.5 (low_confidence)
DETECTED_RAW = 0.37    # raw score: calibrated 0.69 (detected)

# ---------------------------------------------------------------------------------------------
# ImageNet class groups (0-based indices of synset.txt), chosen by the classes' meaning.
# ---------------------------------------------------------------------------------------------
R = lambda a, b: list(range(a, b + 1))  # noqa: E731  inclusive range
GROUPS = OrderedDict([
    # tabby, tiger cat, Persian, Siamese, Egyptian cat
    ('cat', R(281, 285)),
    # cougar, lynx, leopard, snow leopard, jaguar, lion, tiger, cheetah
    ('wildcat', R(286, 293)),
    # timber/white/red wolf, coyote, dingo, dhole, African hunting dog, hyena; red/kit/Arctic/grey fox
    ('canid', R(269, 280)),
    # furry wild mammals and toys a cat crop can be confused with
    ('other', [105, 106,            # koala, wombat
               294, 295, 296, 297,  # brown, black, polar, sloth bear
               298, 299,            # mongoose, meerkat
               330, 331, 332, 333,  # wood rabbit, hare, Angora rabbit, hamster
               334, 335, 336, 337, 338,  # porcupine/hedgehog, fox squirrel, marmot, beaver, guinea pig
               356, 357, 358, 359, 360, 361, 362,  # weasel, mink, polecat, ferret, otter, skunk, badger
               383, 387, 388,       # ring-tailed lemur ("Madagascar cat"), red panda, giant panda
               850]),               # teddy bear
    # domestic dogs (Chihuahua .. Mexican hairless)
    ('dog', R(151, 268)),
])
LOOKALIKE = GROUPS['wildcat'] + GROUPS['canid'] + GROUPS['other']


def load_synset(path):
    with open(path) as f:
        return [line.strip().split(' ', 1)[1] for line in f if line.strip()]


# ---------------------------------------------------------------------------------------------
# Step 1: detector port and crops
# ---------------------------------------------------------------------------------------------
def ssd_anchors(cfg):
    """Port of src/graphs/ssd-anchors.ts ssdAnchors: [A, 4] as (yc, xc, h, w)."""
    sizes = cfg['featureMapSizes']
    n = len(sizes)

    def scale(i):
        if i >= n:
            return 1.0
        if n == 1:
            return cfg['minScale']
        return cfg['minScale'] + (cfg['maxScale'] - cfg['minScale']) * i / (n - 1)

    anchors = []
    for layer, size in enumerate(sizes):
        s = scale(layer)
        if layer == 0 and cfg['reduceBoxesInLowestLayer']:
            specs = [(0.1, 1.0), (s, 2.0), (s, 0.5)]
        else:
            specs = [(s, r) for r in cfg['aspectRatios']]
            if cfg['interpolatedScaleAspectRatio'] > 0:
                specs.append((math.sqrt(s * scale(layer + 1)), cfg['interpolatedScaleAspectRatio']))
        for y in range(size):
            for x in range(size):
                for box_scale, ratio in specs:
                    root = math.sqrt(ratio)
                    anchors.append(((y + 0.5) / size, (x + 0.5) / size, box_scale / root, box_scale * root))
    return np.array(anchors, dtype=np.float64)


def decode_ssd(enc, logits, anchors, scales, cat_class, floor, width, height):
    """native/ssd.cc Decode: boxes [N, 4] (x1, y1, x2, y2) in canvas pixels and scores [N]."""
    score = 1.0 / (1.0 + np.exp(-logits[:, cat_class].astype(np.float64)))
    keep = score >= floor
    e = enc[keep].astype(np.float64)
    a = anchors[keep]
    yc = e[:, 0] / scales[0] * a[:, 2] + a[:, 0]
    xc = e[:, 1] / scales[1] * a[:, 3] + a[:, 1]
    h = np.exp(e[:, 2] / scales[2]) * a[:, 2]
    w = np.exp(e[:, 3] / scales[3]) * a[:, 3]
    boxes = np.stack([(xc - w / 2) * width, (yc - h / 2) * height, (xc + w / 2) * width, (yc + h / 2) * height], 1)
    ok = np.isfinite(boxes).all(1)
    return boxes[ok].astype(np.float32), score[keep][ok].astype(np.float32)


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    ua = max(0.0, a[2] - a[0]) * max(0.0, a[3] - a[1]) + max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1]) - inter
    return inter / ua if ua > 0 else 0.0


def nms(boxes, scores, iou_threshold):
    """native/decoder.cc NonMaxSuppression: stable sort by score, greedy, suppress IoU > t."""
    order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))  # Python's sort is stable
    kept = []
    for i in order:
        if all(iou(boxes[i], boxes[k]) <= iou_threshold for k in kept):
            kept.append(i)
    return kept


def calibrate(knots, raw):
    """native/decoder.cc Calibrate: piecewise linear, clamped; rounded to 6 digits as the service."""
    if raw <= knots[0][0]:
        v = knots[0][1]
    elif raw >= knots[-1][0]:
        v = knots[-1][1]
    else:
        for (x0, y0), (x1, y1) in zip(knots, knots[1:]):
            if raw <= x1:
                v = y0 + (y1 - y0) * (raw - x0) / (x1 - x0) if x1 > x0 else y1
                break
    return round(min(1.0, max(0.0, v)), 6)


def largest_shrink(w, h, need_w, need_h):
    for s in (8, 4, 2):
        if w / s >= need_w and h / s >= need_h:
            return s
    return 1


def load_rgb(path, shrink_for=None):
    """Decode as native/decode.cc: EXIF rotation, alpha onto white, RGB. shrink_for(w, h) -> JPEG
    shrink-on-load factor (DCT scaling, as libvips). Returns (image, source_w, source_h)."""
    img = Image.open(path)
    orientation = img.getexif().get(0x0112, 1) if hasattr(img, 'getexif') else 1
    sw, sh = img.size
    if orientation in (5, 6, 7, 8):
        sw, sh = sh, sw
    if shrink_for is not None and img.format == 'JPEG':
        s = shrink_for(sw, sh)
        if s > 1:
            w0, h0 = img.size
            img.draft('RGB', (w0 // s, h0 // s))  # PIL picks scale = min(w0 // w, h0 // h)
    img = ImageOps.exif_transpose(img)
    if img.mode in ('RGBA', 'LA', 'PA') or (img.mode == 'P' and 'transparency' in img.info):
        img = img.convert('RGBA')
        bg = Image.new('RGBA', img.size, (255, 255, 255, 255))
        img = Image.alpha_composite(bg, img)
    return img.convert('RGB'), sw, sh


class Detector:
    def __init__(self, model, manifest):
        det = json.load(open(manifest))['detector']
        self.det = det
        out = det['output']
        self.anchors = ssd_anchors(out['anchors'])
        self.scales = out['boxCoderScales']
        self.cat = out['catClassIndex']
        self.floor = det['scoreFloor']
        self.nms_iou = det['nmsIou']
        self.knots = det['calibration']
        pp = det['preprocess']
        assert pp['resize'] == 'stretch' and pp['layout'] == 'nhwc' and pp['channelOrder'] == 'rgb'
        self.size = (pp['width'], pp['height'])
        self.scale, self.mean = pp['scale'], pp['mean']
        opts = ort.SessionOptions()
        self.session = ort.InferenceSession(model, opts, providers=['CPUExecutionProvider'])
        self.input = self.session.get_inputs()[0].name

    def shrink_for(self, w, h):
        return largest_shrink(w, h, *self.size)

    def tensor(self, img):
        x = np.asarray(img.resize(self.size, Image.BILINEAR), dtype=np.float32)
        return (x * np.float32(self.scale) - np.asarray(self.mean, np.float32))

    def run(self, img, source_w, source_h):
        """Plain and flipped views -> per view the NMS survivors [(score, box in source px)]."""
        views = [img, img.transpose(Image.FLIP_LEFT_RIGHT)]
        enc, logits = self.session.run(None, {self.input: np.stack([self.tensor(v) for v in views])})
        cw, ch = self.size
        sx, sy = source_w / cw, source_h / ch
        result = []
        for v in range(2):
            boxes, scores = decode_ssd(enc[v], logits[v], self.anchors, self.scales, self.cat, self.floor, cw, ch)
            kept = nms(boxes, scores, self.nms_iou)
            cands = []
            for i in kept:
                x1, y1, x2, y2 = (float(b) for b in boxes[i])
                if v == 1:  # mirror back
                    x1, x2 = cw - x2, cw - x1
                box = [x1 * sx, y1 * sy, x2 * sx, y2 * sy]
                # the service's integer box (pipeline.cc: lround of the clamped source box)
                ibox = [int(math.floor(min(max(box[k], 0), (source_w, source_h)[k % 2]) + 0.5)) for k in range(4)]
                cands.append((float(scores[i]), ibox))
            result.append(cands)
        return result


def img_shrink(img, sw, sh):
    return max(1, round(max(sw / img.size[0], sh / img.size[1])))


def classifier_crop(box, margin, w, h):
    """native/pipeline.cc ClassifierCrop."""
    bw, bh = box[2] - box[0], box[3] - box[1]
    x1 = min(max(math.floor(box[0] - bw * margin), 0), w - 1)
    y1 = min(max(math.floor(box[1] - bh * margin), 0), h - 1)
    x2 = min(max(math.ceil(box[2] + bw * margin), x1 + 1), w)
    y2 = min(max(math.ceil(box[3] + bh * margin), y1 + 1), h)
    return x1, y1, x2, y2


class Classifier:
    MEAN = np.array([0.485, 0.456, 0.406], np.float32)
    STD = np.array([0.229, 0.224, 0.225], np.float32)

    def __init__(self, model):
        self.session = ort.InferenceSession(model, providers=['CPUExecutionProvider'])
        self.input = self.session.get_inputs()[0].name

    def softmax(self, crops):
        x = np.stack([(np.asarray(c, np.float32) / 255.0 - self.MEAN) / self.STD for c in crops]).transpose(0, 3, 1, 2)
        logits = self.session.run(['output'], {self.input: x.astype(np.float32)})[0].astype(np.float64)
        logits -= logits.max(1, keepdims=True)
        p = np.exp(logits)
        return p / p.sum(1, keepdims=True)


def compute_candidates(args, synset):
    detector = Detector(args.detector, args.manifest)
    classifier = Classifier(args.classifier)
    margin = json.load(open(args.manifest))['classifier'].get('cropMargin', 0.1)
    photos = []
    for set_name, folder in (('dev', args.dev), ('photos', args.heldout)):
        for entry in json.load(open(os.path.join(folder, 'manifest.json')))['images']:
            path = os.path.join(folder, entry['file'])
            img, sw, sh = load_rgb(path, detector.shrink_for)
            plain, flip = detector.run(img, sw, sh)
            cands = [c for c in plain if c[0] >= CANDIDATE_FLOOR][:MAX_CANDIDATES]
            # below the floor, the top box is still classified as a probe (step 2's look at how
            # look-alikes that the detector misses would be classified), never used by a rule
            probe = plain[:1] if plain and not cands else []
            det_shrink = img_shrink(img, sw, sh)
            crops = []
            for score, box in cands + probe:
                c = classifier_crop(box, margin, sw, sh)
                # pipeline.cc CropShrink: decode again, finer, when the detector's shrink-on-load
                # leaves the crop smaller than 224x224
                src = img
                if det_shrink > 1:
                    s = largest_shrink(c[2] - c[0], c[3] - c[1], 224, 224)
                    if s < det_shrink:
                        src = load_rgb(path, lambda w, h, s=s: s)[0]
                fx, fy = sw / src.size[0], sh / src.size[1]
                crops.append(src.resize((224, 224), Image.BILINEAR, box=(c[0] / fx, c[1] / fy, c[2] / fx, c[3] / fy)))
            probs = classifier.softmax(crops) if crops else []
            label = entry.get('box')
            photo = {
                'set': set_name, 'file': entry['file'], 'group': entry['group'], 'tag': entry['tag'],
                'note': entry.get('note'), 'cat_count': entry.get('cat_count'), 'label': label,
                'width': sw, 'height': sh,
                'plain_top': plain[0][0] if plain else -1.0,
                'flip_top': flip[0][0] if flip else -1.0,
                'flip_candidates': [{'raw': s, 'box': b} for s, b in flip if s >= CANDIDATE_FLOOR][:MAX_CANDIDATES],
                'candidates': [],
                'probes': [],
            }
            for rank, ((score, box), p) in enumerate(zip(cands + probe, probs)):
                top5 = np.argsort(-p)[:5]
                photo['candidates' if rank < len(cands) else 'probes'].append({
                    'rank': rank, 'raw': score, 'confidence': calibrate(detector.knots, score), 'box': box,
                    'iou': round(iou(box, label), 4) if label else None,
                    'top5': [[int(k), synset[k], round(float(p[k]), 4)] for k in top5],
                    'softmax': [float('%.4g' % v) for v in p],
                })
            photos.append(photo)
            print(f"  {set_name}/{entry['file']}: plain {photo['plain_top']:.3f} flip {photo['flip_top']:.3f}"
                  f" candidates {len(cands)}", file=sys.stderr)
    return photos


# ---------------------------------------------------------------------------------------------
# Step 2-4: masses, rules, tables
# ---------------------------------------------------------------------------------------------
CAT_TAGS = ['face_closeup', 'full_body', 'small', 'multi', 'dark', 'with_dog', 'with_person', 'unusual']
NOCAT_TAGS = ['no_cat_dog', 'no_cat_wildcat_or_lookalike', 'no_cat_scene', 'no_cat_other']


def add_masses(photos):
    for ph in photos:
        for c in ph['candidates'] + ph.get('probes', []):
            p = np.asarray(c['softmax'])
            m = {g: float(p[idx].sum()) for g, idx in GROUPS.items()}
            m['L'] = m['wildcat'] + m['canid'] + m['other']
            m['C'] = m['cat']
            c['mass'] = m


def tags_of(photos):
    present = {(p['group'], p['tag']) for p in photos}
    return [('cat', t) for t in CAT_TAGS if ('cat', t) in present] + \
           [('nocat', t) for t in NOCAT_TAGS if ('nocat', t) in present] + \
           sorted(k for k in present if k[1] not in CAT_TAGS + NOCAT_TAGS)


def print_masses(photos):
    print('\n## Step 2: mean softmax mass of the top candidate crop, per tag (photos with a candidate >= 0.3)\n')
    cols = list(GROUPS) + ['L']
    print('| set | group/tag | n | ' + ' | '.join(cols) + ' | top-1 class is cat | top-1 in L |')
    print('|---|---|---:|' + '---:|' * (len(cols) + 2))
    for set_name in ('dev', 'photos'):
        sub = [p for p in photos if p['set'] == set_name and p['candidates']]
        for g, t in tags_of(sub):
            ps = [p for p in sub if p['group'] == g and p['tag'] == t]
            ms = [p['candidates'][0]['mass'] for p in ps]
            top1 = [p['candidates'][0]['top5'][0][0] for p in ps]
            row = [f"{np.mean([m[c] for m in ms]):.2f}" for c in cols]
            print(f"| {set_name} | {g}/{t} | {len(ps)} | " + ' | '.join(row) +
                  f" | {sum(k in GROUPS['cat'] for k in top1)} | {sum(k in LOOKALIKE for k in top1)} |")

    print('\n### Look-alike and other-animal photos: the top box\'s crop, whatever its score '
          '(probe = below the 0.3 candidate floor, not used by any rule)\n')
    print('| file | note | raw | C | L | dog | top-3 |')
    print('|---|---|---:|---:|---:|---:|---|')
    for p in photos:
        if p['tag'] not in ('no_cat_wildcat_or_lookalike', 'no_cat_other'):
            continue
        c = (p['candidates'] or p.get('probes') or [None])[0]
        if c is None:
            print(f"| {p['file']} | {p['note']} | none | | | | |")
            continue
        m = c['mass']
        print(f"| {p['file']} | {p['note']} | {c['raw']:.3f} | {m['C']:.2f} | {m['L']:.2f} | {m['dog']:.2f} | "
              + ', '.join(f'{n.split(",")[0]} {q:.2f}' for _, n, q in c['top5'][:3]) + ' |')
    print('\nHighest L among the candidates each cat photo would need (the lowest L among its first 2 '
          'detected candidates), photos-dev, top 8:')
    need = []
    for p in photos:
        det = [c for c in p['candidates'] if c['raw'] >= DETECTED_RAW][:2]
        if p['group'] == 'cat' and det:
            need.append((min(c['mass']['L'] for c in det), p['file']))
    print('  ' + ', '.join(f'{f} {v:.3f}' for v, f in sorted(need, reverse=True)[:8]))
    looks = [min(c['mass']['L'] for c in p['candidates'] if c['raw'] >= DETECTED_RAW)
             for p in photos if p['group'] == 'nocat' and p['tag'] == 'no_cat_wildcat_or_lookalike'
             and any(c['raw'] >= DETECTED_RAW for c in p['candidates'])]
    print(f'Lowest L of a detected look-alike candidate: {min(looks):.3f} (of {len(looks)} photos)' if looks else '')


def make_rules():
    """The rule families: name -> (default params, factory(params) -> predicate(candidate))."""
    C = lambda c: c['mass']['C']  # noqa: E731
    L = lambda c: c['mass']['L']  # noqa: E731
    D = lambda c: c['mass']['dog']  # noqa: E731
    conf = lambda c: c['confidence']  # noqa: E731
    return OrderedDict([
        # (a) the crop must look like a domestic cat
        ('a: C>=t', ({'t': 0.1}, lambda P: lambda c: C(c) >= P['t'])),
        # (b) look-alike mass at most r times the cat mass
        ('b: L<=r*C', ({'r': 1.0}, lambda P: lambda c: L(c) <= P['r'] * C(c))),
        # (b+dog) the same with the dogs counted as look-alikes
        ('b+dog: L+D<=r*C', ({'r': 1.0}, lambda P: lambda c: L(c) + D(c) <= P['r'] * C(c))),
        # (c) (b), and the crop looks like a cat or the detector is very sure
        ('c: L<=r*C & (C>=t|conf>=s)', ({'r': 1.0, 't': 0.1, 's': 0.9},
            lambda P: lambda c: L(c) <= P['r'] * C(c) and (C(c) >= P['t'] or conf(c) >= P['s']))),
        # (d) a veto: reject a crop that looks like a wild / look-alike animal (absolute ceiling
        # on L); whatever else the crop looks like (hairless cat -> "Mexican hairless", a cat
        # behind a laptop -> "desk") the detector's word stands
        ('d: L<=l', ({'l': 0.7}, lambda P: lambda c: L(c) <= P['l'])),
        # (d+dog) the veto with dogs counted as look-alikes
        ('d+dog: L+D<=l', ({'l': 0.7}, lambda P: lambda c: L(c) + D(c) <= P['l'])),
        # (d+c) the veto, and the crop looks like a cat or the detector is very sure
        ('d+c: L<=l & (C>=t|conf>=s)', ({'l': 0.7, 't': 0.1, 's': 0.9},
            lambda P: lambda c: L(c) <= P['l'] and (C(c) >= P['t'] or conf(c) >= P['s']))),
    ])


def photo_detected(photo, predicate, k, flip):
    """True when one of the first k detected candidates passes (k=None: no verifier; the photo's
    top score decides, as today). flip: the photo's min(plain top, flip top) must reach the cutoff
    too (the service's viewCombine min), the verifier then runs on the plain view's candidates."""
    top = min(photo['plain_top'], photo['flip_top']) if flip else photo['plain_top']
    if top < DETECTED_RAW:
        return False, 0
    det = [c for c in photo['candidates'] if c['raw'] >= DETECTED_RAW]
    if predicate is None:
        return True, 0
    crops = 0
    for c in det[:k]:
        crops += 1
        if predicate(c):
            return True, crops
    return False, crops


def evaluate(photos, predicate, k, flip):
    per_tag = defaultdict(int)
    crops = 0
    ok = {}
    for p in photos:
        d, n = photo_detected(p, predicate, k, flip)
        ok[p['file']] = d
        per_tag[(p['group'], p['tag'])] += d
        per_tag[(p['group'], '*')] += d
        crops += n
    per_tag['gated'] = sum(photo_detected(p, None, k, flip)[0] for p in photos)
    return per_tag, crops / max(1, len(photos)), ok


def summary(per_tag):
    return (per_tag[('cat', '*')], per_tag[('nocat', '*')], per_tag[('nocat', 'no_cat_wildcat_or_lookalike')])


def print_rule_table(photos, configs, title):
    tags = tags_of(photos)
    counts = {(g, t): sum(p['group'] == g and p['tag'] == t for p in photos) for g, t in tags}
    results = [(name, evaluate(photos, pred, k, flip)) for name, pred, k, flip in configs]
    print(f'\n{title}\n')
    print('| group/tag | n | ' + ' | '.join(name for name, _ in results) + ' |')
    print('|---|---:|' + '---:|' * len(results))
    for g, t in tags:
        print(f'| {g}/{t} | {counts[g, t]} | ' + ' | '.join(str(r[0][g, t]) for _, r in results) + ' |')
    for g in ('cat', 'nocat'):
        n = sum(p['group'] == g for p in photos)
        print(f'| **{g} (all)** | {n} | ' + ' | '.join(f'**{r[0][g, "*"]}**' for _, r in results) + ' |')
    print('| crops / photo | | ' + ' | '.join(f'{r[1]:.2f}' for _, r in results) + ' |')
    print('| crops / photo the detector passes | | ' + ' | '.join(
        f'{r[1] * len(photos) / max(1, r[0]["gated"]):.2f}' for _, r in results) + ' |')
    return results


def grid_search(dev, rules):
    """Best parameters per rule family on photos-dev, by (targets met, cats - 5*nocat)."""
    grids = {
        't': [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3],
        'r': [0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0],
        'l': [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9],
        's': [0.69, 0.75, 0.8, 0.85, 0.9, 0.95, 1.01],  # 0.69: every detected crop is "very sure"
    }
    print('\n## Step 3a: best parameters per rule family on photos-dev (plain view; K = 1, 2, 3)\n')
    print('Grid: %s; ties go to the first grid value.' % grids)
    print('Targets: cat detected >= 109/118, no-cat <= 1/103, look-alikes <= 1/27. Score = targets met, '
          'then cats - 5 x no-cats. Today, plain only: %d / %d / %d; plain+flip min: %d / %d / %d.\n'
          % (summary(evaluate(dev, None, 1, False)[0]) + summary(evaluate(dev, None, 1, True)[0])))
    print('| rule | K | params | cats | no-cats | look-alikes | crops/photo |')
    print('|---|---:|---|---:|---:|---:|---:|')
    best = {}
    for name, (defaults, factory) in rules.items():
        keys = list(defaults)
        for k in (1, 2, 3):
            scored = []
            for values in itertools.product(*(grids[key] for key in keys)):
                P = dict(zip(keys, values))
                pt, cost, _ = evaluate(dev, factory(P), k, False)
                cats, nocats, looks = summary(pt)
                met = (cats >= 109) + (nocats <= 1) + (looks <= 1)
                scored.append(((met, cats - 5 * nocats, -cost), P, cats, nocats, looks, cost))
            scored.sort(key=lambda s: s[0], reverse=True)
            _, P, cats, nocats, looks, cost = scored[0]
            best[name, k] = P
            print(f'| {name} | {k} | {P} | {cats} | {nocats} | {looks} | {cost:.2f} |')
    return best


def sensitivity(dev, name, factory, P, k):
    print(f'\n## Sensitivity of `{name}` {P}, K={k}, plain view (cats / no-cats / look-alikes on photos-dev)\n')
    print('| parameter | -20 % | as chosen | +20 % |')
    print('|---|---|---|---|')
    base = summary(evaluate(dev, factory(P), k, False)[0])
    for key in P:
        row = []
        for f in (0.8, 1.2):
            Q = dict(P)
            Q[key] = P[key] * f
            row.append('%s=%.3g: %d / %d / %d' % ((key, Q[key]) + summary(evaluate(dev, factory(Q), k, False)[0])))
        print(f'| {key} | {row[0]} | %d / %d / %d | {row[1]} |' % base)
    if not P:
        print('| (none) | | %d / %d / %d | |' % base)


def fmt_top5(c):
    return ', '.join(f'{name.split(",")[0]} {p:.2f}' for _, name, p in c['top5'])


def print_photo(p, k, kind):
    print(f"- {kind}: {p['set']}/{p['file']} [{p['tag']}] {p['note'] or ''} (raw plain {p['plain_top']:.3f}, "
          f"flip {p['flip_top']:.3f})")
    for c in [c for c in p['candidates'] if c['raw'] >= DETECTED_RAW][:k]:
        m = c['mass']
        print(f"    #{c['rank']} raw {c['raw']:.3f} conf {c['confidence']:.3f} IoU {c['iou']} "
              f"C {m['C']:.3f} L {m['L']:.3f} dog {m['dog']:.3f}: {fmt_top5(c)}")


def list_missed(photos, flip):
    view = 'plain+flip (min)' if flip else 'plain'
    print(f'\n## Cat photos the detector itself misses, {view} (no verifier can bring them back)\n')
    for p in photos:
        if p['group'] == 'cat' and not photo_detected(p, None, 1, flip)[0]:
            print(f"- {p['set']}/{p['file']} [{p['tag']}] {p['note'] or ''} (raw plain {p['plain_top']:.3f}, "
                  f"flip {p['flip_top']:.3f})")


def list_errors(photos, predicate, k, flip, label):
    """Step 4: cats the detector passes and the rule rejects; no-cat photos the rule accepts."""
    print(f'\n## Step 4: {label}\n')
    n = 0
    for p in photos:
        det_today = photo_detected(p, None, k, flip)[0]
        det = photo_detected(p, predicate, k, flip)[0]
        if p['group'] == 'cat' and det_today and not det:
            print_photo(p, k, 'REJECTED cat')
        elif p['group'] == 'nocat' and det:
            print_photo(p, k, 'ACCEPTED no-cat')
        else:
            continue
        n += 1
    if not n:
        print('- none')


def use_service_scores(photos, plain_path, flip_path, knots):
    """Replace the port's top plain score (and its top candidate's, when the boxes agree) by the
    service's, and the plain+flip min by the service's: the rules then see the service's gate."""
    plain = {(r['set'], r['file']): r for r in json.load(open(plain_path))}
    both = {(r['set'], r['file']): r for r in json.load(open(flip_path))} if flip_path else {}
    for p in photos:
        r = plain.get((p['set'], p['file']))
        if r is None:
            continue
        p['plain_top'] = r['rawScore'] if r['box'] else -1.0
        if p['candidates'] and r['box'] and iou(p['candidates'][0]['box'], r['box']) >= 0.5:
            p['candidates'][0]['raw'] = r['rawScore']
            p['candidates'][0]['confidence'] = calibrate(knots, r['rawScore'])
        elif r['box'] and r['rawScore'] >= CANDIDATE_FLOOR:
            # the port has no matching candidate: the best port candidate stands in for it
            src = (p['candidates'] or p.get('probes') or [None])[0]
            if src is not None:
                c = dict(src, raw=r['rawScore'], confidence=calibrate(knots, r['rawScore']), box=r['box'])
                p['candidates'] = [c] + [x for x in p['candidates'] if x is not src]
        b = both.get((p['set'], p['file']))
        if b is not None:  # the min of the two views -> as flip_top (min(plain, flip) = that)
            p['flip_top'] = b['rawScore'] if b['box'] else -1.0
        p['candidates'].sort(key=lambda c: -c['raw'])


def compare_service(photos, path):
    """Port check: the port's plain top raw score vs the service's (eval-detector.js --views plain
    --json); no candidate at all counts as 0 on both sides."""
    svc = {(r['set'], r['file']): r['rawScore'] for r in json.load(open(path))}
    diffs = []
    for p in photos:
        key = (p['set'], p['file'])
        if key in svc:
            port = max(p['plain_top'], 0.0)
            diffs.append((abs(port - svc[key]), p['file'], port, svc[key]))
    d = np.array([x[0] for x in diffs])
    print(f'\n## Port check: plain top raw score vs the service ({os.path.basename(path)}), {len(d)} photos\n')
    print(f'|diff| <= 0.001: {np.sum(d <= 0.001)}, <= 0.005: {np.sum(d <= 0.005)}, <= 0.01: {np.sum(d <= 0.01)}, '
          f'<= 0.02: {np.sum(d <= 0.02)}, > 0.02: {np.sum(d > 0.02)}; median {np.median(d):.4f}, max {d.max():.4f}')
    cross = [x for x in diffs if (x[2] >= DETECTED_RAW) != (x[3] >= DETECTED_RAW)]
    print('On different sides of the detected cutoff (raw 0.37): ' +
          (', '.join(f'{x[1]} (port {x[2]:.3f}, service {x[3]:.3f})' for x in cross) or 'none'))
    print('Largest differences: ' + ', '.join(f'{x[1]} {x[2]:.3f} vs {x[3]:.3f}' for x in sorted(diffs, reverse=True)[:6]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dev', default=os.path.join(SHARED, 'fixtures/photos-dev'))
    ap.add_argument('--heldout', default=os.path.join(SHARED, 'fixtures/photos'))
    ap.add_argument('--detector', default=os.path.join(REPO, 'models/bc-v1/ssd_mobilenetv2_oidv4.onnx'))
    ap.add_argument('--manifest', default=os.path.join(REPO, 'models/bc-v1/manifest.json'))
    ap.add_argument('--classifier', default=os.path.join(SHARED, 'models/mobilenetv2-12-int8/mobilenetv2-12-int8.onnx'))
    ap.add_argument('--synset', default=os.path.join(SHARED, 'models/mobilenetv2-12-int8/synset.txt'))
    ap.add_argument('--out', default='/tmp/verifier', help='where candidates.json is written / read')
    ap.add_argument('--recompute', action='store_true', help='run step 1 even when OUT/candidates.json exists')
    ap.add_argument('--service-json', help='eval-detector.js --views plain --json output: the port check')
    ap.add_argument('--service-flip-json', help='eval-detector.js --json output (plain+flip, min)')
    ap.add_argument('--use-service-scores', action='store_true',
                    help="evaluate with the service's top scores (needs --service-json, --service-flip-json)")
    ap.add_argument('--rule', default='d: L<=l', help='the recommended rule family (steps 3b, 3d, 4)')
    ap.add_argument('--params', default='{"l": 0.7}', help='its parameters, JSON')
    ap.add_argument('--k', type=int, default=2, help='detected candidates the verifier may try per photo')
    ap.add_argument('--compare', nargs='*',
                    default=['b: L<=r*C@{"r": 1}', 'c: L<=r*C & (C>=t|conf>=s)@{"r": 1, "t": 0.1, "s": 0.9}'],
                    help='other rules for the per-tag tables: a family name (its grid-best parameters '
                         'at K) or NAME@JSON')
    ap.add_argument('--no-grid', action='store_true', help='skip the parameter grid search')
    args = ap.parse_args()

    synset = load_synset(args.synset)
    os.makedirs(args.out, exist_ok=True)
    cand_path = os.path.join(args.out, 'candidates.json')
    if args.recompute or not os.path.exists(cand_path):
        print('Step 1: detector + crops ...', file=sys.stderr)
        photos = compute_candidates(args, synset)
        with open(cand_path, 'w') as f:
            json.dump({'groups': GROUPS, 'photos': photos}, f)
    photos = json.load(open(cand_path))['photos']
    add_masses(photos)
    print('# Crop-verifier analysis (models/tools/verifier_analysis.py)')
    if args.service_json:
        compare_service(photos, args.service_json)
    if args.use_service_scores:
        knots = json.load(open(args.manifest))['detector']['calibration']
        use_service_scores(photos, args.service_json, args.service_flip_json, knots)
        print("\n**Scores: the service's own top raw scores (plain; plain+flip min) replace the port's.**")

    print('\n## Class groups (ImageNet indices, 0-based; L = wildcat + canid + other, C = cat)\n')
    for g, idx in GROUPS.items():
        print(f"- {g}: {idx}\n    " + '; '.join(f'{k} {synset[k].split(",")[0]}' for k in idx))
    print_masses(photos)

    rules = make_rules()
    dev = [p for p in photos if p['set'] == 'dev']
    held = [p for p in photos if p['set'] == 'photos']
    best = {} if args.no_grid else grid_search(dev, rules)

    # sweeps of the recommended rule's parameters: where the plateau is
    name = args.rule
    defaults, factory = rules[name]
    P = dict(defaults, **json.loads(args.params))
    for key in P:
        print(f'\n## Step 3b: sweep of {key} in `{name}` {P} on photos-dev: cats / no-cats / look-alikes\n')
        print('| ' + key + ' | ' + ' | '.join(f'K={k} {v}' for v in ('plain', 'plain+flip') for k in (1, 2, 3)) + ' |')
        print('|---:|' + '---|' * 6)
        for f in (0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4):
            Q = dict(P, **{key: round(P[key] * f, 4)})
            cells = ['%d / %d / %d' % summary(evaluate(dev, factory(Q), k, flip)[0])
                     for flip in (False, True) for k in (1, 2, 3)]
            print(f'| {Q[key]} | ' + ' | '.join(cells) + ' |')

    # per-tag tables: today vs the chosen rules, plain only and with the flip view
    chosen = [(name, P)]
    for other in args.compare:
        rname, _, js = other.partition('@')
        if js:
            chosen.append((rname, json.loads(js)))
        elif (rname, args.k) in best:
            chosen.append((rname, best[rname, args.k]))
    for set_name, sub in (('photos-dev', dev), ('photos (held out)', held)):
        configs = [('today plain', None, 1, False), ('today plain+flip', None, 1, True)]
        for rname, RP in chosen:
            short = rname.split(':')[0]
            for flip in (False, True):
                configs.append((f"{short} {json.dumps(RP)} K={args.k} {'plain+flip' if flip else 'plain'}",
                                rules[rname][1](RP), args.k, flip))
        print_rule_table(sub, configs, f'## Step 3c: `detected` photos per tag, {set_name}')

    for rname, RP in chosen:
        sensitivity(dev, rname, rules[rname][1], RP, args.k)
    for flip in (False, True):
        list_missed(dev + held, flip)
    for rname, RP in chosen:
        pred = rules[rname][1](RP)
        for flip in (False, True):
            view = 'plain+flip' if flip else 'plain'
            list_errors(dev + held, pred, args.k, flip, f'`{rname}` {json.dumps(RP)} K={args.k}, {view}')


if __name__ == '__main__':
    main()
