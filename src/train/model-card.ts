// MODEL_CARD.md of a pack written by train-head: what it was trained on and how well it did on
// its held-out photos, in plain words for the operator.
import type { Manifest, TrainingManifest } from '../packs/manifest';
import type { CrossValidation } from './evaluate';

export interface CardInput {
  manifest: Manifest;
  training: TrainingManifest;
  cv: CrossValidation;
  data: string;
  skipped: Array<{ file: string; reason: string }>;
}

const pct = (v: number) => `${(v * 100).toFixed(1)} %`;

export function modelCard(input: CardInput): string {
  const { manifest: m, training: t, cv } = input;
  const v = t.validation;
  const c = v.confusion;
  const lines = [
    `# Model card: \`${m.id}\``,
    '',
    `Written by \`catcomfort train-head\` on ${t.trainedAt} from the photos of \`${input.data}\`.`,
    '',
    '**The score of this pack is exactly as good as the labels it was trained on.** It learnt to tell the',
    'photos labelled `discomfort` from those labelled `comfort`; whatever those labels meant to the person',
    'who gave them is what the score means. Check the figures below on photos like the ones the service',
    'will see before relying on it.',
    '',
    '| | |',
    '|---|---|',
    `| Pack | \`${m.id}\` ${m.version}, default threshold ${m.defaultThreshold.toFixed(4)} (chosen on validation) |`,
    `| Base pack | \`${t.basePack}\`: its detector, views, calibration, cutoffs and crop margin, unchanged |`,
    ...('backbone' in m.classifier
      ? [
          `| Backbone | frozen ImageNet MobileNetV2 of the base pack (\`${m.classifier.backbone.int8.file}\`, int8, sha256 \`${t.backbone.sha256.slice(0, 12)}…\`), its 1280 pooled features of ${t.backbone.inputSize} px crops; taken from pack \`${m.filesFrom}\`, which must sit beside this one with that file unchanged |`,
          `| Head | logistic regression with L2 ${t.l2} (chosen by ${t.cvFolds}-fold cross-validation on the training photos), classes weighted equally |`,
          `| Head file | \`${m.classifier.head.file}\`: 1280 weights and a bias; the service puts it on the backbone at load, output \`p_discomfort\` |`,
          `| Verifier | ${m.verifier ? "the base pack's, unchanged (a detected candidate must look like a domestic cat to the backbone)" : 'none'} |`,
        ]
      : [
          `| Backbone | frozen MobileNetV2 of the base pack's SSD detector, cut at \`${t.backbone.stage}\`, ${t.backbone.inputSize} px crops, channel mean (sha256 of the backbone graph \`${t.backbone.sha256.slice(0, 12)}…\`) |`,
          `| Head | logistic regression with L2 ${t.l2} (chosen by ${t.cvFolds}-fold cross-validation on the training photos), classes weighted equally |`,
          `| Classifier file | \`${m.classifier.file}\` = backbone + head, output \`p_discomfort\` [N, 1] |`,
          '| Verifier | none (it reads the ImageNet backbone, which this classifier does not run) |',
        ]),
    `| Split | seed ${t.seed}, ${pct(t.validationFraction)} of each class held out for validation |`,
    '',
    '## Photos',
    '',
    '| | comfort | discomfort |',
    '|---|---|---|',
    `| training | ${t.counts.train.comfort} | ${t.counts.train.discomfort} |`,
    `| validation | ${t.counts.validation.comfort} | ${t.counts.validation.discomfort} |`,
    '',
    `Skipped (no cat \`detected\` by the base pack, or not readable as an image): ${t.counts.skipped}.`,
    ...input.skipped.map((s) => `- \`${s.file}\`: ${s.reason}`),
    '',
    '## Validation (held-out photos)',
    '',
    '| | |',
    '|---|---|',
    `| Balanced accuracy at the chosen threshold ${v.threshold.toFixed(4)} | ${pct(v.balancedAccuracy)} (optimistic: the threshold was picked on these photos) |`,
    `| Balanced accuracy at 0.5 | ${pct(v.balancedAccuracyAtHalf)} |`,
    `| ROC AUC | ${v.auc.toFixed(3)} |`,
    '| Trivial baseline (always the same answer) | 50.0 % balanced accuracy |',
    '',
    `Confusion matrix at ${v.threshold.toFixed(4)} (rows: label, columns: prediction):`,
    '',
    '| | predicted comfort | predicted discomfort |',
    '|---|---|---|',
    `| comfort | ${c.tn} | ${c.fp} |`,
    `| discomfort | ${c.fn} | ${c.tp} |`,
    '',
    '## Cross-validation of the L2 strength (training photos)',
    '',
    '| L2 | held-out log-loss (classes weighted) | balanced accuracy at 0.5 |',
    '|---|---|---|',
    ...cv.table.map((r) => `| ${r.lambda}${r.lambda === cv.lambda ? ' (chosen)' : ''} | ${r.logLoss.toFixed(4)} | ${pct(r.balancedAccuracy)} |`),
    '',
    'With few validation photos these figures move a lot from one split to another: re-run with another',
    '`--seed` to see how much.',
    '',
  ];
  return lines.join('\n');
}
