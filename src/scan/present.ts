// A stored scan as the client sees it (GET /scan/{scanId}).
import { moodOf, V1_MESSAGES } from '../v1/respond';
import type { DetectionState } from '../pipeline/analysis';
import type { ScanEvent, ScanResource } from './schemas';
import type { ClaimedDelivery, ScanRecord, WebhookDelivery } from '../store';
import { redactUrl } from './webhooks/callback-url';

/** What the worker stores as a scan's result. */
export interface StoredResult {
  detection: DetectionState;
  width: number;
  height: number;
  box: [number, number, number, number] | null;
  confidence: number | null;
  score: number | null;
  threshold: number;
  modelId: string;
  /** The service's version (the answer's `model.version`, as v2's). */
  modelVersion: string;
  /** The pack version that answered (a canary's when drawn); stored, not shown. Absent in results stored before it. */
  packVersion?: string;
}

function predictionsOf(r: StoredResult): ScanResource['predictions'] {
  if (r.detection === 'detected') {
    const mood = moodOf(r.score!, r.threshold);
    return { prediction: mood.prediction, probability: mood.probability, cat_quality: r.confidence, message: V1_MESSAGES.success };
  }
  const message = r.detection === 'low_confidence' ? V1_MESSAGES.lowQuality : V1_MESSAGES.noCat;
  return { prediction: 'Unknown', probability: 0, cat_quality: r.confidence, message };
}

export function presentScan(scan: ScanRecord, defaultModel: { id: string; version: string }, delivery: WebhookDelivery | null): ScanResource {
  const r = scan.status === 'COMPLETED' ? (scan.result as unknown as StoredResult) : null;
  return {
    scanId: scan.id,
    status: scan.status,
    createdAt: scan.createdAt,
    updatedAt: scan.updatedAt,
    completedAt: scan.completedAt,
    isCat: r ? r.detection === 'detected' : null,
    isHappy: r && r.detection === 'detected' ? r.score! <= r.threshold : null,
    predictions: r ? predictionsOf(r) : null,
    detection: r ? r.detection : null,
    boundingBox: r?.box ? { x_min: r.box[0], y_min: r.box[1], x_max: r.box[2], y_max: r.box[3] } : null,
    image: r ? { width: r.width, height: r.height } : null,
    model: r ? { id: r.modelId, version: r.modelVersion } : defaultModel,
    source: scan.source,
    imageUrl: scan.imageUrl,
    metadata: scan.metadata,
    logs: scan.logs,
    error: scan.error,
    webhook: delivery && { ...delivery, url: redactUrl(delivery.url) },
  };
}

/** The body of a scan's webhook: its type, then the scan as it was when it finished. */
export function presentEvent(scan: ScanRecord, defaultModel: { id: string; version: string }, delivery: ClaimedDelivery): ScanEvent {
  const { webhook: _, ...resource } = presentScan({ ...scan, logs: scan.logs.filter((l) => !l.event.startsWith('webhook_')) }, defaultModel, null);
  return { type: delivery.event, request_id: delivery.webhookId, ...resource };
}
