// The test service's gRPC side: its port from the `grpc listening` line, and ModelInfer calls made
// by hand over node:http2 for the tests that must choose what reaches the server and when (part of
// a message, a reset at a chosen moment, a receive window of 0 so that no answer can arrive). The
// request is serialized with the service's own proto definition.
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { joinBytesElements } from '../../src/oip/bytes-elements';
import { PROTO_FILE } from '../../src/oip/grpc/server';
import { waitFor } from './wait';

/** The port of the service's `grpc listening` line, once its output has it (it may reach us after /readyz's answer). */
export function grpcListeningPort(output: () => string): Promise<number> {
  return waitFor('the "grpc listening" line', () => {
    for (const line of output().split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { msg?: string; port?: number };
      if (entry.msg === 'grpc listening' && entry.port) return entry.port;
    }
    return null;
  }, { timeoutMs: 10_000 });
}

const definition = protoLoader.loadSync(PROTO_FILE, { keepCase: true, longs: Number, defaults: true, oneofs: true });
const modelInfer = (grpc.loadPackageDefinition(definition) as any).inference.GRPCInferenceService.service.ModelInfer;

/** A ModelInfer request of `images` (encoded files) for bc-v1 as gRPC frames it: a 5-byte head, then the message. */
export function modelInferFrame(images: Buffer[]): Buffer {
  const message: Buffer = modelInfer.requestSerialize({
    model_name: 'bc-v1',
    inputs: [{ name: 'image', datatype: 'BYTES', shape: [images.length] }],
    raw_input_contents: [joinBytesElements(images)],
  });
  const head = Buffer.alloc(5);
  head.writeUInt32BE(message.length, 1);
  return Buffer.concat([head, message]);
}

export interface HandCall {
  /** Sends request bytes (and with `end`, the end of the request); resolves once they are on the socket. */
  write(bytes: Buffer, end?: boolean): Promise<void>;
  /** The grpc-status the server sent, once it has (undefined if the stream closed without one). */
  status: Promise<string | undefined>;
  /** Resets the stream with CANCEL, as a client that cancels does, and closes the connection. */
  cancel(): Promise<void>;
}

/** A ModelInfer call on its own connection; `receiveWindow: 0` lets no answer data through. */
export function handCall(port: number, metadata: Record<string, string>, options: { receiveWindow?: number } = {}): HandCall {
  const session = http2.connect(`http://127.0.0.1:${port}`, options.receiveWindow === undefined ? {} : { settings: { initialWindowSize: options.receiveWindow } });
  session.on('error', () => undefined); // a reset connection is what some tests make
  const stream = session.request(
    { ':method': 'POST', ':path': '/inference.GRPCInferenceService/ModelInfer', 'content-type': 'application/grpc', te: 'trailers', ...metadata },
    { endStream: false },
  );
  stream.on('error', () => undefined);
  const status = new Promise<string | undefined>((resolve) => {
    const read = (headers: http2.IncomingHttpHeaders) => {
      const value = headers['grpc-status'];
      if (value !== undefined) resolve(String(value));
    };
    stream.on('response', read);
    stream.on('trailers', read);
    stream.on('close', () => resolve(undefined));
    stream.resume();
  });
  return {
    write: (bytes, end = false) => new Promise((resolve, reject) => (end ? stream.end(bytes, () => resolve()) : stream.write(bytes, (error) => (error ? reject(error) : resolve())))),
    status,
    cancel: () =>
      new Promise((resolve) => {
        stream.close(http2.constants.NGHTTP2_CANCEL, () => session.close(() => resolve()));
      }),
  };
}
