// Per-origin ingress positions of one partition's records that other nodes handed over (issue 29): an origin re-sends
// a hand-off it has no answer for, so the partition must know, per origin, the last (seq, index) it holds. Kept three
// ways as the local position is (staged, written by a finished flush, as of a segment roll) and persisted at each
// roll (and at a retention that deletes every segment) in origins.mark; open() scans the active segment for the rest.
// Partition worker thread; partition_offsets.ts owns one per store.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { encodeFrame, frameBodyBytesMax, scanFrames } from '../../src/util/frame.js';
import { fileReplaceDurably } from '../../src/util/durable_fs.js';
import type { IngressPosition } from './segment_store.js';

export const originsMarkFileName = 'origins.mark';

/** Origin 0 is the node's own ingress log: the position local records carry. */
export type OriginMap = Map<number, IngressPosition>;

const packr = new Packr({ useRecords: false, moreTypes: false });

/** The positions of staged records, one column per field: staging runs per record, and an object per record was
 *  most of what a worker allocated for fan-out copies. */
class PositionColumns {
  readonly offsets: number[] = [];
  readonly origins: number[] = [];
  readonly seqs: number[] = [];
  readonly indexes: number[] = [];

  get length(): number {
    return this.offsets.length;
  }

  push(offset: number, origin: number, seq: number, index: number): void {
    this.offsets.push(offset);
    this.origins.push(origin);
    this.seqs.push(seq);
    this.indexes.push(index);
  }

  clear(): void {
    this.offsets.length = 0;
    this.origins.length = 0;
    this.seqs.length = 0;
    this.indexes.length = 0;
  }
}

/** Moves origin's position in map, in place: the map's position objects are this class's own. */
function positionSet(map: OriginMap, origin: number, seq: number, index: number): void {
  const position = map.get(origin);
  if (position === undefined) map.set(origin, { seq, index });
  else {
    position.seq = seq;
    position.index = index;
  }
}

export function positionAfter(last: IngressPosition | undefined | null, seq: number, index: number): boolean {
  return last === undefined || last === null || seq > last.seq || (seq === last.seq && index > last.index);
}

export class OriginPositions {
  /** Last staged or stored position per foreign origin: what holds() answers. */
  private readonly staged: OriginMap = new Map();
  /** Last position per foreign origin that a finished flush wrote. */
  private readonly written: OriginMap = new Map();
  private stagedRecords = new PositionColumns();
  private flushingRecords = new PositionColumns();

  get any(): boolean {
    return this.staged.size > 0;
  }

  holds(origin: number, seq: number, index: number): boolean {
    return !positionAfter(this.staged.get(origin), seq, index);
  }

  stage(offset: number, origin: number, seq: number, index: number): void {
    positionSet(this.staged, origin, seq, index);
    this.stagedRecords.push(offset, origin, seq, index);
  }

  /** A flush takes the records staged so far (the columns of the last flush, emptied, take the next ones). */
  flushBegin(): void {
    const emptied = this.flushingRecords;
    emptied.clear();
    this.flushingRecords = this.stagedRecords;
    this.stagedRecords = emptied;
  }

  flushEnd(): void {
    const f = this.flushingRecords;
    for (let i = 0; i < f.length; i++) positionSet(this.written, f.origins[i]!, f.seqs[i]!, f.indexes[i]!);
    f.clear();
  }

  /** The positions of every record below offset, for a roll at offset during a flush; local: this node's position
   *  before the flush (origin 0). Objects of its own: the roll writes them while staging goes on. */
  writtenBelow(offset: number, local: IngressPosition | null): OriginMap {
    const below: OriginMap = new Map();
    for (const [origin, p] of this.written) below.set(origin, { seq: p.seq, index: p.index });
    if (local !== null) below.set(0, { seq: local.seq, index: local.index });
    const f = this.flushingRecords;
    for (let i = 0; i < f.length; i++) if (f.offsets[i]! < offset) positionSet(below, f.origins[i]!, f.seqs[i]!, f.indexes[i]!);
    return below;
  }

  /** Recovery: a position read back from the origins mark or a record found at open. */
  recovered(origin: number, position: IngressPosition): void {
    positionSet(this.staged, origin, position.seq, position.index);
    positionSet(this.written, origin, position.seq, position.index);
  }
}

/** Writes the positions as of a sealed segment's end, durably (before the next segment takes records). */
export async function originsMarkWrite(dir: string, positions: OriginMap): Promise<void> {
  const wire = [...positions].map(([origin, p]) => [origin, p.seq, p.index]);
  await fileReplaceDurably(dir, originsMarkFileName, encodeFrame(packr.pack(wire)));
}

/** The positions of the last roll, or null when the partition never held a handed-over record at a roll. */
export async function originsMarkRead(dir: string): Promise<OriginMap | null> {
  const path = join(dir, originsMarkFileName);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const scan = scanFrames(bytes, frameBodyBytesMax);
  const body = scan.bodies[0];
  if (body === undefined || scan.validBytes !== bytes.byteLength) throw new Error(`${path} fails its length or crc check`);
  const wire = packr.unpack(body) as unknown;
  if (!Array.isArray(wire)) throw new Error(`${path}: malformed body`);
  const positions: OriginMap = new Map();
  for (const item of wire as unknown[]) {
    const [origin, seq, index] = item as number[];
    if (![origin, seq, index].every((n) => Number.isSafeInteger(n) && n! >= 0)) throw new Error(`${path}: malformed entry`);
    positions.set(origin!, { seq: seq!, index: index! });
  }
  return positions;
}
