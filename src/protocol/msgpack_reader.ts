// A minimal MessagePack reader for the two hot record shapes that msgpack_writer.ts writes (ingress entries, segment
// records): positional arrays of unsigned integers, strings, byte strings and nil, read in place with byte strings
// as views (no copies, no intermediate arrays). It reads only the types those writers (and msgpackr, which wrote
// them before) produce; any other type byte throws MsgpackShapeError, and callers then fall back to msgpackr so an
// unusual but valid encoding still decodes. Shared by the front and the workers; its one piece of state, the last short
// string read (str), is per thread.

/** The bytes hold a type this reader does not take (or are cut short): decode them with msgpackr instead. */
export class MsgpackShapeError extends Error {}

const float64View = new DataView(new ArrayBuffer(8));
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The last short ASCII string read (a topic id, in every ingress entry of a dispatch): when the next one has the same
 *  bytes it is the same string, with no decode and its hash already computed for the Map lookup that follows. The
 *  decode and the new string's hashing were a tenth of a partition worker's time in single produce. A stale value
 *  costs only a failed comparison. */
let lastShortAscii = '';
const lastShortAsciiLengthMax = 32;

export class MsgpackReader {
  constructor(
    readonly source: Uint8Array,
    public at: number,
    private readonly end: number,
  ) {}

  get done(): boolean {
    return this.at === this.end;
  }

  arrayHeader(): number {
    const type = this.byte();
    if ((type & 0xf0) === 0x90) return type & 0x0f;
    if (type === 0xdc) return this.be(2);
    if (type === 0xdd) return this.be(4);
    throw new MsgpackShapeError(`msgpack reader: 0x${type.toString(16)} is not an array header`);
  }

  uint(): number {
    const type = this.byte();
    if (type < 0x80) return type;
    switch (type) {
      case 0xcc: return this.be(1);
      case 0xcd: return this.be(2);
      case 0xce: return this.be(4);
      case 0xcf: {
        const value = this.be(4) * 2 ** 32 + this.be(4);
        if (!Number.isSafeInteger(value)) throw new MsgpackShapeError('msgpack reader: uint64 past 2^53');
        return value;
      }
      case 0xcb: {
        this.need(8);
        for (let i = 0; i < 8; i++) float64View.setUint8(i, this.source[this.at + i]!);
        this.at += 8;
        const value = float64View.getFloat64(0);
        if (!(Number.isSafeInteger(value) && value >= 0)) throw new MsgpackShapeError(`msgpack reader: float64 ${value} is no unsigned integer`);
        return value;
      }
      default:
        throw new MsgpackShapeError(`msgpack reader: 0x${type.toString(16)} is not an unsigned integer`);
    }
  }

  /** A byte string as a view into the source, or null for nil. */
  binOrNil(): Uint8Array | null {
    const type = this.byte();
    let length: number;
    if (type === 0xc0) return null;
    if (type === 0xc4) length = this.be(1);
    else if (type === 0xc5) length = this.be(2);
    else if (type === 0xc6) length = this.be(4);
    else throw new MsgpackShapeError(`msgpack reader: 0x${type.toString(16)} is not a byte string`);
    this.need(length);
    const view = this.source.subarray(this.at, this.at + length);
    this.at += length;
    return view;
  }

  str(): string {
    const type = this.byte();
    let length: number;
    if ((type & 0xe0) === 0xa0) length = type & 0x1f;
    else if (type === 0xd9) length = this.be(1);
    else if (type === 0xda) length = this.be(2);
    else if (type === 0xdb) length = this.be(4);
    else throw new MsgpackShapeError(`msgpack reader: 0x${type.toString(16)} is not a string`);
    this.need(length);
    const at = this.at;
    this.at += length;
    const short = length <= lastShortAsciiLengthMax;
    if (short && this.sameAsLastShortAscii(at, length)) return lastShortAscii;
    const text = utf8.decode(this.source.subarray(at, at + length));
    // Only an ASCII string (as many chars as bytes) compares char code to byte.
    if (short && text.length === length) lastShortAscii = text;
    return text;
  }

  private sameAsLastShortAscii(at: number, length: number): boolean {
    const last = lastShortAscii;
    if (last.length !== length) return false;
    const s = this.source;
    for (let i = 0; i < length; i++) if (s[at + i] !== last.charCodeAt(i)) return false;
    return true;
  }

  private byte(): number {
    this.need(1);
    return this.source[this.at++]!;
  }

  /** An unsigned big-endian integer of 1, 2 or 4 bytes. */
  private be(bytes: 1 | 2 | 4): number {
    this.need(bytes);
    const s = this.source;
    const at = this.at;
    this.at += bytes;
    if (bytes === 1) return s[at]!;
    if (bytes === 2) return (s[at]! << 8) | s[at + 1]!;
    return s[at]! * 0x1000000 + ((s[at + 1]! << 16) | (s[at + 2]! << 8) | s[at + 3]!);
  }

  private need(bytes: number): void {
    if (this.at + bytes > this.end) throw new MsgpackShapeError('msgpack reader: cut short');
  }
}
