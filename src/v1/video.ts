// bc-legacy video (spec 2.6). Frames are sampled evenly across the clip by ffmpeg, each
// goes through the same image pipeline, and the result is combined like this: frames with
// a detected cat (confidence >= 0.69) are ranked by cat quality; the top N of them give the
// mean discomfort probability p and the mean cat quality; the best frame gives the box.
// Times: total_extraction_time is the wall time of ffmpeg plus decoding and detection of all
// frames; total_prediction_time is the classifier's share of the pipeline's wall time.
// One version per video (packs/routed.ts, drawn once the frames are extracted): every frame of a
// video is judged by that version and its default threshold, a canary answering its share of videos;
// a shadow drawn for the video runs beside each frame (from spare capacity, as for any image).
import type { Exchange } from '../http/exchange';
import { analyzePicked, appliedThreshold, pickVersion } from '../packs/routed';
import { ImageError, type Analysis } from '../pipeline/analysis';
import type { Semaphore } from '../pipeline/semaphore';
import type { Service } from '../service';
import { extractFrames, VideoError } from './frames';
import { boxOf, failure, moodOf, seconds, V1_FORMAT_VERSION, V1_MESSAGES, type V1Response } from './respond';
import type { V1Request } from './validate';

export type V1VideoResponse = Omit<V1Response, 'threshold'>;

function withoutThreshold(response: V1Response): V1VideoResponse {
  const { threshold: _omitted, ...rest } = response;
  return rest;
}

export async function analyzeVideo(
  service: Service,
  /** The pack id; the version answering this video is picked here. */
  modelId: string,
  request: V1Request,
  ex: Exchange,
  deadline: number,
  ffmpegSlots: Semaphore,
): Promise<V1VideoResponse> {
  const limits = service.config.video;
  if (request.video === null || request.video === '') return withoutThreshold(failure('Error loading video from base64 string', null));
  const wanted = Math.max(1, Math.min(request.framesToAnalyze ?? 20, limits.maxFrames));
  const started = performance.now();
  const signal = ex.abortSignal();
  let frames: Buffer[];
  try {
    frames = await ffmpegSlots.run(() => extractFrames(Buffer.from(request.video!, 'base64'), wanted, limits, signal));
  } catch (error) {
    if (error instanceof VideoError) return withoutThreshold(failure(`Error: ${error.message}`, null));
    throw error;
  }
  const pick = pickVersion(service.registry, modelId);
  const model = pick.model;
  ex.notes.modelVersion = model.version;
  const analyses = await Promise.all(
    frames.map((frame) =>
      analyzePicked(pick, { data: frame, encoding: 'bytes' }, { deadline, signal, timing: ex.timing }, null).then(
        (routed) => routed.analysis,
        (error: unknown) => {
          if (error instanceof ImageError) return null; // a frame that does not decode is skipped
          throw error;
        },
      ),
    ),
  );
  const wallMs = performance.now() - started;
  const usable = analyses.filter((a): a is Analysis => a !== null);
  if (usable.length === 0) return withoutThreshold(failure('Error: Video could not be decoded.', null));
  const detected = usable.filter((a) => a.detection === 'detected').sort((a, b) => b.cat!.confidence - a.cat!.confidence);
  if (detected.length === 0) {
    const best = usable.filter((a) => a.cat !== null).sort((a, b) => b.cat!.confidence - a.cat!.confidence)[0];
    const response = best ? failure(V1_MESSAGES.lowQuality, null, best.cat!.confidence) : failure(V1_MESSAGES.noCat, null);
    return withoutThreshold(response);
  }
  const topN = Math.max(1, Math.min(request.topNPredictions ?? 5, detected.length));
  const top = detected.slice(0, topN);
  const mean = (values: number[]) => Math.round((values.reduce((s, v) => s + v, 0) / values.length) * 1e6) / 1e6;
  const p = mean(top.map((a) => a.score!));
  const best = top[0]!;
  const box = boxOf(best);
  const sum = (pick: (a: Analysis) => number) => usable.reduce((s, a) => s + pick(a), 0);
  const busy = sum((a) => a.timings.decodeMs + a.timings.detectMs + a.timings.cropMs + a.timings.classifyMs);
  const classifyMs = busy > 0 ? (wallMs * sum((a) => a.timings.cropMs + a.timings.classifyMs)) / busy : 0;
  return {
    ...moodOf(p, appliedThreshold(model, null)),
    message: V1_MESSAGES.success,
    success: true,
    cat_quality: mean(top.map((a) => a.cat!.confidence)),
    cat_detected: true,
    additional_data: {
      frames_extracted: usable.length,
      top_n_predictions: topN,
      input_dimensions: `${best.width}x${best.height}`,
      detected_cat_dimensions: `${box.x2 - box.x1}x${box.y2 - box.y1}`,
      total_extraction_time: seconds(wallMs - classifyMs),
      total_prediction_time: seconds(classifyMs),
      bounding_box_cat: [box],
      size_unit: 'pixels',
      time_unit: 'seconds',
    },
    version: V1_FORMAT_VERSION,
    inference_metadata: null,
  };
}
