// SSD anchors and box decoding of the TF Object Detection API (multiple grid anchor generator +
// faster-RCNN box coder), as MediaPipe's SsdAnchorsCalculator and TensorsToDetectionsCalculator
// compute them. The reference for the native SSD decoder, and used by tools and tests.
//
// Layer i of n (n = featureMapSizes.length) has scale s_i = minScale + (maxScale - minScale) * i / (n - 1)
// (s_n = 1). Each cell (row y, column x) of an m x m map gets, in this order:
// - first layer with reduceBoxesInLowestLayer: (0.1, 1), (s_0, 2), (s_0, 0.5);
// - otherwise: (s_i, r) for each aspect ratio r, then (sqrt(s_i * s_i+1), interpolatedScaleAspectRatio)
//   when that ratio is > 0;
// with (scale, ratio) -> height scale / sqrt(ratio), width scale * sqrt(ratio), centre
// ((y + 0.5) / m, (x + 0.5) / m). Anchors run layer by layer, row-major over cells, then box
// within a cell: the order of the model's [1, A, 4] and [1, A, classes] outputs.
import type { SsdOutputManifest } from '../native/detector-output';

export type SsdAnchorConfig = SsdOutputManifest['anchors'];

/** Normalised [0, 1] coordinates of the model input. */
export interface Anchor {
  yCenter: number;
  xCenter: number;
  height: number;
  width: number;
}

export interface Box {
  yMin: number;
  xMin: number;
  yMax: number;
  xMax: number;
}

export function ssdAnchors(config: SsdAnchorConfig): Anchor[] {
  const n = config.featureMapSizes.length;
  const scale = (i: number) => (i >= n ? 1 : n === 1 ? config.minScale : config.minScale + ((config.maxScale - config.minScale) * i) / (n - 1));
  const anchors: Anchor[] = [];
  config.featureMapSizes.forEach((size, layer) => {
    const s = scale(layer);
    const specs: Array<[number, number]> = [];
    if (layer === 0 && config.reduceBoxesInLowestLayer) {
      specs.push([0.1, 1], [s, 2], [s, 0.5]);
    } else {
      for (const ratio of config.aspectRatios) specs.push([s, ratio]);
      if (config.interpolatedScaleAspectRatio > 0) specs.push([Math.sqrt(s * scale(layer + 1)), config.interpolatedScaleAspectRatio]);
    }
    for (let y = 0; y < size; y++) {
      for (let x = 0; x < size; x++) {
        for (const [boxScale, ratio] of specs) {
          const root = Math.sqrt(ratio);
          anchors.push({ yCenter: (y + 0.5) / size, xCenter: (x + 0.5) / size, height: boxScale / root, width: boxScale * root });
        }
      }
    }
  });
  return anchors;
}

/**
 * Decodes one box encoding (ty, tx, th, tw) against its anchor; scales are (y, x, h, w), e.g.
 * [10, 10, 5, 5]. Result in normalised input coordinates (not clipped).
 */
export function decodeSsdBox(encoding: ArrayLike<number>, anchor: Anchor, scales: readonly [number, number, number, number]): Box {
  const yCenter = (encoding[0]! / scales[0]) * anchor.height + anchor.yCenter;
  const xCenter = (encoding[1]! / scales[1]) * anchor.width + anchor.xCenter;
  const height = Math.exp(encoding[2]! / scales[2]) * anchor.height;
  const width = Math.exp(encoding[3]! / scales[3]) * anchor.width;
  return { yMin: yCenter - height / 2, xMin: xCenter - width / 2, yMax: yCenter + height / 2, xMax: xCenter + width / 2 };
}
