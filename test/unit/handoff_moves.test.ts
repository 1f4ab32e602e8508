// Goal: the hand-off's rules for partition moves (issue 41, MOVES.md "Records accepted elsewhere"): an owner's
// handedOff counts toward what the ingress log may drop only once this front's replica applied the metaIndex the
// owner answered with; when an owner change gives a partition to a node, every retained ingress group goes to it
// again (read from the ingress files), including groups appended before the change and synced after it; and when it
// gives the partition to this node, the groups are dispatched again to its own workers. A worker's durable report
// waits for its metaIndex the same way. Method: a real ingress log in a temp dir, a fake data channel that records
// what each owner was sent, the seqs read back from the frames.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { EventEmitter } from 'node:events';
import t, { type Test } from 'tap';
import { AppliedIndex } from '../../src/front/ingress/applied_index.js';
import { PartitionWorkers } from '../../src/front/ingress/dispatch.js';
import { Handoff } from '../../src/front/ingress/handoff.js';
import { IngressLog } from '../../src/front/ingress/ingress_log.js';
import { decodeIngressEntry, PayloadKind, type IngressEntry } from '../../src/protocol/ingress_frame.js';
import type { PortChannel } from '../../src/transport/port_channel.js';
import { scanFrames } from '../../src/util/frame.js';
import { pollUntil } from '../helpers/http.js';

interface Harness {
  log: IngressLog;
  handoff: Handoff;
  applied: AppliedIndex;
  /** The replica's applied index, as the test sets it. */
  index: { now: number };
  /** owner -> seqs of every frame it was sent, in order. */
  sent: Map<number, number[]>;
  /** The metaIndex the fake owners answer with. */
  answerIndex: { now: number };
  durable: number[];
  local: number[];
}

function seqsOf(frames: Uint8Array): number[] {
  return scanFrames(frames).bodies.map((body) => decodeIngressEntry(body).seq);
}

async function harness(t: Test): Promise<Harness> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'handoff-moves-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const { log } = await IngressLog.open({ dir, segmentBytesMax: 1024 * 1024 });
  const sent = new Map<number, number[]>();
  const answerIndex = { now: 0 };
  const channel = {
    request: (to: number, body: { frames: Uint8Array }) => {
      sent.set(to, [...(sent.get(to) ?? []), ...seqsOf(body.frames)]);
      return Promise.resolve({ kind: 'handedOff', metaIndex: answerIndex.now });
    },
  } as unknown as PortChannel;
  const index = { now: 0 };
  const applied = new AppliedIndex(() => index.now);
  const handoff = new Handoff(channel, () => index.now, 1024 * 1024, log);
  handoff.appliedIndex = applied;
  const local: number[] = [];
  handoff.localResend = { selfId: 1, dispatch: (frames) => local.push(...seqsOf(frames)) };
  const durable: number[] = [];
  handoff.onDurable = (seq) => durable.push(seq);
  log.onSynced = (group, lastSeq) => handoff.groupSynced(group, lastSeq);
  t.teardown(async () => {
    handoff.close();
    await log.close();
  });
  return { log, handoff, applied, index, sent, answerIndex, durable, local };
}

function entry(seq: number): IngressEntry {
  return { seq, topicId: '0123456789abcdef', timestampSec: 1, records: [{ partition: 0, key: null, payload: new Uint8Array([seq]), payloadKind: PayloadKind.Binary }] };
}

/** Appends one record for owner and resolves once its group synced. */
function append(h: Harness, owner: number): Promise<number> {
  const seq = h.log.takeSeq();
  h.handoff.note(owner, seq, 1);
  return new Promise((resolve, reject) => h.log.appendThen(entry(seq), { appended: (error) => (error === null ? resolve(seq) : reject(error)) }));
}

const until = (probe: () => boolean): Promise<true | undefined> => pollUntil(async () => (probe() ? true : undefined), 5_000, 5);

t.test('a handedOff counts only once the replica applied its metaIndex', async (t) => {
  const h = await harness(t);
  h.answerIndex.now = 7;
  h.index.now = 3;
  await append(h, 2);
  await until(() => (h.sent.get(2) ?? []).length === 1);
  // The local workers hold everything: only the owner's confirmation keeps the group.
  h.handoff.localDurable(10);
  // Give the answered request every chance to be counted: it must not be.
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  t.same(h.durable, [], 'nothing may be dropped while the replica is behind the owner');
  h.index.now = 7;
  h.applied.advanced();
  t.ok(await until(() => h.durable.length > 0), 'counted once the replica reached the metaIndex');
  t.same(h.durable, [10]);
});

t.test('an owner change sends every retained group to the new owner, those synced after it too', async (t) => {
  const h = await harness(t);
  // The local workers hold nothing yet: every group stays retained.
  const first = [await append(h, 2), await append(h, 2), await append(h, 2)];
  await until(() => (h.sent.get(2) ?? []).length === 3);
  // A record noted for the old owner, its group not synced yet when the change applies.
  const late = h.log.takeSeq();
  h.handoff.note(2, late, 1);
  h.handoff.resendRetained(3);
  const synced = new Promise<void>((resolve) => h.log.appendThen(entry(late), { appended: () => resolve() }));
  await synced;
  t.ok(await until(() => (h.sent.get(3) ?? []).includes(late)), 'the group synced after the change went to the new owner');
  t.same([...new Set(h.sent.get(3))].sort((a, b) => a - b), [...first, late], 'every retained group went to the new owner');
  const seqs = h.sent.get(3)!;
  t.same(seqs.slice(0, 3), first, 'in seq order, the oldest first');
});

t.test('an owner change that gives this node the partition dispatches the groups to its own workers', async (t) => {
  const h = await harness(t);
  const seqs = [await append(h, 2), await append(h, 2)];
  await until(() => (h.sent.get(2) ?? []).length === 2);
  h.handoff.resendRetained(1);
  t.ok(await until(() => h.local.length >= 2));
  t.same(h.local, seqs);
  t.equal(h.sent.get(1), undefined, 'nothing went over the data channel to this node');
});

t.test('a worker\'s durable report counts once the replica applied its metaIndex', async (t) => {
  const worker = new EventEmitter() as unknown as Worker;
  (worker as unknown as { postMessage: () => void }).postMessage = () => undefined;
  const workers = new PartitionWorkers([worker]);
  const index = { now: 4 };
  const applied = new AppliedIndex(() => index.now);
  workers.appliedIndex = applied;
  const durable: number[] = [];
  workers.onAllDurable = (seq) => durable.push(seq);
  worker.emit('message', { kind: 'durable', seqUpTo: 5, metaIndex: 4 });
  t.same(durable, [5], 'a report at the replica\'s index counts at once');
  worker.emit('message', { kind: 'durable', seqUpTo: 9, metaIndex: 6 });
  await new Promise((resolve) => setImmediate(resolve));
  t.same(durable, [5], 'a report past the replica waits');
  index.now = 6;
  applied.advanced();
  await until(() => durable.length === 2);
  t.same(durable, [5, 9]);
});
