// IEEE 754 half precision (binary16) to single: every half value is exactly representable as a
// float32, so widening the weights loses nothing.

export function halfToFloat(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24; // zero and subnormals
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

/** Little-endian binary16 values to float32. */
export function widenFloat16(bytes: Buffer): Float32Array {
  if (bytes.length % 2 !== 0) throw new Error(`float16 data of odd length ${bytes.length}`);
  const out = new Float32Array(bytes.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = halfToFloat(bytes.readUInt16LE(i * 2));
  return out;
}
