// The detector output formats a pack's manifest may name (its `detector.output` block): the schema
// of each, and its type. The native decoder of the format (native/decoder.h) reads the rest.
import { Type, type Static } from '@sinclair/typebox';

export const YoloxOutput = Type.Object(
  {
    format: Type.Literal('yolox'),
    strides: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1 }),
    numClasses: Type.Integer({ minimum: 1 }),
    catClassIndex: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

/**
 * SSD head (TF Object Detection API): outputs [N, A, 4] box encodings (ty, tx, th, tw) and
 * [N, A, numClasses] class logits (index 0 = background), A anchors made by the grid anchor
 * generator below (src/graphs/ssd-anchors.ts is the reference implementation).
 */
export const SsdOutput = Type.Object(
  {
    format: Type.Literal('ssd'),
    numClasses: Type.Integer({ minimum: 1 }),
    catClassIndex: Type.Integer({ minimum: 0 }),
    /** Class scores are logits; this turns them into probabilities. */
    scoreActivation: Type.Literal('sigmoid'),
    /** Box coder scales for (y, x, h, w): y = ty / scale_y * ha + ya, h = exp(th / scale_h) * ha. */
    boxCoderScales: Type.Tuple([
      Type.Number({ exclusiveMinimum: 0 }),
      Type.Number({ exclusiveMinimum: 0 }),
      Type.Number({ exclusiveMinimum: 0 }),
      Type.Number({ exclusiveMinimum: 0 }),
    ]),
    anchors: Type.Object(
      {
        /** Cells per side of each square feature map, in output order. */
        featureMapSizes: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1 }),
        minScale: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
        maxScale: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
        aspectRatios: Type.Array(Type.Number({ exclusiveMinimum: 0 }), { minItems: 1 }),
        /** Aspect ratio of the extra anchor of scale sqrt(s_i * s_i+1) per cell; 0 = none. */
        interpolatedScaleAspectRatio: Type.Number({ minimum: 0 }),
        /** First map: only (0.1, 1), (s_0, 2), (s_0, 0.5). */
        reduceBoxesInLowestLayer: Type.Boolean(),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export type YoloxOutputManifest = Static<typeof YoloxOutput>;
export type SsdOutputManifest = Static<typeof SsdOutput>;
export type DetectorOutputManifest = YoloxOutputManifest | SsdOutputManifest;
