// MD5 (RFC 1321), streaming: web-llm's tensor-cache.json lists each weight shard's md5sum, and a shard is
// verified as it is read without a second copy of it. No MD5 is in the browser (SubtleCrypto has none)
// nor among the project's dependencies; this one is checked against RFC 1321's vectors and node:crypto.
// The 64 steps are written out, as in the RFC's reference code: a loop over tables runs ~4x slower in V8.

const LITTLE_ENDIAN = new Uint8Array(Uint32Array.of(1).buffer)[0] === 1;

/** Incremental MD5: update() with the bytes in any number of pieces, then hex(). */
export class Md5 {
  private readonly state = Int32Array.of(0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476);
  /** Bytes of an incomplete 64-byte block carried to the next update(). */
  private readonly pending = new Uint8Array(64);
  private pendingLength = 0;
  private readonly scratch = new Int32Array(16);
  private length = 0;
  private done = false;

  update(data: Uint8Array): this {
    if (this.done) throw new Error('Md5: update() after hex()');
    this.length += data.byteLength;
    let pos = 0;
    if (this.pendingLength > 0) {
      pos = Math.min(64 - this.pendingLength, data.byteLength);
      this.pending.set(data.subarray(0, pos), this.pendingLength);
      this.pendingLength += pos;
      if (this.pendingLength < 64) return this;
      this.blockFromBytes(this.pending, 0);
      this.pendingLength = 0;
    }
    const blocks = Math.floor((data.byteLength - pos) / 64);
    const at = data.byteOffset + pos;
    if (blocks > 0 && LITTLE_ENDIAN && at % 4 === 0) {
      // The bytes are the message words already: no copy.
      compress(this.state, new Int32Array(data.buffer, at, blocks * 16), blocks);
    } else {
      for (let k = 0; k < blocks; k++) this.blockFromBytes(data, pos + 64 * k);
    }
    pos += 64 * blocks;
    this.pending.set(data.subarray(pos), 0);
    this.pendingLength = data.byteLength - pos;
    return this;
  }

  /** The digest as 32 lowercase hex digits (as md5sum and tensor-cache.json write it). */
  hex(): string {
    if (!this.done) {
      const bits = this.length * 8;
      const tail = new Uint8Array(this.pendingLength < 56 ? 64 : 128);
      tail.set(this.pending.subarray(0, this.pendingLength));
      tail[this.pendingLength] = 0x80;
      const dv = new DataView(tail.buffer);
      dv.setUint32(tail.length - 8, bits >>> 0, true);
      dv.setUint32(tail.length - 4, Math.floor(bits / 2 ** 32), true);
      for (let at = 0; at < tail.length; at += 64) this.blockFromBytes(tail, at);
      this.done = true;
    }
    let out = '';
    for (const word of this.state) for (let i = 0; i < 4; i++) out += ((word >>> (8 * i)) & 0xff).toString(16).padStart(2, '0');
    return out;
  }

  private blockFromBytes(b: Uint8Array, p: number): void {
    for (let j = 0; j < 16; j++, p += 4) this.scratch[j] = b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24);
    compress(this.state, this.scratch, 1);
  }
}

/** MD5 of `data` as 32 hex digits. */
export function md5Hex(data: Uint8Array): string {
  return new Md5().update(data).hex();
}

/** Runs `blocks` 64-byte blocks (16 little-endian words each, from w[0]) through the state. */
function compress(state: Int32Array, w: Int32Array, blocks: number): void {
  let a0 = state[0];
  let b0 = state[1];
  let c0 = state[2];
  let d0 = state[3];
  for (let o = 0; o < 16 * blocks; o += 16) {
    const x0 = w[o], x1 = w[o + 1], x2 = w[o + 2], x3 = w[o + 3], x4 = w[o + 4], x5 = w[o + 5], x6 = w[o + 6], x7 = w[o + 7];
    const x8 = w[o + 8], x9 = w[o + 9], x10 = w[o + 10], x11 = w[o + 11], x12 = w[o + 12], x13 = w[o + 13], x14 = w[o + 14], x15 = w[o + 15];
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    // Round 1
    a = (a + ((b & c) | (~b & d)) + 0xd76aa478 + x0) | 0;  a = ((a << 7) | (a >>> 25)) + b | 0;
    d = (d + ((a & b) | (~a & c)) + 0xe8c7b756 + x1) | 0;  d = ((d << 12) | (d >>> 20)) + a | 0;
    c = (c + ((d & a) | (~d & b)) + 0x242070db + x2) | 0;  c = ((c << 17) | (c >>> 15)) + d | 0;
    b = (b + ((c & d) | (~c & a)) + 0xc1bdceee + x3) | 0;  b = ((b << 22) | (b >>> 10)) + c | 0;
    a = (a + ((b & c) | (~b & d)) + 0xf57c0faf + x4) | 0;  a = ((a << 7) | (a >>> 25)) + b | 0;
    d = (d + ((a & b) | (~a & c)) + 0x4787c62a + x5) | 0;  d = ((d << 12) | (d >>> 20)) + a | 0;
    c = (c + ((d & a) | (~d & b)) + 0xa8304613 + x6) | 0;  c = ((c << 17) | (c >>> 15)) + d | 0;
    b = (b + ((c & d) | (~c & a)) + 0xfd469501 + x7) | 0;  b = ((b << 22) | (b >>> 10)) + c | 0;
    a = (a + ((b & c) | (~b & d)) + 0x698098d8 + x8) | 0;  a = ((a << 7) | (a >>> 25)) + b | 0;
    d = (d + ((a & b) | (~a & c)) + 0x8b44f7af + x9) | 0;  d = ((d << 12) | (d >>> 20)) + a | 0;
    c = (c + ((d & a) | (~d & b)) + 0xffff5bb1 + x10) | 0;  c = ((c << 17) | (c >>> 15)) + d | 0;
    b = (b + ((c & d) | (~c & a)) + 0x895cd7be + x11) | 0;  b = ((b << 22) | (b >>> 10)) + c | 0;
    a = (a + ((b & c) | (~b & d)) + 0x6b901122 + x12) | 0;  a = ((a << 7) | (a >>> 25)) + b | 0;
    d = (d + ((a & b) | (~a & c)) + 0xfd987193 + x13) | 0;  d = ((d << 12) | (d >>> 20)) + a | 0;
    c = (c + ((d & a) | (~d & b)) + 0xa679438e + x14) | 0;  c = ((c << 17) | (c >>> 15)) + d | 0;
    b = (b + ((c & d) | (~c & a)) + 0x49b40821 + x15) | 0;  b = ((b << 22) | (b >>> 10)) + c | 0;
    // Round 2
    a = (a + ((b & d) | (c & ~d)) + 0xf61e2562 + x1) | 0;  a = ((a << 5) | (a >>> 27)) + b | 0;
    d = (d + ((a & c) | (b & ~c)) + 0xc040b340 + x6) | 0;  d = ((d << 9) | (d >>> 23)) + a | 0;
    c = (c + ((d & b) | (a & ~b)) + 0x265e5a51 + x11) | 0;  c = ((c << 14) | (c >>> 18)) + d | 0;
    b = (b + ((c & a) | (d & ~a)) + 0xe9b6c7aa + x0) | 0;  b = ((b << 20) | (b >>> 12)) + c | 0;
    a = (a + ((b & d) | (c & ~d)) + 0xd62f105d + x5) | 0;  a = ((a << 5) | (a >>> 27)) + b | 0;
    d = (d + ((a & c) | (b & ~c)) + 0x02441453 + x10) | 0;  d = ((d << 9) | (d >>> 23)) + a | 0;
    c = (c + ((d & b) | (a & ~b)) + 0xd8a1e681 + x15) | 0;  c = ((c << 14) | (c >>> 18)) + d | 0;
    b = (b + ((c & a) | (d & ~a)) + 0xe7d3fbc8 + x4) | 0;  b = ((b << 20) | (b >>> 12)) + c | 0;
    a = (a + ((b & d) | (c & ~d)) + 0x21e1cde6 + x9) | 0;  a = ((a << 5) | (a >>> 27)) + b | 0;
    d = (d + ((a & c) | (b & ~c)) + 0xc33707d6 + x14) | 0;  d = ((d << 9) | (d >>> 23)) + a | 0;
    c = (c + ((d & b) | (a & ~b)) + 0xf4d50d87 + x3) | 0;  c = ((c << 14) | (c >>> 18)) + d | 0;
    b = (b + ((c & a) | (d & ~a)) + 0x455a14ed + x8) | 0;  b = ((b << 20) | (b >>> 12)) + c | 0;
    a = (a + ((b & d) | (c & ~d)) + 0xa9e3e905 + x13) | 0;  a = ((a << 5) | (a >>> 27)) + b | 0;
    d = (d + ((a & c) | (b & ~c)) + 0xfcefa3f8 + x2) | 0;  d = ((d << 9) | (d >>> 23)) + a | 0;
    c = (c + ((d & b) | (a & ~b)) + 0x676f02d9 + x7) | 0;  c = ((c << 14) | (c >>> 18)) + d | 0;
    b = (b + ((c & a) | (d & ~a)) + 0x8d2a4c8a + x12) | 0;  b = ((b << 20) | (b >>> 12)) + c | 0;
    // Round 3
    a = (a + (b ^ c ^ d) + 0xfffa3942 + x5) | 0;  a = ((a << 4) | (a >>> 28)) + b | 0;
    d = (d + (a ^ b ^ c) + 0x8771f681 + x8) | 0;  d = ((d << 11) | (d >>> 21)) + a | 0;
    c = (c + (d ^ a ^ b) + 0x6d9d6122 + x11) | 0;  c = ((c << 16) | (c >>> 16)) + d | 0;
    b = (b + (c ^ d ^ a) + 0xfde5380c + x14) | 0;  b = ((b << 23) | (b >>> 9)) + c | 0;
    a = (a + (b ^ c ^ d) + 0xa4beea44 + x1) | 0;  a = ((a << 4) | (a >>> 28)) + b | 0;
    d = (d + (a ^ b ^ c) + 0x4bdecfa9 + x4) | 0;  d = ((d << 11) | (d >>> 21)) + a | 0;
    c = (c + (d ^ a ^ b) + 0xf6bb4b60 + x7) | 0;  c = ((c << 16) | (c >>> 16)) + d | 0;
    b = (b + (c ^ d ^ a) + 0xbebfbc70 + x10) | 0;  b = ((b << 23) | (b >>> 9)) + c | 0;
    a = (a + (b ^ c ^ d) + 0x289b7ec6 + x13) | 0;  a = ((a << 4) | (a >>> 28)) + b | 0;
    d = (d + (a ^ b ^ c) + 0xeaa127fa + x0) | 0;  d = ((d << 11) | (d >>> 21)) + a | 0;
    c = (c + (d ^ a ^ b) + 0xd4ef3085 + x3) | 0;  c = ((c << 16) | (c >>> 16)) + d | 0;
    b = (b + (c ^ d ^ a) + 0x04881d05 + x6) | 0;  b = ((b << 23) | (b >>> 9)) + c | 0;
    a = (a + (b ^ c ^ d) + 0xd9d4d039 + x9) | 0;  a = ((a << 4) | (a >>> 28)) + b | 0;
    d = (d + (a ^ b ^ c) + 0xe6db99e5 + x12) | 0;  d = ((d << 11) | (d >>> 21)) + a | 0;
    c = (c + (d ^ a ^ b) + 0x1fa27cf8 + x15) | 0;  c = ((c << 16) | (c >>> 16)) + d | 0;
    b = (b + (c ^ d ^ a) + 0xc4ac5665 + x2) | 0;  b = ((b << 23) | (b >>> 9)) + c | 0;
    // Round 4
    a = (a + (c ^ (b | ~d)) + 0xf4292244 + x0) | 0;  a = ((a << 6) | (a >>> 26)) + b | 0;
    d = (d + (b ^ (a | ~c)) + 0x432aff97 + x7) | 0;  d = ((d << 10) | (d >>> 22)) + a | 0;
    c = (c + (a ^ (d | ~b)) + 0xab9423a7 + x14) | 0;  c = ((c << 15) | (c >>> 17)) + d | 0;
    b = (b + (d ^ (c | ~a)) + 0xfc93a039 + x5) | 0;  b = ((b << 21) | (b >>> 11)) + c | 0;
    a = (a + (c ^ (b | ~d)) + 0x655b59c3 + x12) | 0;  a = ((a << 6) | (a >>> 26)) + b | 0;
    d = (d + (b ^ (a | ~c)) + 0x8f0ccc92 + x3) | 0;  d = ((d << 10) | (d >>> 22)) + a | 0;
    c = (c + (a ^ (d | ~b)) + 0xffeff47d + x10) | 0;  c = ((c << 15) | (c >>> 17)) + d | 0;
    b = (b + (d ^ (c | ~a)) + 0x85845dd1 + x1) | 0;  b = ((b << 21) | (b >>> 11)) + c | 0;
    a = (a + (c ^ (b | ~d)) + 0x6fa87e4f + x8) | 0;  a = ((a << 6) | (a >>> 26)) + b | 0;
    d = (d + (b ^ (a | ~c)) + 0xfe2ce6e0 + x15) | 0;  d = ((d << 10) | (d >>> 22)) + a | 0;
    c = (c + (a ^ (d | ~b)) + 0xa3014314 + x6) | 0;  c = ((c << 15) | (c >>> 17)) + d | 0;
    b = (b + (d ^ (c | ~a)) + 0x4e0811a1 + x13) | 0;  b = ((b << 21) | (b >>> 11)) + c | 0;
    a = (a + (c ^ (b | ~d)) + 0xf7537e82 + x4) | 0;  a = ((a << 6) | (a >>> 26)) + b | 0;
    d = (d + (b ^ (a | ~c)) + 0xbd3af235 + x11) | 0;  d = ((d << 10) | (d >>> 22)) + a | 0;
    c = (c + (a ^ (d | ~b)) + 0x2ad7d2bb + x2) | 0;  c = ((c << 15) | (c >>> 17)) + d | 0;
    b = (b + (d ^ (c | ~a)) + 0xeb86d391 + x9) | 0;  b = ((b << 21) | (b >>> 11)) + c | 0;
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
  }
  state[0] = a0;
  state[1] = b0;
  state[2] = c0;
  state[3] = d0;
}
