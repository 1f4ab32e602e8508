// A segment's dense offset index: entry k (u32 little-endian) is the byte position in the segment's
// .log of the frame holding offset baseOffset + k. Runs on a partition worker thread; segment_log.ts
// keeps the active segment's entries in a SegmentPositions and reads sealed segments' .idx from disk.
import assert from 'node:assert/strict';
import { u32le } from '../../src/util/frame.js';

export const indexEntryBytes = 4;

/** u32 entries: a segment's frames must start below 4 GiB, so segment_bytes is capped at this. */
export const segmentPositionLimit = 2 ** 32;

/** Positions start this many entries long and double: an idle partition holds 256 B of them, not 4 KiB. */
const positionsInitial = 64;

/** A growable list of frame positions: compact (4 bytes per record) even for millions of records. */
export class SegmentPositions {
  private values = new Uint32Array(positionsInitial);
  private count = 0;

  get length(): number {
    return this.count;
  }

  push(position: number): void {
    if (!(Number.isInteger(position) && position >= 0)) assert.fail(`segment position ${position} is not a byte position`);
    if (!(position < segmentPositionLimit)) assert.fail(`segment position ${position} does not fit an index entry`);
    if (!(this.count === 0 || position > this.values[this.count - 1]!)) assert.fail(`segment position ${position} goes back`);
    if (this.count === this.values.length) {
      const grown = new Uint32Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count] = position;
    this.count += 1;
  }

  at(k: number): number {
    if (!(Number.isInteger(k) && k >= 0 && k < this.count)) assert.fail(`index entry ${k} out of range ${this.count}`);
    return this.values[k]!;
  }

  /** The .idx bytes of entries [from, to). */
  encode(from: number, to: number): Uint8Array {
    if (!(from >= 0 && from <= to)) assert.fail(`index entries [${from}, ${to}) are not a range`);
    if (!(to <= this.count)) assert.fail(`index entries [${from}, ${to}) out of range ${this.count}`);
    const out = new Uint8Array((to - from) * indexEntryBytes);
    const view = new DataView(out.buffer);
    for (let k = from; k < to; k++) view.setUint32((k - from) * indexEntryBytes, this.values[k]!, true);
    return out;
  }
}

/** Entry k of .idx bytes read from disk (bytes holds entries starting at entry 0 of the read). */
export function indexEntryRead(bytes: Uint8Array, k: number): number {
  // A sealed run reads one entry per record it returns: a DataView each cost a tenth of the read's CPU.
  return u32le(bytes, k * indexEntryBytes);
}
