// JS <-> C++ conversions of what the service calls (native/js_convert.h); the tools' own are in
// js_convert_tools.cc, the checked readers of single values in js_read.cc.
#include "js_convert.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "js_read.h"

namespace catcomfort {

namespace {

// Flattens one level of the output block into `out` (see OutputSpec): numbers, booleans and
// number arrays to numbers, strings to strings, plain objects recursively as "prefix.key".
void FlattenOutput(const Napi::Object& obj, const std::string& prefix, int depth, OutputSpec& out) {
  Napi::Array keys = obj.GetPropertyNames();
  for (uint32_t i = 0; i < keys.Length(); ++i) {
    const std::string key = keys.Get(i).ToString().Utf8Value();
    const std::string name = prefix + key;
    Napi::Value v = obj.Get(key);
    if (v.IsUndefined()) continue;  // as if absent
    if (v.IsNumber()) {
      const double d = v.As<Napi::Number>().DoubleValue();
      if (!std::isfinite(d)) Bad(obj.Env(), "output." + name + " must be finite");
      out.numbers[name] = {d};
    } else if (v.IsBoolean()) {
      out.numbers[name] = {v.As<Napi::Boolean>().Value() ? 1.0 : 0.0};
    } else if (v.IsString()) {
      out.strings[name] = v.As<Napi::String>().Utf8Value();
    } else if (v.IsArray()) {
      Napi::Array a = v.As<Napi::Array>();
      std::vector<double> values;
      for (uint32_t k = 0; k < a.Length(); ++k) {
        Napi::Value x = a.Get(k);
        if (!x.IsNumber() || !std::isfinite(x.As<Napi::Number>().DoubleValue())) {
          Bad(obj.Env(), "output." + name + " must hold finite numbers");
        }
        values.push_back(x.As<Napi::Number>().DoubleValue());
      }
      out.numbers[name] = std::move(values);
    } else if (v.IsObject() && depth < 4) {
      FlattenOutput(v.As<Napi::Object>(), name + ".", depth + 1, out);
    } else {
      Bad(obj.Env(), "output." + name + " must be a number, boolean, string, number array or object");
    }
  }
}

}  // namespace

PreprocessSpec PreprocessFromJs(const Napi::Value& value) {
  Napi::Object o = AsObject(value, "preprocess");
  PreprocessSpec p;
  p.width = Int(o, "width", 1);
  p.height = Int(o, "height", 1);
  p.resize = Choose(o.Get("resize"), "resize", {Named<ResizeMode>{"letterbox", ResizeMode::Letterbox}, {"stretch", ResizeMode::Stretch}});
  p.anchor = Choose(o.Get("anchor"), "anchor", {Named<Anchor>{"top-left", Anchor::TopLeft}, {"center", Anchor::Center}});
  p.padValue = Number(o, "padValue");
  p.channelOrder = Choose(o.Get("channelOrder"), "channelOrder", {Named<ChannelOrder>{"rgb", ChannelOrder::Rgb}, {"bgr", ChannelOrder::Bgr}});
  p.layout = Choose(o.Get("layout"), "layout", {Named<Layout>{"nchw", Layout::Nchw}, {"nhwc", Layout::Nhwc}});
  p.scale = Number(o, "scale");
  p.mean = Triple(o, "mean");
  p.std = Triple(o, "std");
  return p;
}

OutputSpec OutputFromJs(const Napi::Value& value) {
  Napi::Object o = AsObject(value, "output");
  OutputSpec out;
  out.format = String(o, "format");
  FlattenOutput(o, "", 0, out);
  out.strings.erase("format");
  return out;
}

NativeConfig ConfigFromJs(const Napi::Value& value) {
  Napi::Object o = AsObject(value, "config");
  NativeConfig c;
  Napi::Array providers = Array(o, "providers");
  for (uint32_t i = 0; i < providers.Length(); ++i) {
    c.providers.push_back(Choose(providers.Get(i), "providers[]",
                                 {Named<ProviderKind>{"tensorrt", ProviderKind::TensorRt}, {"cuda", ProviderKind::Cuda}, {"cpu", ProviderKind::Cpu}}));
  }
  c.deviceId = Int(o, "deviceId", 0);
  c.trtCacheDir = String(o, "trtCacheDir");
  c.trtFp16 = Bool(o, "trtFp16");
  if (!o.Get("pinnedMemory").IsUndefined()) c.pinnedMemory = Bool(o, "pinnedMemory");
  if (!o.Get("cudnnConvAlgoSearch").IsUndefined()) {
    c.cudnnConvAlgoSearch = String(o, "cudnnConvAlgoSearch");
    const std::string& search = c.cudnnConvAlgoSearch;
    if (search != "EXHAUSTIVE" && search != "HEURISTIC" && search != "DEFAULT") {
      Bad(o.Env(), "cudnnConvAlgoSearch must be 'EXHAUSTIVE', 'HEURISTIC' or 'DEFAULT'");
    }
  }
  c.poolThreads = Int(o, "poolThreads", 1);
  c.intraOpThreads = Int(o, "intraOpThreads", 1);
  if (!o.Get("cpuArena").IsUndefined()) c.cpuArena = Bool(o, "cpuArena");
  return c;
}

std::vector<int> ClassIndices(const Napi::Object& o, const char* key) {
  Napi::Array a = Array(o, key);
  std::vector<int> out;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    Napi::Value v = a.Get(i);
    if (!v.IsNumber()) Bad(o.Env(), std::string("verifier.") + key + " must hold class indices");
    const double d = v.As<Napi::Number>().DoubleValue();
    if (!(d >= 0 && d < 1e6 && d == std::floor(d))) Bad(o.Env(), std::string("verifier.") + key + " must hold class indices");
    out.push_back(static_cast<int>(d));
  }
  return out;
}

VerifierSpec VerifierFromJs(const Napi::Value& value) {
  Napi::Object o = AsObject(value, "verifier");
  VerifierSpec v;
  v.enabled = true;
  v.probsOutput = Int(o, "probsOutput", 0);
  v.maxCandidates = Int(o, "maxCandidates", 1);
  v.lookalikeClasses = ClassIndices(o, "lookalikeClasses");
  v.maxLookalikeMass = Number(o, "maxLookalikeMass");
  v.catClasses = ClassIndices(o, "catClasses");
  v.dogClasses = ClassIndices(o, "dogClasses");
  return v;
}

PipelineSpec PipelineSpecFromJs(const Napi::Value& value) {
  Napi::Object o = AsObject(value, "spec");
  PipelineSpec s;

  Napi::Object d = AsObject(o.Get("detector"), "detector");
  s.detector.model = CopyBuffer(d, "model");
  s.detector.preprocess = PreprocessFromJs(d.Get("preprocess"));
  s.detector.output = OutputFromJs(d.Get("output"));
  s.detector.scoreFloor = Number(d, "scoreFloor");
  s.detector.nmsIou = Number(d, "nmsIou");
  Napi::Array views = Array(d, "views");
  for (uint32_t i = 0; i < views.Length(); ++i) {
    s.detector.views.push_back(Choose(views.Get(i), "views[]",
                                     {Named<DetectorView>{"plain", DetectorView::Plain}, {"flip", DetectorView::Flip},
                                      {"half", DetectorView::Half}, {"half_flip", DetectorView::HalfFlip}}));
  }
  s.detector.viewCombine = Choose(d.Get("viewCombine"), "viewCombine", {Named<ViewCombine>{"max", ViewCombine::Max}, {"min", ViewCombine::Min}});
  Napi::Array calibration = Array(d, "calibration");
  for (uint32_t i = 0; i < calibration.Length(); ++i) {
    Napi::Value knot = calibration.Get(i);
    if (!knot.IsArray() || knot.As<Napi::Array>().Length() != 2) Bad(o.Env(), "calibration knots are [raw, calibrated]");
    Napi::Value raw = knot.As<Napi::Array>().Get(0u);
    Napi::Value cal = knot.As<Napi::Array>().Get(1u);
    if (!raw.IsNumber() || !cal.IsNumber()) Bad(o.Env(), "calibration knots are [raw, calibrated]");
    s.detector.calibration.emplace_back(raw.As<Napi::Number>().DoubleValue(), cal.As<Napi::Number>().DoubleValue());
  }

  Napi::Object c = AsObject(o.Get("classifier"), "classifier");
  s.classifier.model = CopyBuffer(c, "model");
  s.classifier.preprocess = PreprocessFromJs(c.Get("preprocess"));
  s.classifier.cropMargin = Number(c, "cropMargin");
  s.classifier.outputIndex = Int(c, "outputIndex", 0);
  if (!c.Get("embeddingOutput").IsUndefined()) s.classifier.embeddingOutput = Int(c, "embeddingOutput", 0);
  if (!c.Get("verifier").IsUndefined()) s.classifier.verifier = VerifierFromJs(c.Get("verifier"));

  Napi::Object cutoffs = AsObject(o.Get("cutoffs"), "cutoffs");
  s.detectedCutoff = Number(cutoffs, "detected");
  s.lowConfidenceCutoff = Number(cutoffs, "lowConfidence");
  double maxPixels = Number(o, "maxPixels");
  s.maxPixels = maxPixels >= 1.8e19 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(maxPixels);
  s.maxSessionBatch = Int(o, "maxSessionBatch", 1);
  s.jpegShrinkOnLoad = Bool(o, "jpegShrinkOnLoad");
  if (!o.Get("lowLoad").IsUndefined()) {
    Napi::Object lowLoad = AsObject(o.Get("lowLoad"), "lowLoad");
    s.lowLoad.threads = Int(lowLoad, "threads", 1);
    s.lowLoad.maxInFlight = Int(lowLoad, "maxInFlight", 1);
  }
  return s;
}

ItemInput ItemFromJs(const Napi::Value& value, napi_ref* ref) {
  *ref = nullptr;
  Napi::Object o = AsObject(value, "item");
  ItemInput in;
  in.encoding = Choose(o.Get("encoding"), "encoding",
                       {Named<ItemEncoding>{"base64-strict", ItemEncoding::Base64Strict}, {"base64-lenient", ItemEncoding::Base64Lenient},
                        {"bytes", ItemEncoding::Bytes}});
  const Napi::Value explain = o.Get("explain");
  in.explain = explain.IsBoolean() && explain.As<Napi::Boolean>().Value();

  Napi::Value data = o.Get("data");
  if (data.IsString()) {
    napi_env env = o.Env();
    size_t length = 0;
    NAPI_THROW_IF_FAILED(env, napi_get_value_string_utf8(env, data, nullptr, 0, &length), in);
    in.fromString = true;
    in.owned.resize(length);  // sized once; napi writes the terminator into the spare byte
    size_t copied = 0;
    NAPI_THROW_IF_FAILED(env, napi_get_value_string_utf8(env, data, in.owned.data(), length + 1, &copied), in);
    in.owned.resize(copied);
    return in;
  }
  if (!BytesOf(data, &in.data, &in.length)) Bad(o.Env(), "item data must be a string or a Buffer");
  NAPI_THROW_IF_FAILED(o.Env(), napi_create_reference(o.Env(), data, 1, ref), in);
  return in;
}

SessionStage SessionStageFromJs(const Napi::Value& value) {
  return Choose(value, "stage", {Named<SessionStage>{"detector", SessionStage::Detector}, {"classifier", SessionStage::Classifier}});
}

int64_t BatchFromJs(const Napi::Value& value) {
  if (!value.IsNumber()) Bad(value.Env(), "batch must be a number");
  double d = value.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d) || d != std::floor(d) || d < 1 || d > 1024) Bad(value.Env(), "batch must be an integer in [1, 1024]");
  return static_cast<int64_t>(d);
}

std::vector<float> RowFromJs(const Napi::Value& value) {
  if (value.IsUndefined()) return {};
  if (!value.IsTypedArray() || value.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    Bad(value.Env(), "row must be a Float32Array");
  }
  Napi::Float32Array f = value.As<Napi::Float32Array>();
  return std::vector<float>(f.Data(), f.Data() + f.ElementLength());
}

std::vector<int64_t> BatchesFromJs(const Napi::Value& value) {
  if (!value.IsArray()) Bad(value.Env(), "sizes must be an array of batch sizes");
  Napi::Array a = value.As<Napi::Array>();
  std::vector<int64_t> out;
  for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(BatchFromJs(a.Get(i)));
  return out;
}

Napi::Object InfoToJs(Napi::Env env, const NativeInfo& info) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("vipsVersion", info.vipsVersion);
  o.Set("ortVersion", info.ortVersion);
  o.Set("mallocAllocator", info.mallocAllocator);
  o.Set("mallocOwnMappingBytes", static_cast<double>(info.mallocOwnMappingBytes));
  o.Set("mallocArenaMax", info.mallocArenaMax);
  Napi::Array providers = Napi::Array::New(env, info.providers.size());
  for (size_t i = 0; i < info.providers.size(); ++i) {
    const ProviderStatus& p = info.providers[i];
    Napi::Object s = Napi::Object::New(env);
    s.Set("name", p.name);
    s.Set("active", p.active);
    s.Set("reason", p.active ? env.Null() : Napi::String::New(env, p.reason));
    providers.Set(static_cast<uint32_t>(i), s);
  }
  o.Set("providers", providers);
  return o;
}

namespace {

Napi::Array BatchCountsToJs(Napi::Env env, const std::vector<SessionBatchCount>& counts) {
  Napi::Array out = Napi::Array::New(env, counts.size());
  for (size_t i = 0; i < counts.size(); ++i) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("batch", static_cast<double>(counts[i].size));
    o.Set("runs", static_cast<double>(counts[i].runs));
    o.Set("padRows", static_cast<double>(counts[i].padRows));
    o.Set("lowLoadRuns", static_cast<double>(counts[i].lowLoadRuns));
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

}  // namespace

Napi::Object SessionBatchesToJs(Napi::Env env, const SessionBatchCounts& counts) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("detector", BatchCountsToJs(env, counts.detector));
  o.Set("classifier", BatchCountsToJs(env, counts.classifier));
  return o;
}

namespace {

Napi::Object CandidateToJs(Napi::Env env, const CatCandidate& c) {
  Napi::Object cat = Napi::Object::New(env);
  Napi::Array box = Napi::Array::New(env, 4);
  for (uint32_t k = 0; k < 4; ++k) box.Set(k, c.box[k]);
  cat.Set("box", box);
  cat.Set("confidence", c.confidence);
  cat.Set("rawScore", c.rawScore);
  return cat;
}

Napi::Object VerificationToJs(Napi::Env env, const Verification& r) {
  Napi::Object v = Napi::Object::New(env);
  v.Set("lookalikeMass", r.lookalikeMass);
  v.Set("catMass", r.catMass);
  v.Set("dogMass", r.dogMass);
  v.Set("passed", r.passed);
  v.Set("checked", r.checked);
  return v;
}

const char* OutcomeName(ProposalOutcome outcome) {
  switch (outcome) {
    case ProposalOutcome::Chosen: return "chosen";
    case ProposalOutcome::BelowLowConfidence: return "below_low_confidence_cutoff";
    case ProposalOutcome::BelowDetected: return "below_detected_cutoff";
    case ProposalOutcome::Vetoed: return "vetoed_lookalike";
    case ProposalOutcome::NotChosen: return "another_chosen";
  }
  return "another_chosen";
}

Napi::Array ProposalsToJs(Napi::Env env, const std::vector<Proposal>& proposals) {
  Napi::Array out = Napi::Array::New(env, proposals.size());
  for (size_t i = 0; i < proposals.size(); ++i) {
    const Proposal& p = proposals[i];
    Napi::Object o = CandidateToJs(env, p.cat);
    o.Set("verification", p.reading ? Napi::Value(VerificationToJs(env, *p.reading)) : env.Null());
    o.Set("outcome", OutcomeName(p.outcome));
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

}  // namespace

Napi::Array ResultsToJs(Napi::Env env, const std::vector<ItemResult>& results) {
  Napi::Array out = Napi::Array::New(env, results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const ItemResult& r = results[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("ok", r.ok);
    if (!r.ok) {
      o.Set("code", ItemErrorCodeName(r.error.code));
      if (r.error.reason != Base64Reason::None) o.Set("reason", Base64ReasonName(r.error.reason));
      if (r.error.reason == Base64Reason::DataCharacters) o.Set("dataCharacters", static_cast<double>(r.error.count));
      if (r.error.code == ItemErrorCode::Internal) o.Set("internal", r.error.internal);
    } else {
      o.Set("width", r.width);
      o.Set("height", r.height);
      o.Set("detection", r.detection == DetectionState::Detected ? "detected" : r.detection == DetectionState::LowConfidence ? "low_confidence" : "not_detected");
      o.Set("cat", r.cat ? Napi::Value(CandidateToJs(env, *r.cat)) : env.Null());
      o.Set("score", r.score ? Napi::Value(Napi::Number::New(env, *r.score)) : env.Null());
      if (r.verification) o.Set("verification", VerificationToJs(env, *r.verification));
      if (!r.output.empty()) {
        Napi::Float32Array output = Napi::Float32Array::New(env, r.output.size());
        std::copy(r.output.begin(), r.output.end(), output.Data());
        o.Set("output", output);
      }
      if (!r.proposals.empty()) o.Set("proposals", ProposalsToJs(env, r.proposals));
      Napi::Object timings = Napi::Object::New(env);
      timings.Set("decodeMs", r.decodeMs);
      timings.Set("detectMs", r.detectMs);
      timings.Set("cropMs", r.cropMs);
      timings.Set("classifyMs", r.classifyMs);
      timings.Set("analyzeMs", r.analyzeMs);
      o.Set("timings", timings);
    }
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

const char* ItemErrorCodeName(ItemErrorCode code) {
  static const char* const kNames[] = {"invalid_base64", "empty_image", "undecodable", "unsupported_format", "too_many_pixels", "internal"};  // enum order
  return kNames[static_cast<int>(code)];
}

const char* Base64ReasonName(Base64Reason reason) {
  static const char* const kNames[] = {"none", "non_ascii", "data_characters", "incorrect_padding"};  // enum order
  return kNames[static_cast<int>(reason)];
}

Napi::Object FloatTensorToJs(Napi::Env env, const FloatTensor& t) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("name", Napi::String::New(env, t.name));
  Napi::Array dims = Napi::Array::New(env, t.dims.size());
  for (size_t d = 0; d < t.dims.size(); ++d) {
    dims.Set(static_cast<uint32_t>(d), Napi::Number::New(env, static_cast<double>(t.dims[d])));
  }
  o.Set("dims", dims);
  Napi::Float32Array data = Napi::Float32Array::New(env, t.data.size());
  std::copy(t.data.begin(), t.data.end(), data.Data());
  o.Set("data", data);
  return o;
}

PreprocessRequest PreprocessRequestFromJs(const Napi::Value& image, const Napi::Value& spec) {
  PreprocessRequest request;
  const uint8_t* data = nullptr;
  size_t length = 0;
  if (!BytesOf(image, &data, &length)) Bad(image.Env(), "image must be a Buffer");
  request.image.assign(data, data + length);
  request.spec = PreprocessFromJs(spec);
  return request;
}

Napi::Object PreprocessedToJs(Napi::Env env, const PreprocessedImage& image) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("width", Napi::Number::New(env, image.width));
  o.Set("height", Napi::Number::New(env, image.height));
  o.Set("tensor", FloatTensorToJs(env, image.tensor));
  return o;
}

}  // namespace catcomfort
