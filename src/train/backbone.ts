// The frozen backbone of a trained comfort head. `imagenet` (the default): the base pack's ImageNet
// MobileNetV2 (classifier.backbone), whose 1280 pooled features its crop network already returns.
// `detector`: the MobileNetV2 of the base pack's SSD detector (a TFLite file inside an npm
// dependency, manifest detector.source), cut after one of its stages by our converter and pooled
// to one embedding row per crop. Same settings, same ONNX bytes.
import { FEATURES } from '../graphs/imagenet/head';
import type { ImagenetBackboneManifest, Manifest, PreprocessManifest } from '../packs/manifest';
import { readNpmSource } from '../graphs/npm-source';
import type { OnnxGraph } from '../graphs/onnx/write';
import { sha256 } from '../hash';
import { convertTfliteBackbone, encodeOnnx } from '../graphs/tflite/convert';

/** Stages that can end the backbone, by the name train-head's --stage takes. */
export const STAGES = {
  /** expanded_conv_13's expansion: 576 channels at 1/16 of the input side. */
  'expand-576': 'FeatureExtractor/MobilenetV2/expanded_conv_13/expand/Relu6',
  /** The last backbone layer (Conv_1): 1280 channels at 1/32 of the input side. */
  'conv-1280': 'FeatureExtractor/MobilenetV2/Conv_1/Relu6',
} as const;

export type StageName = keyof typeof STAGES;

export const EMBEDDING_OUTPUT = 'embedding';

export const BACKBONE_KINDS = ['imagenet', 'detector'] as const;
export type BackboneKind = (typeof BACKBONE_KINDS)[number];

export interface ImagenetBackbone {
  kind: 'imagenet';
  /** The training record's backbone.stage. */
  stage: ImagenetBackboneManifest['name'];
  inputSize: number;
  /** The int8 backbone file's (backbone.int8: the one train-head embeds with, as the CPU service serves it). */
  sha256: string;
  channels: number;
  preprocess: PreprocessManifest;
  manifest: ImagenetBackboneManifest;
}

export interface DetectorBackbone {
  kind: 'detector';
  stage: StageName;
  inputSize: number;
  graph: OnnxGraph;
  onnx: Buffer;
  sha256: string;
  channels: number;
  /** The classifier preprocess this backbone needs: the detector's, at inputSize x inputSize. */
  preprocess: PreprocessManifest;
}

export function isStage(name: string): name is StageName {
  return Object.hasOwn(STAGES, name);
}

export type Backbone = ImagenetBackbone | DetectorBackbone;

export function imagenetBackbone(base: Manifest): ImagenetBackbone {
  const c = base.classifier;
  if (!('backbone' in c)) throw new Error(`pack ${base.id} has no ImageNet backbone (classifier.backbone); use --backbone detector`);
  const { width } = c.preprocess;
  return { kind: 'imagenet', stage: c.backbone.name, inputSize: width, sha256: c.backbone.int8.sha256, channels: FEATURES, preprocess: c.preprocess, manifest: c.backbone };
}

/** Builds the backbone from the base pack's detector source (installed npm package under `repoRoot`). */
export function buildBackbone(base: Manifest, stage: StageName, inputSize: number, repoRoot: string): DetectorBackbone {
  const source = base.detector.source;
  if (!source || source.convert !== 'tflite') {
    throw new Error(`pack ${base.id}: its detector is not converted from TFLite, so it has no backbone to cut`);
  }
  const graph = convertTfliteBackbone(readNpmSource(source, repoRoot), { tensor: STAGES[stage], inputSize, output: EMBEDDING_OUTPUT });
  const onnx = encodeOnnx(graph, `Backbone of ${base.id} (${source.npm} ${source.version}) cut at ${STAGES[stage]}, ${inputSize} px`);
  const dims = graph.outputs[0]!.dims!;
  return {
    kind: 'detector',
    stage,
    inputSize,
    graph,
    onnx,
    sha256: sha256(onnx),
    channels: dims[1] as number,
    preprocess: { ...base.detector.preprocess, width: inputSize, height: inputSize, resize: 'stretch' },
  };
}
