// The `classifier` block of GET /v2/models: trained head (with its validation figures) or the
// untrained reference network.
import type { Static } from '@sinclair/typebox';
import type { Manifest } from '../models/manifest';
import type { ClassifierSummary } from './schemas';

export function classifierSummary(c: Manifest['classifier']): Static<typeof ClassifierSummary> {
  const t = c.training;
  if (c.reference || !t) return { trained: !c.reference, training: null };
  const photos = (n: { comfort: number; discomfort: number }) => n.comfort + n.discomfort;
  return {
    trained: true,
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
