#include "tools.h"

#include <stdexcept>

#include "decode.h"
#include "items.h"
#include "preprocess.h"

namespace catcomfort {

std::vector<FloatTensor> RunModel(RunModelRequest& request, const Runtime& runtime) {
  if (request.model.empty()) throw std::runtime_error("runModel: the model is empty");
  Ort::SessionOptions options = MakeSessionOptions(runtime);
  Ort::Session session(*runtime.env, request.model.data(), request.model.size(), options);
  std::vector<uint8_t>().swap(request.model);

  Ort::MemoryInfo memory = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  std::vector<Ort::Value> inputs;
  std::vector<const char*> inputNames;
  for (FloatTensor& t : request.inputs) {
    inputs.push_back(Ort::Value::CreateTensor<float>(memory, t.data.data(), t.data.size(), t.dims.data(), t.dims.size()));
    inputNames.push_back(t.name.c_str());
  }
  Ort::AllocatorWithDefaultOptions allocator;
  std::vector<std::string> outputNames;
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    outputNames.push_back(session.GetOutputNameAllocated(i, allocator).get());
  }
  std::vector<const char*> outputPtrs;
  for (const std::string& name : outputNames) outputPtrs.push_back(name.c_str());

  std::vector<Ort::Value> values = session.Run(Ort::RunOptions{nullptr}, inputNames.data(), inputs.data(),
                                               inputs.size(), outputPtrs.data(), outputPtrs.size());
  std::vector<FloatTensor> out;
  for (size_t i = 0; i < values.size(); ++i) {
    auto info = values[i].GetTensorTypeAndShapeInfo();
    if (info.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      throw std::runtime_error("runModel: output " + outputNames[i] + " is not float32");
    }
    FloatTensor t;
    t.name = outputNames[i];
    t.dims = info.GetShape();
    const float* data = values[i].GetTensorData<float>();
    t.data.assign(data, data + info.GetElementCount());
    out.push_back(std::move(t));
  }
  return out;
}

PreprocessedImage PreprocessImage(const PreprocessRequest& request) {
  constexpr uint64_t kMaxPixels = 100'000'000;
  const PreprocessSpec& spec = request.spec;
  RgbImage image;
  try {
    image = DecodeImage(request.image.data(), request.image.size(), kMaxPixels);
  } catch (const ItemError& e) {
    throw std::runtime_error(std::string("preprocessImage: ") + ItemErrorCodeName(e.code));
  }
  const int w = image.width;
  const int h = image.height;
  // As MakeViews and WriteViewTensor (native/geometry.h) do for the plain view.
  const Placement content = PlaceOnCanvas(w, h, spec, 1.0, false, false);
  const ResizedImage resized = ResizeRgb(image, 0, 0, w, h, content.width, content.height);
  const Placement placement = PlaceOnCanvas(w, h, spec, 1.0, spec.anchor == Anchor::Center, false);
  PreprocessedImage out;
  out.width = w;
  out.height = h;
  out.tensor.name = "image";
  out.tensor.dims = spec.layout == Layout::Nchw ? std::vector<int64_t>{1, 3, spec.height, spec.width}
                                                : std::vector<int64_t>{1, spec.height, spec.width, 3};
  out.tensor.data.assign(static_cast<size_t>(spec.width) * spec.height * 3, 0.0f);
  WriteTensor(resized, placement, spec, out.tensor.data.data());
  return out;
}

std::vector<Detection> DecodeDetections(const DecodeRequest& request) {
  std::unique_ptr<DetectorDecoder> decoder = MakeDecoder(request.spec);
  if (request.outputs.size() < decoder->OutputCount()) {
    throw std::runtime_error("decodeDetections: the decoder reads " + std::to_string(decoder->OutputCount()) + " outputs");
  }
  std::vector<std::vector<int64_t>> shapes;
  std::vector<const float*> data;
  for (size_t i = 0; i < decoder->OutputCount(); ++i) {
    const FloatTensor& t = request.outputs[i];
    if (t.dims.empty() || t.dims[0] != 1) throw std::runtime_error("decodeDetections: outputs must have batch dimension 1");
    shapes.emplace_back(t.dims.begin() + 1, t.dims.end());
    data.push_back(t.data.data());
  }
  decoder->CheckShapes(shapes);
  return decoder->Decode(data);
}

}  // namespace catcomfort
