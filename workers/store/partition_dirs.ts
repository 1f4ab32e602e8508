// The one place that builds and parses on-disk names under a data dir (Redpanda's fs_utils):
// <dataDir>/topics/<topicId>/<partition>/<baseOffset, 20 digits>.log|.idx, and a moving partition's incoming copy
// <dataDir>/incoming/<topicId>/<partition>/ (same files, not served until the flip). Pure string functions.
// Runs on partition worker threads (segment_log.ts, partition_worker.ts); nothing else names these files.
// The path carries the topic id, not its name, so a recreated topic never inherits old files.
import assert from 'node:assert/strict';
import { join } from 'node:path';

/** Enough digits for every safe integer offset, so names sort lexically in offset order. */
const baseOffsetDigits = 20;
/** Topic ids are 16 lower-case hex characters (state.ts TopicRecord); anything else is not ours. */
const topicIdPattern = /^[0-9a-f]{16}$/;
/** Partition numbers are written in plain decimal, no padding, so each has exactly one name. */
const partitionPattern = /^(0|[1-9][0-9]{0,8})$/;
const segmentPattern = /^([0-9]{20})\.(log|idx)$/;

export type SegmentFileKind = 'log' | 'idx';

export function topicsDir(dataDir: string): string {
  return join(dataDir, 'topics');
}

export function topicDir(dataDir: string, topicId: string): string {
  return topicDirUnder(topicsDir(dataDir), topicId);
}

export function partitionDir(dataDir: string, topicId: string, partition: number): string {
  return partitionDirUnder(topicsDir(dataDir), topicId, partition);
}

/** Where incoming copies of partitions moving here live (issue 41): the same layout as topics/. */
export function incomingDir(dataDir: string): string {
  return join(dataDir, 'incoming');
}

export function incomingTopicDir(dataDir: string, topicId: string): string {
  return topicDirUnder(incomingDir(dataDir), topicId);
}

export function incomingPartitionDir(dataDir: string, topicId: string, partition: number): string {
  return partitionDirUnder(incomingDir(dataDir), topicId, partition);
}

function topicDirUnder(root: string, topicId: string): string {
  assert(topicIdPattern.test(topicId), `topic id ${JSON.stringify(topicId)} is not 16 hex characters`);
  return join(root, topicId);
}

function partitionDirUnder(root: string, topicId: string, partition: number): string {
  assert(Number.isSafeInteger(partition) && partition >= 0, `partition ${partition} is not a natural number`);
  return join(topicDirUnder(root, topicId), String(partition));
}

export function segmentFileName(baseOffset: number, kind: SegmentFileKind): string {
  assert(Number.isSafeInteger(baseOffset) && baseOffset >= 0, `segment base offset ${baseOffset} is invalid`);
  return `${String(baseOffset).padStart(baseOffsetDigits, '0')}.${kind}`;
}

export function segmentPath(dir: string, baseOffset: number, kind: SegmentFileKind): string {
  return join(dir, segmentFileName(baseOffset, kind));
}

/** The topic id a directory entry under topics/ names, or null when it is not a topic directory. */
export function parseTopicDirName(name: string): string | null {
  return topicIdPattern.test(name) ? name : null;
}

/** The partition a directory entry under a topic directory names, or null. */
export function parsePartitionDirName(name: string): number | null {
  return partitionPattern.test(name) ? Number(name) : null;
}

/** The base offset and kind a file name in a partition directory names, or null for other files. */
export function parseSegmentFileName(name: string): { baseOffset: number; kind: SegmentFileKind } | null {
  const match = segmentPattern.exec(name);
  if (match === null) return null;
  const baseOffset = Number(match[1]);
  if (!Number.isSafeInteger(baseOffset)) return null;
  return { baseOffset, kind: match[2] === 'log' ? 'log' : 'idx' };
}
