// The frames a partition log has staged since its last flush, in blocks taken from a pool of the worker thread: a
// frame never straddles two blocks, and a round that stages more than its block holds takes another rather than
// growing one. Growing a single buffer copied what was staged at every doubling and, with rounds of varying size,
// kept needing buffers larger than the pool held: at a million batch-produced messages a second a partition worker
// copied 20-80 MB/s and allocated 60-270 MB/s of fresh memory, with two to four times the page faults it has now
// (docs/performance.md, "Staging in pooled blocks"). Frames are addressed by their position in the virtual
// concatenation of the blocks' used bytes, which is also their order in the .log, so a flush writes any run of them
// with one writev.
// Partition worker thread; module state (the pools) is the thread's.
import { writeAllSync, writevAllSync } from '../../src/util/durable_fs.js';
import { wordsOf } from '../../src/util/frame.js';
import { unzeroedOwnBytes } from '../../src/util/owned_bytes.js';

/** A round's first block: a single produce round stages a frame or two per partition, and one over many partitions
 *  takes a block for each, so it starts small. */
const stagingBlockBytesSmall = 4 * 1024;
/** Every later block of a round, and the first of a partition whose last round staged more than a small block. */
const stagingBlockBytesLarge = 64 * 1024;
/** What each pool keeps of the blocks given back, in bytes: a round's worth of small blocks over a hundred
 *  partitions, and batch produce's large blocks for a few partitions, with memory bounded after a burst. */
const smallPoolBytesMax = 1024 * 1024;
const largePoolBytesMax = 4 * 1024 * 1024;

interface Block {
  bytes: Uint8Array<ArrayBuffer>;
  /** wordsOf(bytes), for the frames' crcs (sealFrame). */
  words: DataView;
}

class BlockPool {
  private readonly blocks: Block[] = [];

  constructor(private readonly blockBytes: number, private readonly blocksMax: number) {}

  take(): Block {
    const pooled = this.blocks.pop();
    if (pooled !== undefined) return pooled;
    const bytes = unzeroedOwnBytes(this.blockBytes);
    return { bytes, words: wordsOf(bytes) };
  }

  giveBack(block: Block): void {
    if (this.blocks.length < this.blocksMax) this.blocks.push(block);
  }
}

const smallPool = new BlockPool(stagingBlockBytesSmall, smallPoolBytesMax / stagingBlockBytesSmall);
const largePool = new BlockPool(stagingBlockBytesLarge, largePoolBytesMax / stagingBlockBytesLarge);

function blockTake(bytesAtLeast: number, small: boolean): Block {
  if (small && bytesAtLeast <= stagingBlockBytesSmall) return smallPool.take();
  if (bytesAtLeast <= stagingBlockBytesLarge) return largePool.take();
  // A frame bigger than a large block gets one of its own size, never pooled.
  const bytes = unzeroedOwnBytes(bytesAtLeast);
  return { bytes, words: wordsOf(bytes) };
}

function blockGiveBack(block: Block): void {
  const bytes = block.bytes.byteLength;
  if (bytes === stagingBlockBytesSmall) smallPool.giveBack(block);
  else if (bytes === stagingBlockBytesLarge) largePool.giveBack(block);
}

const emptyBytes = new Uint8Array(0);
const emptyWords = wordsOf(emptyBytes);

/** A block with the virtual positions of its used bytes: [start, end). */
interface UsedBlock extends Block {
  start: number;
  end: number;
}

/** Staged frames, handed from the log's Staging to its flush: written in runs, then released. A run is the frames of
 *  virtual positions [start, end), which lie on frame boundaries. */
export class StagedFrames {
  constructor(
    private readonly blocks: UsedBlock[],
    /** Virtual bytes of all the frames. */
    readonly bytes: number,
    /** Virtual position of each frame's start, ascending. */
    readonly frameStarts: number[],
    /** Parallel to frameStarts: a run may split across segments, and each segment keeps its ends. */
    readonly timestampsSec: number[],
  ) {}

  get count(): number {
    return this.frameStarts.length;
  }

  frameEnd(k: number): number {
    return k + 1 < this.frameStarts.length ? this.frameStarts[k + 1]! : this.bytes;
  }

  frameBytes(k: number): number {
    return this.frameEnd(k) - this.frameStarts[k]!;
  }

  /** Writes a run at position of fd, blocking (a partition worker): one write, or one writev when it spans blocks. */
  writeRun(fd: number, start: number, end: number, position: number): void {
    const bytes = this.pieces(start, end);
    if (Array.isArray(bytes)) writevAllSync(fd, bytes, position);
    else writeAllSync(fd, bytes, position);
  }

  /** A run's bytes in one array of their own, which outlives the blocks. */
  copyRun(start: number, end: number): Uint8Array {
    const bytes = this.pieces(start, end);
    if (!Array.isArray(bytes)) return bytes.slice();
    const copy = new Uint8Array(end - start);
    let at = 0;
    for (const piece of bytes) {
      copy.set(piece, at);
      at += piece.byteLength;
    }
    return copy;
  }

  /** A run as views of one block or more, in order; no array for the usual run inside one block. */
  private pieces(start: number, end: number): Uint8Array | Uint8Array[] {
    const blocks = this.blocks;
    let first = 0;
    while (blocks[first]!.end <= start) first++;
    const head = blocks[first]!;
    if (end <= head.end) return head.bytes.subarray(start - head.start, end - head.start);
    const pieces: Uint8Array[] = [head.bytes.subarray(start - head.start, head.end - head.start)];
    for (let b = first + 1; b < blocks.length && blocks[b]!.start < end; b++) {
      const block = blocks[b]!;
      pieces.push(block.bytes.subarray(0, Math.min(end, block.end) - block.start));
    }
    return pieces;
  }

  /** Gives the blocks back to the pools: nothing may read the pieces afterwards. */
  release(): void {
    for (const block of this.blocks) blockGiveBack(block);
    this.blocks.length = 0;
  }
}

/** The frames of one partition log since its last flush. */
export class Staging {
  private blocks: UsedBlock[] = [];
  private current: UsedBlock | null = null;
  /** Virtual bytes staged. */
  private bytes = 0;
  private frameStarts: number[] = [];
  private timestampsSec: number[] = [];
  /** Whether the next round starts with a small block: the last one staged no more than a small block holds. */
  private startSmall = true;

  get count(): number {
    return this.frameStarts.length;
  }

  /** After reserve: the block the next frame goes into, its crc view, and the frame's position in it. Fields rather
   *  than a returned object: reserve runs once per staged record. */
  target: Uint8Array = emptyBytes;
  words: DataView = emptyWords;
  at = 0;

  /** Makes room for a frame of at most frameBytesMax bytes at target[at..]. */
  reserve(frameBytesMax: number): void {
    let block = this.current;
    if (block === null || block.bytes.byteLength - (block.end - block.start) < frameBytesMax) {
      const taken = blockTake(frameBytesMax, block === null && this.startSmall);
      block = { bytes: taken.bytes, words: taken.words, start: this.bytes, end: this.bytes };
      this.blocks.push(block);
      this.current = block;
      this.target = block.bytes;
      this.words = block.words;
    }
    this.at = block.end - block.start;
  }

  /** Records the frame of frameBytes written at target[at..]. */
  commit(frameBytes: number, timestampSec: number): void {
    this.frameStarts.push(this.bytes);
    this.timestampsSec.push(timestampSec);
    this.bytes += frameBytes;
    this.current!.end = this.bytes;
  }

  /** Everything staged, handed over; staging starts empty. */
  take(): StagedFrames {
    const staged = new StagedFrames(this.blocks, this.bytes, this.frameStarts, this.timestampsSec);
    this.startSmall = this.bytes <= stagingBlockBytesSmall;
    this.blocks = [];
    this.current = null;
    this.target = emptyBytes;
    this.words = emptyWords;
    this.bytes = 0;
    this.frameStarts = [];
    this.timestampsSec = [];
    return staged;
  }
}
