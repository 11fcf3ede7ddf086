// The steps of an analysis (Pipeline::Analyze) and the per-image decisions between them: decoding
// and shrink-on-load, the views' combined score, the best cat and its state, the verifier's choice
// and the stage times. The sessions the steps run on are native/session.h's; the views' and the
// crops' pixels native/geometry.h's.
#include "pipeline.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

#include "base64.h"
#include "clock.h"
#include "decode.h"
#include "geometry.h"
#include "preprocess.h"

namespace catcomfort {

namespace {

// Reported values carry 6 decimals; decisions (cutoffs, the label's threshold) use these values.
double Round6(double x) { return std::round(x * 1e6) / 1e6; }

ItemResult Failure(ItemError error) {
  ItemResult r;
  r.ok = false;
  r.error = std::move(error);
  return r;
}

ItemResult InternalFailure(std::string what) { return Failure(ItemError{ItemErrorCode::Internal, Base64Reason::None, 0, std::move(what)}); }

struct ItemState {
  ItemResult result;
  RgbImage image;
  // The image file when it came as base64 and was decoded shrunk: kept for a finer decode for
  // the classifier (raw bytes stay readable in the item itself).
  ImageBytes file;
  ViewContent views;  // the detector's content, until the candidates are picked
  float bestScore = -1;  // the views' scores combined (spec.viewCombine); < 0: no cat
  float minScore = 2;    // lowest top score over the views (a view without a candidate: -1)
  Detection bestBox;     // in decoded pixels: the top box of the best-scoring view
  size_t bestJob = 0;    // the (item, view) job of bestBox
  // `detected` candidates in the order the verifier checks them: [0] is result.cat.
  std::vector<CatCandidate> candidates;
  // ItemInput.explain: each of `candidates`' index in result.proposals.
  bool explain = false;
  std::vector<size_t> proposalOf;
};

// Shrink-on-load (JPEG only; native/decode.h). A phone photo has far more pixels than the models
// use: the detector sees 416 px on the longer side, the classifier a 224x224 crop, and decoding
// 12 MP costs more than everything else together. The rule has two steps:
//  1. The first decode only has to serve the detector: the largest shrink (8, 4, 2) that leaves the
//     image at least the size of the plain view's content on the canvas, so the detector input is
//     still a downscale of the decoded pixels (4000x3000 -> 500x375 for a 416 letterbox).
//  2. The classifier input must be a downscale of its crop (box + margin) too. A scale fixed
//     before detection would have to serve the smallest cat the detector can find, a few dozen of
//     its 416 canvas pixels (YOLOX-nano's finest stride is 8): a 32 px cat with its 10 % margins
//     needs 224 / (1.2 * 32 / 416) ~ 2400 decoded pixels on the longer side, i.e. no shrink at all
//     for a 4000x3000 photo. So the scale is checked per cat after detection (CropShrink): when its
//     crop at the first decode's scale has fewer pixels than the classifier input on either axis,
//     the file is decoded again at the largest shrink that has enough (1 for the smallest cats).
//     At 1/8 of 4000x3000 that is a box under 37 % of the width or 50 % of the height.
// Boxes and sizes are reported in source pixels (SourceScaleX/Y) either way.
ShrinkChooser DetectorShrink(const PreprocessSpec& detector) {
  return [&detector](int width, int height) {
    const Placement p = PlaceOnCanvas(width, height, detector, 1.0, false, false);
    return LargestShrink(width, height, p.width, p.height);
  };
}

// Step 2 of the rule above: the largest shrink at which the crop still covers the classifier's
// content size.
int CropShrink(const Crop& c, const PreprocessSpec& classifier) {
  const Placement p = CropPlacement(c, classifier);
  return LargestShrink(c.x2 - c.x1, c.y2 - c.y1, p.width, p.height);
}

// A detection (decoded pixels) as a candidate in source pixels, its score calibrated and rounded
// once: clients see this value, and the cutoffs apply to it.
CatCandidate ToCandidate(const DetectorSpec& det, const RgbImage& image, const Detection& d, float score) {
  CatCandidate cat;
  cat.box = SourceBox(image, d);
  cat.rawScore = score;
  cat.confidence = Round6(Calibrate(det.calibration, score));
  return cat;
}

// The verifier's rule (VerifierSpec) on one crop's class probabilities.
Verification Verify(const VerifierSpec& v, const float* probs, size_t classes) {
  const auto mass = [&](const std::vector<int>& indices) {
    double sum = 0;
    for (int k : indices) {
      if (static_cast<size_t>(k) >= classes) throw std::runtime_error("verifier class index is outside the model output");
      sum += probs[k];
    }
    return Round6(sum);
  };
  Verification out;
  out.lookalikeMass = mass(v.lookalikeClasses);
  out.catMass = mass(v.catClasses);
  out.dogMass = mass(v.dogClasses);
  out.passed = out.lookalikeMass <= v.maxLookalikeMass;
  return out;
}

// Base64 + image decoding and the detector content (plain and/or half scale) of one item; a
// per-item failure becomes a failed result in s.
void PrepareItem(const PipelineSpec& spec, const ItemInput& in, ItemState& s) {
  const DetectorSpec& det = spec.detector;
  try {
    Clock::time_point start = Clock::now();
    ImageBytes decoded;
    const uint8_t* bytes = in.bytes();
    size_t length = in.size();
    if (in.encoding == ItemEncoding::Base64Strict) {
      decoded = DecodeBase64Strict(bytes, length);
    } else if (in.encoding == ItemEncoding::Base64Lenient) {
      decoded = DecodeBase64Lenient(bytes, length, in.fromString);
    }
    if (in.encoding != ItemEncoding::Bytes) {
      bytes = decoded.data();
      length = decoded.size();
    }
    s.image = DecodeImage(bytes, length, spec.maxPixels,
                          spec.jpegShrinkOnLoad ? DetectorShrink(det.preprocess) : ShrinkChooser());
    if (s.image.shrink > 1 && in.encoding != ItemEncoding::Bytes) s.file = std::move(decoded);
    ImageBytes().swap(decoded);
    s.result.ok = true;
    s.result.width = s.image.sourceWidth;
    s.result.height = s.image.sourceHeight;
    s.result.decodeMs = MsSince(start);

    start = Clock::now();
    s.views = MakeViews(det, s.image);
    s.result.preprocessMs = MsSince(start);
  } catch (const ItemError& e) {
    s = ItemState();
    s.result = Failure(e);
  } catch (const std::exception& e) {
    s = ItemState();
    s.result = InternalFailure(e.what());
  }
}

// A simulated decode (SimulatedDecode): the profile's wait, then the recorded image's sizes and
// placements; false while none is on.
bool SimulatedPrepare(SimulatedDecode& sim, ItemState& s) {
  if (!sim.on.load(std::memory_order_acquire)) return false;
  const Clock::time_point start = Clock::now();
  sim.device->Decode();
  s.image.sourceWidth = sim.sourceWidth;
  s.image.sourceHeight = sim.sourceHeight;
  s.image.width = sim.width;
  s.image.height = sim.height;
  s.image.shrink = sim.shrink;
  std::copy(std::begin(sim.placements), std::end(sim.placements), std::begin(s.views.placements));
  s.result.ok = true;
  s.result.width = sim.sourceWidth;
  s.result.height = sim.sourceHeight;
  s.result.decodeMs = MsSince(start);
  return true;
}

// After the first real decode of an armed simulated decode: its sizes and placements kept, and
// every later decode simulated.
void RecordDecode(SimulatedDecode& sim, const ItemState& s) {
  std::lock_guard<std::mutex> lock(sim.mutex);
  if (sim.on.load(std::memory_order_relaxed) || !s.result.ok) return;
  sim.sourceWidth = s.image.sourceWidth;
  sim.sourceHeight = s.image.sourceHeight;
  sim.width = s.image.width;
  sim.height = s.image.height;
  sim.shrink = s.image.shrink;
  std::copy(std::begin(s.views.placements), std::end(s.views.placements), std::begin(sim.placements));
  sim.on.store(true, std::memory_order_release);
}

}  // namespace

// The spec comes from a manifest validated in TypeScript (src/packs/manifest.ts: sizes, views,
// ascending calibration knots, output indices); it is trusted here.
std::shared_ptr<Pipeline> Pipeline::Create(PipelineSpec spec, const Runtime& runtime) {
  auto pipeline = std::make_shared<Pipeline>();
  std::unique_ptr<DetectorDecoder> decoder = MakeDecoder(spec.detector);  // validates output.*
  std::vector<std::vector<int64_t>> outputShapes;
  pipeline->detector_ = OpenSession(runtime, spec.detector.model, spec.detector.preprocess, spec.maxSessionBatch, spec.lowLoad,
                                    "detector", decoder->OutputCount(), &outputShapes);
  decoder->CheckShapes(outputShapes);  // what the model declares; each Run is checked again
  WarmLowLoad(pipeline->detector_, spec.detector.preprocess);
  const ClassifierSpec& cls = spec.classifier;
  const int lastOutput = std::max({0, cls.embeddingOutput, cls.verifier.enabled ? cls.verifier.probsOutput : 0});
  pipeline->classifier_ = OpenSession(runtime, spec.classifier.model, cls.preprocess, spec.maxSessionBatch, spec.lowLoad,
                                      "classifier", static_cast<size_t>(lastOutput) + 1);
  WarmLowLoad(pipeline->classifier_, cls.preprocess);
  pipeline->decoder_ = std::move(decoder);
  pipeline->spec_ = std::move(spec);
  return pipeline;
}

// What Analyze's steps hand on to each other.
struct Pipeline::AnalyzeState {
  explicit AnalyzeState(size_t items) : states(items) {}
  std::vector<ItemState> states;  // one per item, in input order
  std::vector<std::pair<size_t, size_t>> jobs;  // (item, view): the detector's inputs
  // Per job: the top `keep` boxes after NMS, best first, in decoded pixels.
  std::vector<std::vector<Detection>> jobKept;
  double detectStepMs = 0;  // wall time of DetectViews
  std::atomic<int64_t> detectRunUs{0};  // its Runs, summed over chunks
  std::vector<size_t> confident;  // items whose best cat is detected
  std::vector<std::pair<size_t, size_t>> crops;  // (item, candidate): the classifier's inputs
  // Per crop: the classifier's score, the verifier's reading, the embedding row.
  std::vector<float> scores;
  std::vector<Verification> readings;
  std::vector<std::vector<float>> rows;
  double classifyStepMs = 0;  // wall time of ClassifyCrops
  std::atomic<int64_t> classifyRunUs{0};  // its Runs, summed over chunks
};

std::vector<ItemResult> Pipeline::Analyze(const std::vector<ItemInput>& items, ThreadPool& pool) const {
  const AnalysisInFlight counted;
  const Clock::time_point start = Clock::now();
  AnalyzeState a(items.size());
  PrepareItems(items, a, pool);
  DetectViews(a, pool);
  CombineViews(a);
  PickCandidates(a);
  RedecodeSmallCats(items, a, pool);
  ClassifyCrops(a, pool);
  ChooseCats(a);
  StampTimings(a, MsSince(start));
  return TakeResults(a);
}

// Decodes every item and prepares its detector content, item-parallel; failures stay per item.
void Pipeline::PrepareItems(const std::vector<ItemInput>& items, AnalyzeState& a, ThreadPool& pool) const {
  ParallelFor(pool, items.size(), [&](size_t i) {
    if (!SimulatedPrepare(simulatedDecode_, a.states[i])) PrepareItem(spec_, items[i], a.states[i]);
    a.states[i].explain = items[i].explain;
  });
  if (simulatedDecode_.armed.load(std::memory_order_relaxed) && !a.states.empty()) RecordDecode(simulatedDecode_, a.states[0]);
}

// One detector pass over every (item, view) of the items still ok, chunked by the session batch.
void Pipeline::DetectViews(AnalyzeState& a, ThreadPool& pool) const {
  const size_t viewCount = std::min<size_t>(spec_.detector.views.size(), 4);
  for (size_t i = 0; i < a.states.size(); ++i) {
    if (!a.states[i].result.ok) continue;
    for (size_t v = 0; v < viewCount; ++v) a.jobs.emplace_back(i, v);
  }
  a.jobKept.resize(a.jobs.size());
  const Clock::time_point detectStart = Clock::now();
  // Several Runs of the shared session at once when the model's batch is fixed at 1; each chunk
  // fills its tensor in parallel too.
  ForEachChunk(detector_, a.jobs.size(), a.states.size() == 1, pool, [&](const Chunk& chunk) { DetectChunk(a, chunk, pool); });
  a.detectStepMs = MsSince(detectStart);
}

// One detector Run over a chunk of the jobs: their kept boxes, mapped back to decoded pixels.
void Pipeline::DetectChunk(AnalyzeState& a, const Chunk& chunk, ThreadPool& pool) const {
  const size_t first = chunk.first;
  const size_t count = chunk.count;
  const DetectorSpec& det = spec_.detector;
  const VerifierSpec& verifier = spec_.classifier.verifier;
  const size_t keep = verifier.enabled ? static_cast<size_t>(std::max(1, verifier.maxCandidates)) : 1;
  BatchOutput out = RunBatch(detector_, det.preprocess, count, chunk.alone, pool, [&](size_t k, float* dst) {
    const auto [item, view] = a.jobs[first + k];
    WriteViewTensor(det, a.states[item].views, view, dst);
  });
  std::vector<std::vector<int64_t>> shapes;
  for (const OutputData& o : out.outputs) shapes.push_back(o.shape);
  decoder_->CheckShapes(shapes);
  a.detectRunUs.fetch_add(static_cast<int64_t>(out.runMs * 1000), std::memory_order_relaxed);
  std::vector<const float*> image(out.outputs.size());
  for (size_t k = 0; k < count; ++k) {
    const auto [item, view] = a.jobs[first + k];
    for (size_t o = 0; o < out.outputs.size(); ++o) image[o] = out.outputs[o].data + k * out.outputs[o].perImage;
    // NMS first, as the spec says; the top candidate always survives it.
    std::vector<Detection> kept = NonMaxSuppression(decoder_->Decode(image), det.nmsIou);
    if (kept.size() > keep) kept.resize(keep);
    for (Detection& d : kept) ToDecodedPixels(a.states[item].views.placements[view], d);
    a.jobKept[first + k] = std::move(kept);
  }
}

// Per item: the best view's top box, the views' scores combined, and the detector stage's time.
void Pipeline::CombineViews(AnalyzeState& a) const {
  for (size_t j = 0; j < a.jobs.size(); ++j) {
    ItemState& s = a.states[a.jobs[j].first];
    const std::vector<Detection>& kept = a.jobKept[j];
    const float top = kept.empty() ? -1.0f : kept.front().score;
    if (top > s.bestScore) {
      s.bestScore = top;
      s.bestBox = kept.front();
      s.bestJob = j;
    }
    s.minScore = std::min(s.minScore, top);
  }
  // "min": a cat only where every view sees one, scored by the least sure view; the box stays the
  // best view's. A view with no candidate at or above scoreFloor leaves the item without a cat.
  if (spec_.detector.viewCombine == ViewCombine::Min) {
    for (ItemState& s : a.states) {
      if (s.bestScore >= 0) s.bestScore = s.minScore;
    }
  }
}

// Best cat per item, in source pixels, and its detection state; with a verifier, the best view's
// next `detected` candidates too (a cat beside a dog). Frees the detector content. An item that
// asked for an explanation gets every candidate of the best view as a proposal.
void Pipeline::PickCandidates(AnalyzeState& a) const {
  const DetectorSpec& det = spec_.detector;
  for (size_t i = 0; i < a.states.size(); ++i) {
    ItemState& s = a.states[i];
    s.views.plain = ResizedImage();
    s.views.half = ResizedImage();
    if (!s.result.ok || s.bestScore < 0) continue;
    const CatCandidate cat = ToCandidate(det, s.image, s.bestBox, s.bestScore);
    s.result.cat = cat;
    const std::vector<Detection>& kept = a.jobKept[s.bestJob];
    for (size_t k = 0; k < kept.size(); ++k) {
      const CatCandidate next = k == 0 ? cat : ToCandidate(det, s.image, kept[k], kept[k].score);
      // The verifier checks `detected` candidates only when the best one is detected.
      const bool checked = next.confidence >= spec_.detectedCutoff && cat.confidence >= spec_.detectedCutoff;
      if (checked) s.candidates.push_back(next);
      if (!s.explain) continue;
      const ProposalOutcome outcome = checked                                       ? ProposalOutcome::NotChosen
                                      : next.confidence >= spec_.lowConfidenceCutoff ? ProposalOutcome::BelowDetected
                                                                                    : ProposalOutcome::BelowLowConfidence;
      if (checked) s.proposalOf.push_back(s.result.proposals.size());
      s.result.proposals.push_back(Proposal{next, std::nullopt, outcome});
    }
    if (cat.confidence >= spec_.detectedCutoff) {
      s.result.detection = DetectionState::Detected;
      a.confident.push_back(i);
    } else if (cat.confidence >= spec_.lowConfidenceCutoff) {
      s.result.detection = DetectionState::LowConfidence;
    }
  }
}

// Cats too small for a full-quality classifier crop at the first decode's scale: decodes the file
// again, finer (see the shrink-on-load rule above), item-parallel; failures stay per item.
void Pipeline::RedecodeSmallCats(const std::vector<ItemInput>& items, AnalyzeState& a, ThreadPool& pool) const {
  const ClassifierSpec& cls = spec_.classifier;
  ParallelFor(pool, a.confident.size(), [&](size_t k) {
    ItemState& s = a.states[a.confident[k]];
    int shrink = s.image.shrink;
    for (const CatCandidate& cat : s.candidates) {
      const Crop crop = ClassifierCrop(cat, cls.cropMargin, s.image.sourceWidth, s.image.sourceHeight);
      shrink = std::min(shrink, CropShrink(crop, cls.preprocess));
    }
    if (shrink >= s.image.shrink) return;
    const ItemInput& in = items[a.confident[k]];
    const bool kept = !s.file.empty();
    try {
      s.image = DecodeImage(kept ? s.file.data() : in.bytes(), kept ? s.file.size() : in.size(), spec_.maxPixels,
                            [shrink](int, int) { return shrink; });
    } catch (const ItemError& e) {
      s.result = Failure(e);
    } catch (const std::exception& e) {
      s.result = InternalFailure(e.what());
    }
  });
}

// The classifier (and verifier) over every candidate's crop (+margin) of the items still ok,
// chunked by the session batch.
void Pipeline::ClassifyCrops(AnalyzeState& a, ThreadPool& pool) const {
  for (size_t i : a.confident) {
    if (!a.states[i].result.ok) continue;
    for (size_t c = 0; c < a.states[i].candidates.size(); ++c) a.crops.emplace_back(i, c);
  }
  const Clock::time_point classifyStart = Clock::now();
  a.scores.assign(a.crops.size(), 0.0f);
  a.readings.resize(a.crops.size());
  a.rows.resize(spec_.classifier.embeddingOutput >= 0 ? a.crops.size() : 0);
  ForEachChunk(classifier_, a.crops.size(), a.states.size() == 1, pool, [&](const Chunk& chunk) { ClassifyChunk(a, chunk, pool); });
  a.classifyStepMs = MsSince(classifyStart);
}

// One classifier Run over a chunk of the crops: their scores, verifier readings and embedding rows.
void Pipeline::ClassifyChunk(AnalyzeState& a, const Chunk& chunk, ThreadPool& pool) const {
  const size_t first = chunk.first;
  const size_t count = chunk.count;
  const ClassifierSpec& cls = spec_.classifier;
  const VerifierSpec& verifier = cls.verifier;
  BatchOutput out = RunBatch(classifier_, cls.preprocess, count, chunk.alone, pool, [&](size_t k, float* dst) {
    const auto [item, candidate] = a.crops[first + k];
    const ItemState& s = a.states[item];
    WriteCropTensor(s.image, ClassifierCrop(s.candidates[candidate], cls.cropMargin, s.image.sourceWidth, s.image.sourceHeight), cls.preprocess, dst);
  });
  a.classifyRunUs.fetch_add(static_cast<int64_t>(out.runMs * 1000), std::memory_order_relaxed);
  const OutputData& o = out.outputs.at(0);
  if (static_cast<size_t>(cls.outputIndex) >= o.perImage) {
    throw std::runtime_error("classifier outputIndex is outside the model output");
  }
  for (size_t k = 0; k < count; ++k) a.scores[first + k] = o.data[k * o.perImage + static_cast<size_t>(cls.outputIndex)];
  if (verifier.enabled) {
    const OutputData& probs = out.outputs.at(static_cast<size_t>(verifier.probsOutput));
    for (size_t k = 0; k < count; ++k) {
      a.readings[first + k] = Verify(verifier, probs.data + k * probs.perImage, probs.perImage);
    }
  }
  if (cls.embeddingOutput >= 0) {
    const OutputData& e = out.outputs.at(static_cast<size_t>(cls.embeddingOutput));
    for (size_t k = 0; k < count; ++k) a.rows[first + k].assign(e.data + k * e.perImage, e.data + (k + 1) * e.perImage);
  }
}

// Per classified item, the cat is the first candidate the verifier passes that looks at least as
// much like a cat as like a dog, else the first it passes (the first one without a verifier); when
// it vetoes every one, the item answers low_confidence with its best candidate.
void Pipeline::ChooseCats(AnalyzeState& a) const {
  const ClassifierSpec& cls = spec_.classifier;
  const VerifierSpec& verifier = cls.verifier;
  for (size_t first = 0; first < a.crops.size();) {
    const size_t item = a.crops[first].first;
    size_t end = first;
    while (end < a.crops.size() && a.crops[end].first == item) ++end;
    ItemState& s = a.states[item];
    ItemResult& r = s.result;
    size_t chosen = end;
    if (!verifier.enabled) {
      chosen = first;
    } else {
      for (size_t k = first; k < end && chosen == end; ++k) {
        if (a.readings[k].passed && a.readings[k].catMass >= a.readings[k].dogMass) chosen = k;
      }
      for (size_t k = first; k < end && chosen == end; ++k) {
        if (a.readings[k].passed) chosen = k;
      }
      r.verification = a.readings[chosen == end ? first : chosen];
      r.verification->checked = static_cast<int>(end - first);
    }
    for (size_t k = first; k < end && s.explain; ++k) {  // what the verifier read of each proposal
      Proposal& p = r.proposals[s.proposalOf[a.crops[k].second]];
      if (verifier.enabled) p.reading = a.readings[k];
      const bool vetoed = verifier.enabled && !a.readings[k].passed;
      p.outcome = k == chosen ? ProposalOutcome::Chosen : vetoed ? ProposalOutcome::Vetoed : ProposalOutcome::NotChosen;
    }
    if (chosen == end) {
      r.detection = DetectionState::LowConfidence;
    } else if (std::isnan(a.scores[chosen])) {
      r = InternalFailure("classifier output is NaN");
    } else {
      r.cat = s.candidates[a.crops[chosen].second];
      r.score = Round6(std::clamp(static_cast<double>(a.scores[chosen]), 0.0, 1.0));
      if (cls.embeddingOutput >= 0) r.output = std::move(a.rows[chosen]);
    }
    first = end;
  }
}

// The analysis's stage times on every item that succeeded (they share them): the Runs as summed
// over chunks (at most their step's wall time, as chunks run side by side), and decode and
// preprocessing as the rest of `analyzeMs`, so that the stages add up to the analysis.
void Pipeline::StampTimings(AnalyzeState& a, double analyzeMs) {
  const double detect = std::min(a.detectStepMs, a.detectRunUs.load() / 1000.0);
  const double classify = std::min(a.classifyStepMs, a.classifyRunUs.load() / 1000.0);
  const double crop = a.classifyStepMs - classify;
  const double decode = std::max(0.0, analyzeMs - detect - crop - classify);
  for (ItemState& s : a.states) {
    if (!s.result.ok) continue;
    s.result.decodeMs = decode;
    s.result.detectMs = detect;
    s.result.cropMs = crop;
    s.result.classifyMs = classify;
    s.result.analyzeMs = analyzeMs;
  }
}

// Every item's result, in input order.
std::vector<ItemResult> Pipeline::TakeResults(AnalyzeState& a) {
  std::vector<ItemResult> results;
  results.reserve(a.states.size());
  for (ItemState& s : a.states) results.push_back(std::move(s.result));
  return results;
}

std::vector<DecodeTiming> Pipeline::BenchDecode(const std::vector<ItemInput>& items, ThreadPool& pool) const {
  const DetectorSpec& det = spec_.detector;
  const size_t viewCount = std::min<size_t>(det.views.size(), 4);
  const size_t slot = static_cast<size_t>(det.preprocess.width) * det.preprocess.height * 3;
  std::vector<DecodeTiming> out(items.size());
  ParallelFor(pool, items.size(), [&](size_t i) {
    ItemState s;
    PrepareItem(spec_, items[i], s);
    DecodeTiming& t = out[i];
    t.ok = s.result.ok;
    if (!t.ok) return;
    t.decodeMs = s.result.decodeMs;
    const Clock::time_point start = Clock::now();
    std::vector<float> tensor(slot);
    for (size_t v = 0; v < viewCount; ++v) WriteViewTensor(det, s.views, v, tensor.data());
    t.preprocessMs = s.result.preprocessMs + MsSince(start);  // resize + tensor fill of every view
  });
  return out;
}

double Pipeline::BenchSession(SessionStage stage, int64_t batch, const std::vector<float>& row) const {
  const bool detector = stage == SessionStage::Detector;
  return TimeRun(Stage(stage), detector ? spec_.detector.preprocess : spec_.classifier.preprocess, detector ? "detector" : "classifier", batch, row);
}

void Pipeline::KeepSessionBatches(SessionStage stage, const std::vector<int64_t>& sizes) const { KeepBatches(Stage(stage), sizes); }

void Pipeline::Simulate(SimulatedDevice& device, bool decode) const {
  SimulateOn(detector_, device, device.Profile().detector);
  SimulateOn(classifier_, device, device.Profile().classifier);
  if (!decode) return;
  std::lock_guard<std::mutex> lock(simulatedDecode_.mutex);
  simulatedDecode_.device = &device;
  simulatedDecode_.armed.store(true, std::memory_order_release);
}

SessionBatchCounts Pipeline::SessionBatches() const { return {Counts(detector_), Counts(classifier_)}; }

bool Pipeline::PinnedHostMemory(SessionStage stage) const { return Stage(stage).host.Pinned(); }

const ModelSession& Pipeline::Stage(SessionStage stage) const { return stage == SessionStage::Detector ? detector_ : classifier_; }

}  // namespace catcomfort
