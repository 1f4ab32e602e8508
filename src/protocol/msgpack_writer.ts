// A minimal MessagePack writer for the two hot record shapes (ingress entries, segment records): it writes
// positional arrays of unsigned integers, strings, byte strings and nil straight into a caller's buffer, with
// no intermediate objects. Output is plain MessagePack that msgpackr decodes; integers above 2^32 are written as
// float64, as msgpackr does, so they decode as numbers (not BigInt). Pure; shared by the front and the workers.

const float64View = new DataView(new ArrayBuffer(8));
const textEncoder = new TextEncoder();

export function arrayHeaderBytes(length: number): number {
  return length < 16 ? 1 : length < 0x10000 ? 3 : 5;
}

export function uintBytes(value: number): number {
  return value < 0x80 ? 1 : value < 0x100 ? 2 : value < 0x10000 ? 3 : value <= 0xffffffff ? 5 : 9;
}

export function binBytes(bytes: Uint8Array | null): number {
  if (bytes === null) return 1;
  const n = bytes.byteLength;
  return (n < 0x100 ? 2 : n < 0x10000 ? 3 : 5) + n;
}

/** Upper bound of a string's encoding (UTF-8 takes at most 3 bytes per UTF-16 unit). */
export function strBytesMax(text: string): number {
  return 5 + text.length * 3;
}

export class MsgpackWriter {
  at: number;

  constructor(readonly target: Uint8Array, at = 0) {
    this.at = at;
  }

  arrayHeader(length: number): void {
    const t = this.target;
    if (length < 16) t[this.at++] = 0x90 | length;
    else if (length < 0x10000) {
      t[this.at++] = 0xdc;
      t[this.at++] = length >>> 8;
      t[this.at++] = length & 0xff;
    } else {
      t[this.at++] = 0xdd;
      this.u32(length);
    }
  }

  uint(value: number): void {
    const t = this.target;
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`msgpack writer: ${value} is not an unsigned safe integer`);
    if (value < 0x80) t[this.at++] = value;
    else if (value < 0x100) {
      t[this.at++] = 0xcc;
      t[this.at++] = value;
    } else if (value < 0x10000) {
      t[this.at++] = 0xcd;
      t[this.at++] = value >>> 8;
      t[this.at++] = value & 0xff;
    } else if (value <= 0xffffffff) {
      t[this.at++] = 0xce;
      this.u32(value);
    } else {
      t[this.at++] = 0xcb;
      float64View.setFloat64(0, value);
      for (let i = 0; i < 8; i++) t[this.at++] = float64View.getUint8(i);
    }
  }

  /** A byte string, or nil for null. */
  bin(bytes: Uint8Array | null): void {
    const t = this.target;
    if (bytes === null) {
      t[this.at++] = 0xc0;
      return;
    }
    const n = bytes.byteLength;
    if (n < 0x100) {
      t[this.at++] = 0xc4;
      t[this.at++] = n;
    } else if (n < 0x10000) {
      t[this.at++] = 0xc5;
      t[this.at++] = n >>> 8;
      t[this.at++] = n & 0xff;
    } else {
      t[this.at++] = 0xc6;
      this.u32(n);
    }
    t.set(bytes, this.at);
    this.at += n;
  }

  str(text: string): void {
    if (text.length < 32 && this.shortAscii(text)) return;
    const t = this.target;
    // Reserve the largest header, encode, then move the bytes if a smaller header fits.
    const start = this.at;
    const { written } = textEncoder.encodeInto(text, t.subarray(start + 5));
    let header: number;
    if (written < 32) header = 1;
    else if (written < 0x100) header = 2;
    else if (written < 0x10000) header = 3;
    else header = 5;
    if (header !== 5) t.copyWithin(start + header, start + 5, start + 5 + written);
    if (header === 1) t[start] = 0xa0 | written;
    else if (header === 2) {
      t[start] = 0xd9;
      t[start + 1] = written;
    } else if (header === 3) {
      t[start] = 0xda;
      t[start + 1] = written >>> 8;
      t[start + 2] = written & 0xff;
    } else {
      t[start] = 0xdb;
      this.at = start + 1;
      this.u32(written);
    }
    this.at = start + header + written;
  }

  /** Writes text as a fixstr when it is ASCII (topic ids, names): a char-by-char copy costs less than the view and
   *  the encodeInto call of the general path. False, with only scratch written past `at`, when it is not. */
  private shortAscii(text: string): boolean {
    const t = this.target;
    const start = this.at;
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code > 0x7f) return false;
      t[start + 1 + i] = code;
    }
    t[start] = 0xa0 | text.length;
    this.at = start + 1 + text.length;
    return true;
  }

  private u32(value: number): void {
    const t = this.target;
    t[this.at++] = value >>> 24;
    t[this.at++] = (value >>> 16) & 0xff;
    t[this.at++] = (value >>> 8) & 0xff;
    t[this.at++] = value & 0xff;
  }
}
