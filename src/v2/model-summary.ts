// What GET /v2/models says of a pack's serving version: its precision, and the `classifier` and
// `verifier` blocks: the head's backbone, the trained head (with its validation figures) or the
// untrained reference, and the verifier's file and rule.
import type { Static } from '@sinclair/typebox';
import type { Manifest } from '../packs/manifest';
import type { Model } from '../packs/model';
import type { Precision } from '../packs/pack';
import { backboneFile } from '../packs/pack-files';
import type { BackboneSummary, ClassifierSummary, VerifierSummary } from './schemas';

/** The backbone file serving now: the ImageNet network at its precision, or the trained head's recorded backbone. */
function backboneSummary(c: Manifest['classifier'], precision: Precision | null): Static<typeof BackboneSummary> | null {
  if ('backbone' in c && precision !== null) {
    const { file, sha256 } = backboneFile(c.backbone, precision);
    return { name: c.backbone.name, file, sha256, precision };
  }
  const b = c.training?.backbone;
  return b ? { name: `detector:${b.stage}`, file: null, sha256: b.sha256, precision: null } : null;
}

function verifierSummary(m: Manifest, precision: Precision | null): Static<typeof VerifierSummary> | null {
  const v = m.verifier;
  const backbone = backboneSummary(m.classifier, precision);
  if (!v || !backbone) return null;
  const r = v.rule;
  return {
    file: backbone.file,
    sha256: backbone.sha256,
    max_candidates: v.maxCandidates,
    rule: { lookalike_classes: r.lookalikeClasses, max_lookalike_mass: r.maxLookalikeMass, cat_classes: r.catClasses, dog_classes: r.dogClasses },
  };
}

function classifierSummary(c: Manifest['classifier'], precision: Precision | null): Static<typeof ClassifierSummary> {
  const t = c.training;
  const backbone = backboneSummary(c, precision);
  if (c.reference || !t) return { trained: !c.reference, backbone, training: null };
  const photos = (n: { comfort: number; discomfort: number }) => n.comfort + n.discomfort;
  return {
    trained: true,
    backbone,
    training: {
      trained_at: t.trainedAt,
      base_pack: t.basePack,
      training_photos: photos(t.counts.train),
      validation_photos: photos(t.counts.validation),
      validation_balanced_accuracy: t.validation.balancedAccuracy,
      validation_auc: t.validation.auc,
      threshold: t.validation.threshold,
    },
  };
}

/** What GET /v2/models says of a pack's serving version. */
export function modelSummary(serviceVersion: string, m: Model) {
  return {
    id: m.id,
    name: m.manifest.name,
    version: serviceVersion,
    pack_version: m.manifest.version,
    default_threshold: m.manifest.defaultThreshold,
    deprecated: m.manifest.deprecated ?? false,
    detector: { precision: m.precision, available_precisions: m.manifest.detector.int8 ? ['fp32', 'int8'] : ['fp32'], precision_reason: m.precisionReason },
    classifier: classifierSummary(m.manifest.classifier, m.backbonePrecision),
    verifier: verifierSummary(m.manifest, m.backbonePrecision),
  };
}
