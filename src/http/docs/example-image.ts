// The photo the OpenAPI documents use as their request example, so that "Try it out" sends a
// real cat and gets a 200: models/example-cat.jpg, skimage's CC0 "chelsea" at 160x106 (4 KB).
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const EXAMPLE_IMAGE_FILE = path.join(__dirname, '../../../../models/example-cat.jpg');

/** The example photo as base64 (standard alphabet, padded), read from the file at each call. */
export function exampleImageBase64(): string {
  return readFileSync(EXAMPLE_IMAGE_FILE).toString('base64');
}
