// Per-item input and result structs of analyze(): plain C++, no N-API.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace catcomfort {

enum class ItemEncoding { Base64Strict, Base64Lenient, Bytes };

// The item's data: either an owned copy (JS strings) or a borrowed view of a Buffer that the
// JS side keeps alive (a Napi::Reference held, and released, on the JS thread only).
struct ItemInput {
  ItemEncoding encoding = ItemEncoding::Bytes;
  bool fromString = false;  // true: `owned` holds the UTF-8 of a JS string
  std::string owned;
  const uint8_t* data = nullptr;
  size_t length = 0;
  bool explain = false;  // also report every candidate (ItemResult.proposals)

  const uint8_t* bytes() const { return fromString ? reinterpret_cast<const uint8_t*>(owned.data()) : data; }
  size_t size() const { return fromString ? owned.size() : length; }
};

enum class ItemErrorCode { InvalidBase64, EmptyImage, Undecodable, UnsupportedFormat, TooManyPixels, Internal };

// Why a lenient (v1) base64 decode failed; TypeScript words each one (v1: CPython 3.11's texts).
enum class Base64Reason { None, NonAscii, DataCharacters, IncorrectPadding };

const char* ItemErrorCodeName(ItemErrorCode code);
const char* Base64ReasonName(Base64Reason reason);

// A per-item failure, thrown inside the item's stage and turned into an ItemResult. Codes only:
// the client-facing texts live in TypeScript, one table per interface.
struct ItemError {
  explicit ItemError(ItemErrorCode c, Base64Reason r = Base64Reason::None, int64_t n = 0, std::string what = {})
      : code(c), reason(r), count(n), internal(std::move(what)) {}
  ItemErrorCode code;
  Base64Reason reason;
  int64_t count;          // DataCharacters: the number of data characters
  std::string internal;   // Internal only: what failed, for logs (never shown to clients)
};

struct CatCandidate {
  std::array<int, 4> box{0, 0, 0, 0};
  double confidence = 0;
  double rawScore = 0;
};

// The one decision of what was found (PipelineSpec.cutoffs on the reported, rounded confidence).
enum class DetectionState { NotDetected, LowConfidence, Detected };

// What the verifier read on the reported candidate's crop.
struct Verification {
  double lookalikeMass = 0;
  double catMass = 0;
  double dogMass = 0;
  bool passed = false;
  int checked = 0;  // candidates the verifier looked at for this item
};

// What became of a candidate the detector proposed (the best view's boxes after NMS).
enum class ProposalOutcome { Chosen, BelowLowConfidence, BelowDetected, Vetoed, NotChosen };

// One candidate the detector proposed, with the verifier's reading of its crop when it read it.
struct Proposal {
  CatCandidate cat;
  std::optional<Verification> reading;
  ProposalOutcome outcome = ProposalOutcome::BelowLowConfidence;
};

struct ItemResult {
  bool ok = false;
  DetectionState detection = DetectionState::NotDetected;
  ItemError error{ItemErrorCode::Internal};
  int width = 0;
  int height = 0;
  std::optional<CatCandidate> cat;
  std::optional<double> score;
  std::optional<Verification> verification;  // with a verifier, for `detected` and vetoed items
  std::vector<float> output;  // the row of ClassifierSpec.embeddingOutput, for classified items
  std::vector<Proposal> proposals;  // ItemInput.explain only: every candidate, best first
  // Stage wall times of the analysis (micro-batch) this item was in, shared by its items: decode
  // and preprocessing (everything but the three below), detector Runs, crops (resize and tensor
  // fill of the classifier inputs, verifier readout), crop-network Runs, and the whole analysis.
  double decodeMs = 0;
  double detectMs = 0;
  double cropMs = 0;
  double classifyMs = 0;
  double analyzeMs = 0;
  // PrepareItem's own resize of this item's detector views (the micro-benchmark's figure).
  double preprocessMs = 0;
};

}  // namespace catcomfort
