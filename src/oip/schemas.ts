// The Open Inference Protocol's REST bodies as TypeBox schemas, for the OpenAPI document (the
// requests themselves are checked field by field in rest.ts, with 422s naming the field).
import { Type } from '@sinclair/typebox';
import { THRESHOLD_RANGE } from '../v2/schemas';

const Datatype = Type.Union([Type.Literal('BYTES'), Type.Literal('FP32'), Type.Literal('INT32')]);

const TensorMetadata = Type.Object({
  name: Type.String(),
  datatype: Datatype,
  shape: Type.Array(Type.Integer(), { description: '-1: any size (the number of images)' }),
});

export const OipServerMetadata = Type.Object(
  { name: Type.String(), version: Type.String({ description: 'Service release' }), extensions: Type.Array(Type.String()) },
  { $id: 'OipServerMetadata' },
);

export const OipModelMetadata = Type.Object(
  {
    name: Type.String({ description: 'The pack id' }),
    versions: Type.Array(Type.String(), { description: 'Pack versions that answer: the serving one, and a canary' }),
    platform: Type.String(),
    inputs: Type.Array(TensorMetadata),
    outputs: Type.Array(TensorMetadata),
  },
  { $id: 'OipModelMetadata' },
);

export const OipLive = Type.Object({ live: Type.Boolean() }, { $id: 'OipLive' });
export const OipReady = Type.Object({ ready: Type.Boolean() }, { $id: 'OipReady' });
export const OipModelReady = Type.Object({ name: Type.String(), ready: Type.Boolean() }, { $id: 'OipModelReady' });

const InputTensor = Type.Object({
  name: Type.Literal('image'),
  datatype: Type.Literal('BYTES'),
  shape: Type.Array(Type.Integer({ minimum: 1 }), { minItems: 1, maxItems: 1, description: '[N]: N images, at most the model queue' }),
  data: Type.Optional(Type.Array(Type.String(), { description: 'Each image in base64 (JSON form)' })),
  parameters: Type.Optional(
    Type.Object({ binary_data_size: Type.Optional(Type.Integer({ minimum: 0, description: "Bytes of this tensor after the JSON header (binary form)" })) }),
  ),
});

const RequestedOutput = Type.Object({
  name: Type.String({ description: 'detection, confidence, box, score, label or image_size' }),
  parameters: Type.Optional(Type.Object({ binary_data: Type.Optional(Type.Boolean({ description: 'Send this output as binary data' })) })),
});

export const OipInferRequest = Type.Object(
  {
    id: Type.Optional(Type.String({ description: 'Echoed in the answer' })),
    parameters: Type.Optional(
      Type.Object({
        threshold: Type.Optional(Type.Number({ ...THRESHOLD_RANGE, description: "Discomfort threshold; default the model's" })),
        binary_data_output: Type.Optional(Type.Boolean({ description: 'Send every output as binary data' })),
      }),
    ),
    inputs: Type.Array(InputTensor, { minItems: 1, maxItems: 1 }),
    outputs: Type.Optional(Type.Array(RequestedOutput, { description: 'Omitted: all six' })),
  },
  { $id: 'OipInferRequest' },
);

const OutputTensor = Type.Object({
  name: Type.String(),
  datatype: Datatype,
  shape: Type.Array(Type.Integer()),
  data: Type.Optional(Type.Array(Type.Union([Type.String(), Type.Number()]), { description: 'Row-major values (JSON form)' })),
  parameters: Type.Optional(Type.Object({ binary_data_size: Type.Integer({ minimum: 0 }) })),
});

export const OipInferResponse = Type.Object(
  {
    model_name: Type.String(),
    model_version: Type.String({ description: 'The pack version that answered (a canary answers with its own)' }),
    id: Type.Optional(Type.String()),
    outputs: Type.Array(OutputTensor),
  },
  { $id: 'OipInferResponse' },
);

export const OipError = Type.Object(
  {
    error: Type.String({ description: 'Human-readable text; wording may change' }),
    code: Type.String({ description: 'Our stable machine-readable code' }),
    details: Type.Record(Type.String(), Type.Unknown(), { description: 'Always `{}` when empty' }),
    request_id: Type.String(),
  },
  { $id: 'OipError' },
);
