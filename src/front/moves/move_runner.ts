// The destination's side of a partition move (issue 41, docs/architecture.md "Partition moves"): for every move in
// the metadata replica whose destination is this node, it copies the partition from its source over the data channel
// into the local worker that will own it (moveRead -> moveWrite), freezes the source once caught up, writes the final
// chunk, proposes the flip, then has the source let its copy go and ends the move. At most
// cluster.moves_max_per_node run at once, all under one byte rate (cluster.move_bytes_per_second). Each run's state
// feeds the member report (GET /v1/cluster/moves). Front thread; front_start.ts starts one per node.
import type { Config } from '../../config.js';
import { refusalError } from '../../errors.js';
import { moveKey, type PartitionMoveRecord, type TopicRecord } from '../../protocol/metadata_types.js';
import type { DestinationMoveView } from '../../protocol/data_messages.js';
import type { MoveChunk } from '../../protocol/thread_messages.js';
import type { Logger } from '../../util/log.js';
import type { PartitionWorkers } from '../ingress/dispatch.js';
import type { MetadataReplica } from '../metadata_replica.js';
import type { RemotePartitions } from '../remote_partitions.js';
import { ByteRate } from './byte_rate.js';

/** A frozen source holds its writes to the partition: unfreeze when the flip did not come this soon (MOVES.md 7). */
export const freezeHoldMs = 5_000;
/** Checksum failures in a row after which a move is blocked as copy_unverifiable. */
const crcFailuresBlocking = 3;
/** One read asks the source for up to this many bytes (less under a low byte rate). */
const chunkBytesMax = 4 * 1024 * 1024;
const requestMs = 10_000;
const retryMs = 1_000;
/** A frozen source that has not synced what it staged yet answers empty, not final: asked again this soon. */
const frozenPollMs = 20;
const rescanMs = 1_000;

export type MoveWorkerState = 'copying' | 'frozen' | 'flip_pending' | 'waiting_for_source' | 'blocked';

/** One move this node runs as destination, as the member report shows it. */
interface MoveRun {
  move: PartitionMoveRecord;
  workerState: MoveWorkerState;
  attempts: number;
  lastError: string;
  bytesFetched: number;
  stuckReason: '' | 'copy_unverifiable' | 'source_dead_copy_behind';
  crcFailures: number;
  /** Where the incoming copy ends; null until the worker told us (a restarted node resumes from there). */
  nextOffset: number | null;
  /** The source's synced end at the last read. */
  sourceEnd: number;
  frozenAtMs: number | null;
}

export interface MoveRunnerParts {
  nodeId: number;
  config: Config;
  log: Logger;
  replica: MetadataReplica;
  workers: PartitionWorkers;
  remote: RemotePartitions;
}

/** The move ended (aborted, finished elsewhere, its topic deleted) while a run worked on it. */
class MoveGone extends Error {}

/** The local worker refused a chunk (copyUnverifiable: the bytes did not match their checksum). */
class WorkerRefused extends Error {
  constructor(readonly refusalId: string, message: string) {
    super(message);
  }
}

export class MoveRunner {
  private readonly runs = new Map<string, MoveRun>();
  private readonly rate: ByteRate;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;

  constructor(private readonly parts: MoveRunnerParts) {
    this.rate = new ByteRate(parts.config['cluster.move_bytes_per_second']);
  }

  /** Runs the moves the replica names now and whenever it applies an entry (or a second passed, for retries). */
  start(): void {
    this.parts.replica.onApplied((command) => {
      if (command.type.startsWith('move.') || command.type === 'topic.delete' || command.type === 'partition.reassign') this.scan();
    });
    const tick = (): void => {
      this.scan();
      this.timer = setTimeout(tick, rescanMs);
    };
    tick();
  }

  close(): void {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
  }

  /** The moves this node is the destination of (spec §2 Cluster member moves), queued ones included. */
  report(): DestinationMoveView[] {
    const views: DestinationMoveView[] = [];
    for (const move of this.parts.replica.state.moves.values()) {
      if (move.destination !== this.parts.nodeId) continue;
      const run = this.runs.get(moveKey(move.topicId, move.partition));
      views.push({
        topic: move.topic, partition: move.partition, source: move.source, destination: move.destination, startedAtMs: move.startedAtMs,
        workerState: run?.workerState ?? stateOfPhase(move), attempts: run?.attempts ?? 0, lastError: run?.lastError ?? '',
        bytesFetched: run?.bytesFetched ?? 0, stuckReason: run?.stuckReason ?? '',
      });
    }
    return views;
  }

  /** Starts runs for new moves up to the per-node bound; runs whose move vanished stop on their own. */
  private scan(): void {
    if (this.closed) return;
    for (const move of this.parts.replica.state.moves.values()) {
      if (move.destination !== this.parts.nodeId) continue;
      const key = moveKey(move.topicId, move.partition);
      if (this.runs.has(key)) continue;
      if (move.phase === 'copying' && this.copyingRuns() >= this.parts.config['cluster.moves_max_per_node']) continue;
      const run: MoveRun = {
        move: { ...move }, workerState: stateOfPhase(move), attempts: 0, lastError: '', bytesFetched: 0, stuckReason: '',
        crcFailures: 0, nextOffset: null, sourceEnd: 0, frozenAtMs: null,
      };
      this.runs.set(key, run);
      void this.runUntilEnd(key, run);
    }
  }

  /** Runs that still copy (those past the flip only wait for the source and take no share of the bound). */
  private copyingRuns(): number {
    let count = 0;
    for (const run of this.runs.values()) if (run.workerState !== 'waiting_for_source') count += 1;
    return count;
  }

  /** The move of run as the replica holds it now; undefined once it ended or another move took its place. */
  private current(run: MoveRun): PartitionMoveRecord | undefined {
    const move = this.parts.replica.state.moves.get(moveKey(run.move.topicId, run.move.partition));
    if (move === undefined || move.destination !== run.move.destination || move.startedAtMs !== run.move.startedAtMs) return undefined;
    return move;
  }

  private async runUntilEnd(key: string, run: MoveRun): Promise<void> {
    let flipped = false;
    while (!this.closed) {
      try {
        flipped = await this.attempt(run);
        break;
      } catch (error) {
        if (error instanceof MoveGone) break;
        run.attempts += 1;
        run.lastError = error instanceof Error ? error.message : String(error);
        if (error instanceof WorkerRefused && error.refusalId === 'copyUnverifiable') {
          run.crcFailures += 1;
          if (run.crcFailures >= crcFailuresBlocking) this.block(run, 'copy_unverifiable');
        }
        this.parts.log.warn({ topic: run.move.topic, partition: run.move.partition, err: run.lastError }, 'partition move: attempt failed');
        await delay(retryMs);
      }
    }
    this.runs.delete(key);
    if (!flipped && !this.closed && this.current(run) === undefined) await this.discard(run);
    this.scan();
  }

  private block(run: MoveRun, reason: MoveRun['stuckReason']): void {
    run.workerState = 'blocked';
    run.stuckReason = reason;
  }

  /** One pass from wherever the move stands to its end; true once the move flipped here. */
  private async attempt(run: MoveRun): Promise<boolean> {
    const topic = this.topicOf(run);
    if (this.mustCurrent(run).phase !== 'flipped') await this.copy(run, topic);
    await this.release(run, topic);
    return true;
  }

  private topicOf(run: MoveRun): TopicRecord {
    for (const topic of this.parts.replica.state.topics.values()) if (topic.id === run.move.topicId) return topic;
    throw new MoveGone();
  }

  private mustCurrent(run: MoveRun): PartitionMoveRecord {
    const move = this.current(run);
    if (move === undefined) throw new MoveGone();
    return move;
  }

  /** Copies until the final chunk is written and the flip applied here. */
  private async copy(run: MoveRun, topic: TopicRecord): Promise<void> {
    run.nextOffset ??= (await this.write(run, emptyChunk())).nextOffset;
    for (;;) {
      const move = this.mustCurrent(run);
      if (move.phase === 'flipped') return;
      if (this.sourceDead(run)) {
        this.block(run, run.nextOffset < run.sourceEnd || run.sourceEnd === 0 ? 'source_dead_copy_behind' : '');
        await delay(retryMs);
        continue;
      }
      if (move.phase === 'frozen') {
        run.frozenAtMs ??= Date.now();
        if (Date.now() - run.frozenAtMs > freezeHoldMs) {
          await this.unfreeze(run);
          continue;
        }
      } else run.frozenAtMs = null;
      const chunk = await this.parts.remote.moveRead(topic, run.move.source, run.move.partition, run.nextOffset, this.chunkBytes(), requestMs);
      await this.take(run, chunk);
      if (chunk.final) return this.flip(run);
      if (move.phase === 'copying' && chunk.nextOffset >= chunk.syncedEnd) await this.freeze(run);
      else if (move.phase === 'frozen' && chunk.count === 0) await delay(frozenPollMs);
    }
  }

  private chunkBytes(): number {
    return Math.max(64 * 1024, Math.min(chunkBytesMax, Math.floor(this.parts.config['cluster.move_bytes_per_second'] / 4)));
  }

  /** Writes a chunk read from the source into the incoming copy, within the node's byte rate. */
  private async take(run: MoveRun, chunk: MoveChunk): Promise<void> {
    run.sourceEnd = chunk.syncedEnd;
    run.bytesFetched += chunk.records.byteLength;
    await this.rate.spend(chunk.records.byteLength);
    if (chunk.count === 0 && !chunk.final) return;
    this.mustCurrent(run);
    run.nextOffset = (await this.write(run, chunk)).nextOffset;
    run.crcFailures = 0;
    if (run.stuckReason === 'copy_unverifiable') run.stuckReason = '';
    if (run.workerState === 'blocked') run.workerState = stateOfPhase(run.move);
  }

  /** moveWrite to the worker that will own the partition. An empty chunk asks where the incoming copy ends. */
  private async write(run: MoveRun, chunk: MoveChunk): Promise<{ nextOffset: number }> {
    const { workers } = this.parts;
    const { topicId, partition } = run.move;
    const reply = await workers.request(workers.ownerOf(topicId, partition), { kind: 'moveWrite', topicId, partition, chunk });
    if (reply.kind === 'moveWritten') return reply;
    if (reply.kind === 'failed') throw new WorkerRefused(reply.refusal.id, refusalError(reply.refusal).message);
    throw new Error(`worker answered ${reply.kind} to moveWrite`);
  }

  private async freeze(run: MoveRun): Promise<void> {
    run.workerState = 'frozen';
    run.frozenAtMs = Date.now();
    await this.proposeMove(run, { type: 'move.freeze', ...this.moveRef(run), frozen: true });
  }

  /** The flip did not come in time: the source takes writes again; the copy goes on and freezes again later. */
  private async unfreeze(run: MoveRun): Promise<void> {
    run.attempts += 1;
    run.lastError = `the flip did not happen within ${freezeHoldMs / 1000} s of the freeze`;
    run.workerState = 'copying';
    run.frozenAtMs = null;
    await this.proposeMove(run, { type: 'move.freeze', ...this.moveRef(run), frozen: false });
    await delay(retryMs);
  }

  private async flip(run: MoveRun): Promise<void> {
    run.workerState = 'flip_pending';
    await this.proposeMove(run, { type: 'move.flip', ...this.moveRef(run) });
  }

  /** The source confirms it let the partition go (or is dead: its worker sets the copy aside when it starts). */
  private async release(run: MoveRun, topic: TopicRecord): Promise<void> {
    run.workerState = 'waiting_for_source';
    const metaIndex = this.parts.replica.appliedIndex;
    for (;;) {
      this.mustCurrent(run);
      if (this.sourceDead(run)) break;
      try {
        await this.parts.remote.moveRelease(topic, run.move.source, run.move.partition, metaIndex, requestMs);
        break;
      } catch (error) {
        run.lastError = error instanceof Error ? error.message : String(error);
        await delay(retryMs);
      }
    }
    await this.proposeMove(run, { type: 'move.finish', ...this.moveRef(run) });
  }

  private sourceDead(run: MoveRun): boolean {
    return this.parts.replica.clusterStatus?.deadMembers.includes(run.move.source) ?? false;
  }

  private moveRef(run: MoveRun): { topicId: string; partition: number; destination: number } {
    return { topicId: run.move.topicId, partition: run.move.partition, destination: run.move.destination };
  }

  /** A refused step means the move changed under the run (aborted, flipped by an earlier try): the next pass sees. */
  private async proposeMove(run: MoveRun, command: Parameters<MetadataReplica['propose']>[0]): Promise<void> {
    const result = await this.parts.replica.propose(command);
    if (!result.ok) {
      this.mustCurrent(run);
      throw new Error(`${command.type} refused: ${result.refusal.id} ${result.refusal.args.join(' ')}`);
    }
  }

  /** The move ended without a flip: the incoming copy is set aside (kind staging). */
  private async discard(run: MoveRun): Promise<void> {
    const { workers } = this.parts;
    const { topicId, partition } = run.move;
    const reply = await workers.request(workers.ownerOf(topicId, partition), { kind: 'moveDiscard', topicId, partition });
    if (reply.kind !== 'moveReleased') this.parts.log.warn({ topic: run.move.topic, partition, reply: reply.kind }, 'partition move: discard failed');
  }
}

function stateOfPhase(move: PartitionMoveRecord): MoveWorkerState {
  return move.phase === 'flipped' ? 'waiting_for_source' : move.phase === 'frozen' ? 'frozen' : 'copying';
}

/** Asks the worker where the incoming copy ends without writing anything. */
function emptyChunk(): MoveChunk {
  return { firstOffset: 0, fromOffset: 0, nextOffset: 0, syncedEnd: 0, count: 0, records: new Uint8Array(0), crc32: 0, final: false };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
