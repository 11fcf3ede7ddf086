// Our gRPC service (inference.GRPCInferenceService, proto/inference.proto) from the bench's side:
// @grpc/grpc-js with the proto loaded as the service loads it (proto-loader, keepCase), one channel
// (one HTTP/2 connection) per target, ModelInfer with one photo per call and the key in the `api-key`
// metadata. A target is a URL, grpc://HOST:PORT/<model> (bench/protocols.ts).
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { splitBytesElements } from '../src/oip/bytes-elements';
import { PROTO_FILE } from '../src/oip/grpc/server';
import type { ModelInferResponse } from '../src/oip/grpc/messages';
import type { Outcome, SendOne } from './load-window';
import { answerOfOutputs, modelInferRequest, type Answer } from './protocols';

type InferRequest = ReturnType<typeof modelInferRequest>;

interface InferenceClient extends grpc.Client {
  ModelInfer(request: InferRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<ModelInferResponse>): grpc.ClientUnaryCall;
}

interface InferenceClientConstructor {
  new (address: string, credentials: grpc.ChannelCredentials): InferenceClient;
  service: grpc.ServiceDefinition;
}

let clientConstructor: InferenceClientConstructor | undefined;

function inferenceService(): InferenceClientConstructor {
  if (!clientConstructor) {
    const definition = protoLoader.loadSync(PROTO_FILE, { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
    clientConstructor = (grpc.loadPackageDefinition(definition) as any).inference.GRPCInferenceService as InferenceClientConstructor;
  }
  return clientConstructor;
}

interface GrpcTarget {
  client: InferenceClient;
  model: string;
}

export function connectGrpc(url: string): GrpcTarget {
  const u = new URL(url);
  const Client = inferenceService();
  return { client: new Client(u.host, grpc.credentials.createInsecure()), model: decodeURIComponent(u.pathname.slice(1)) };
}

function modelInfer(target: GrpcTarget, request: InferRequest, apiKey: string, timeoutS: number): Promise<ModelInferResponse> {
  const metadata = new grpc.Metadata();
  metadata.set('api-key', apiKey);
  return new Promise((resolve, reject) => {
    target.client.ModelInfer(request, metadata, { deadline: Date.now() + timeoutS * 1000 }, (error, response) => (error ? reject(error) : resolve(response!)));
  });
}

/** A failed call's outcome: the service's answers carry its error-code trailer; without one there was no answer. */
function failure(error: grpc.ServiceError): Outcome {
  const code = error.metadata?.get('error-code')[0];
  if (code === 'overloaded') return 'overloaded';
  if (code !== undefined) return { refused: grpc.status[error.code] ?? String(error.code) };
  return error.code === grpc.status.DEADLINE_EXCEEDED ? 'timeout' : 'error';
}

/** ModelInfer with photo number `index` of `photos`, for the closed load loop. */
export function grpcSender(url: string, apiKey: string, photos: Buffer[], timeoutS: number): SendOne {
  const target = connectGrpc(url);
  const requests = photos.map((p) => modelInferRequest(p, target.model));
  return (index) => modelInfer(target, requests[index % requests.length]!, apiKey, timeoutS).then(() => 'ok' as const, failure);
}

/** One photo's answer over gRPC; rejects with the call's status. */
export async function grpcAnswer(target: GrpcTarget, photo: Buffer, apiKey: string): Promise<Answer> {
  const response = await modelInfer(target, modelInferRequest(photo, target.model), apiKey, 120);
  return answerOfOutputs(
    response.outputs.map((o, i) => {
      const raw = response.raw_output_contents[i] ?? Buffer.alloc(0);
      if (o.datatype === 'BYTES') return { name: o.name, values: (splitBytesElements(raw) ?? []).map((b) => b.toString('utf8')) };
      return { name: o.name, values: o.datatype === 'FP32' ? Array.from({ length: raw.length / 4 }, (_, k) => raw.readFloatLE(k * 4)) : [] };
    }),
  );
}

/** The size of a ModelInferRequest on the wire (its protobuf encoding, before gRPC's 5-byte frame). */
export function grpcRequestBytes(photo: Buffer, model: string): number {
  return inferenceService().service.ModelInfer!.requestSerialize(modelInferRequest(photo, model)).length;
}
