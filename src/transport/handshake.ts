// The handshake frames of a node-to-node connection and the HMAC proofs in them. Both ends prove they hold the
// cluster secret without sending it: each proof is HMAC-SHA256(secret, role label, both node ids, both nonces,
// both instance ids, the oneshot flag), so a proof made by one role or for another connection never verifies.
// Pure functions over bytes plus node:crypto; called by Connection on the thread that owns the connection.
//
//   dialer   -> acceptor  hello     { nodeId, instance, nonce, oneshot }
//   acceptor -> dialer    challenge { nodeId, instance, nonce, proof(acceptor) }
//   dialer   -> acceptor  answer    { proof(dialer) }
//   acceptor -> dialer    welcome   {}   or  refused { reason: 'duplicate' }  (then data frames, or the close)
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Bumped when the handshake or the data frames change meaning; a peer of another version is refused. */
export const transportVersion = 1;
/** Fresh per connection and per side: a replayed answer was made over another nonce and fails. */
export const nonceBytes = 32;
/** Fresh per PeerTransport: tells a restarted peer (stale connection, replace it) from a racing dial. */
export const instanceBytes = 16;
export const proofBytes = 32;
/** Node ids travel in the proof as u32; the config allows 1..65535. */
export const nodeIdMax = 0xffff_ffff;

export type Role = 'dialer' | 'acceptor';

const roleLabels: Record<Role, Buffer> = {
  dialer: Buffer.from(`svc-transport-v${transportVersion} dialer proof\0`),
  acceptor: Buffer.from(`svc-transport-v${transportVersion} acceptor proof\0`),
};

export interface HelloFrame {
  t: 'hello';
  v: number;
  nodeId: number;
  instance: Uint8Array;
  nonce: Uint8Array;
  /** A requestAt connection: one request, not the peer's connection, no tie-break. */
  oneshot: boolean;
}
export interface ChallengeFrame {
  t: 'challenge';
  nodeId: number;
  instance: Uint8Array;
  nonce: Uint8Array;
  proof: Uint8Array;
}
export interface AnswerFrame {
  t: 'answer';
  proof: Uint8Array;
}
export interface WelcomeFrame {
  t: 'welcome';
}
/** The acceptor keeps another connection to this peer (the tie-break): not an error, the other one serves. */
export interface RefusedFrame {
  t: 'refused';
  reason: 'duplicate';
}

/** Everything both proofs cover; each side fills it from its own values and the ones it received. */
export interface Transcript {
  dialerId: number;
  acceptorId: number;
  dialerInstance: Uint8Array;
  acceptorInstance: Uint8Array;
  dialerNonce: Uint8Array;
  acceptorNonce: Uint8Array;
  oneshot: boolean;
}

export function secretKey(secret: Uint8Array): KeyObject {
  return createSecretKey(Buffer.from(secret));
}

export function freshNonce(): Uint8Array {
  return new Uint8Array(randomBytes(nonceBytes));
}

export function freshInstance(): Uint8Array {
  return new Uint8Array(randomBytes(instanceBytes));
}

export function isNodeId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= nodeIdMax;
}

/** Every field has a fixed width, so no two transcripts share an encoding. */
export function handshakeProof(key: KeyObject, role: Role, transcript: Transcript): Uint8Array {
  const ids = Buffer.alloc(9);
  ids.writeUInt32BE(transcript.dialerId, 0);
  ids.writeUInt32BE(transcript.acceptorId, 4);
  ids[8] = transcript.oneshot ? 1 : 0;
  const hmac = createHmac('sha256', key);
  hmac.update(roleLabels[role]);
  hmac.update(ids);
  hmac.update(transcript.dialerInstance);
  hmac.update(transcript.acceptorInstance);
  hmac.update(transcript.dialerNonce);
  hmac.update(transcript.acceptorNonce);
  return new Uint8Array(hmac.digest());
}

/** Constant time over the proof's bytes; a proof of the wrong type or length is false without a compare. */
export function proofMatches(expected: Uint8Array, received: unknown): boolean {
  if (!(received instanceof Uint8Array) || received.byteLength !== expected.byteLength) return false;
  return timingSafeEqual(expected, received);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function isBytes(value: unknown, length: number): value is Uint8Array {
  return value instanceof Uint8Array && value.byteLength === length;
}

// The parsers take what a stranger sent: anything malformed is null and the connection is refused.

export function parseHello(frame: unknown): HelloFrame | null {
  if (!isRecord(frame) || frame['t'] !== 'hello' || frame['v'] !== transportVersion) return null;
  const { nodeId, instance, nonce, oneshot } = frame;
  if (!isNodeId(nodeId) || !isBytes(instance, instanceBytes) || !isBytes(nonce, nonceBytes)) return null;
  if (typeof oneshot !== 'boolean') return null;
  return { t: 'hello', v: transportVersion, nodeId, instance, nonce, oneshot };
}

export function parseChallenge(frame: unknown): ChallengeFrame | null {
  if (!isRecord(frame) || frame['t'] !== 'challenge') return null;
  const { nodeId, instance, nonce, proof } = frame;
  if (!isNodeId(nodeId) || !isBytes(instance, instanceBytes) || !isBytes(nonce, nonceBytes)) return null;
  if (!(proof instanceof Uint8Array)) return null;
  return { t: 'challenge', nodeId, instance, nonce, proof };
}

export function parseAnswer(frame: unknown): AnswerFrame | null {
  if (!isRecord(frame) || frame['t'] !== 'answer' || !(frame['proof'] instanceof Uint8Array)) return null;
  return { t: 'answer', proof: frame['proof'] };
}

/** The acceptor's verdict, or null for anything else. */
export function parseVerdict(frame: unknown): WelcomeFrame | RefusedFrame | null {
  if (!isRecord(frame)) return null;
  if (frame['t'] === 'welcome') return { t: 'welcome' };
  if (frame['t'] === 'refused' && frame['reason'] === 'duplicate') return { t: 'refused', reason: 'duplicate' };
  return null;
}
