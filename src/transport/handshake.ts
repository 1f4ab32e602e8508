// The handshake frames of a node-to-node connection, the HMAC proofs in them, and the per-connection keys that
// authenticate every data frame after them. Both ends prove they hold the cluster secret without sending it: each
// proof is HMAC-SHA256(secret, role label, both node ids, both nonces, both instance ids, the oneshot flag), so a
// proof made by one role or for another connection never verifies. The dialer proves first: the acceptor sends
// nothing computed from the secret to a party that has not proven it, so a stranger's hello gets no proof to test
// guessed secrets against offline. Both ends then derive one key per direction (HKDF over the secret and the
// transcript), and every data frame carries a MAC over its direction's key, its sequence number and its bytes.
// Pure functions over bytes plus node:crypto; called by Connection on the thread that owns the connection.
//
//   dialer   -> acceptor  hello     { nodeId, instance, nonce, oneshot }
//   acceptor -> dialer    challenge { nodeId, instance, nonce }
//   dialer   -> acceptor  answer    { proof(dialer) }
//   acceptor -> dialer    welcome   { proof(acceptor) }  or  refused { reason: 'duplicate', proof(acceptor) }
//   then data frames both ways, each followed by its MAC (frameMac), or the close
import { createHmac, createSecretKey, hkdfSync, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Bumped when the handshake or the data frames change meaning; a peer of another version is refused. Version 2:
 *  the dialer proves first, and data frames carry a MAC. */
export const transportVersion = 2;
/** Fresh per connection and per side: a replayed answer was made over another nonce and fails. */
export const nonceBytes = 32;
/** Fresh per PeerTransport: tells a restarted peer (stale connection, replace it) from a racing dial. */
export const instanceBytes = 16;
export const proofBytes = 32;
/** HMAC-SHA256 cut to 128 bits (HMAC-SHA-256-128, RFC 4868): a forger's chance per frame is 2^-128, and the
 *  connection ends at the first failure, so no forger gets a second try on it. */
export const macBytes = 16;
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
/** Carries nothing derived from the secret: the dialer proves first. */
export interface ChallengeFrame {
  t: 'challenge';
  nodeId: number;
  instance: Uint8Array;
  nonce: Uint8Array;
}
export interface AnswerFrame {
  t: 'answer';
  proof: Uint8Array;
}
/** The acceptor's verdict proves it holds the secret too, so the dialer trusts neither verdict without it. */
export interface WelcomeFrame {
  t: 'welcome';
  proof: Uint8Array;
}
/** The acceptor keeps another connection to this peer (the tie-break): not an error, the other one serves. */
export interface RefusedFrame {
  t: 'refused';
  reason: 'duplicate';
  proof: Uint8Array;
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
function transcriptBytes(transcript: Transcript): Buffer {
  const ids = Buffer.alloc(9);
  ids.writeUInt32BE(transcript.dialerId, 0);
  ids.writeUInt32BE(transcript.acceptorId, 4);
  ids[8] = transcript.oneshot ? 1 : 0;
  return Buffer.concat([ids, transcript.dialerInstance, transcript.acceptorInstance, transcript.dialerNonce, transcript.acceptorNonce]);
}

export function handshakeProof(key: KeyObject, role: Role, transcript: Transcript): Uint8Array {
  const hmac = createHmac('sha256', key);
  hmac.update(roleLabels[role]);
  hmac.update(transcriptBytes(transcript));
  return new Uint8Array(hmac.digest());
}

/** The two MAC keys of one connection, by the direction they authenticate. */
export interface ConnectionKeys {
  dialerToAcceptor: KeyObject;
  acceptorToDialer: KeyObject;
}

const keysLabel = Buffer.from(`svc-transport-v${transportVersion} frame keys\0`);

/**
 * HKDF-SHA256 (RFC 5869) with the secret as input key, both nonces as salt and the whole transcript as info: fresh
 * nonces make every connection's keys new, so a frame recorded on one connection fails on any other; one key per
 * direction, so a frame reflected back to its sender fails too.
 */
export function connectionKeys(key: KeyObject, transcript: Transcript): ConnectionKeys {
  const salt = Buffer.concat([transcript.dialerNonce, transcript.acceptorNonce]);
  const info = Buffer.concat([keysLabel, transcriptBytes(transcript)]);
  const okm = Buffer.from(hkdfSync('sha256', key, salt, info, 64));
  return { dialerToAcceptor: createSecretKey(okm.subarray(0, 32)), acceptorToDialer: createSecretKey(okm.subarray(32, 64)) };
}

/**
 * The MAC of the seq-th data frame (from 0) one way on a connection, over the sequence number, the frame's length
 * header and its body: TCP keeps frames in order, so the receiver counts too and a dropped, repeated or reordered
 * frame fails like an altered one. header is the frame's 4-byte length, body the rest (they may lie apart).
 */
export function frameMac(key: KeyObject, seq: number, header: Uint8Array, body: Uint8Array): Buffer {
  const counter = Buffer.allocUnsafe(8);
  counter.writeUInt32BE(Math.floor(seq / 0x1_0000_0000), 0);
  counter.writeUInt32BE(seq >>> 0, 4);
  return createHmac('sha256', key).update(counter).update(header).update(body).digest().subarray(0, macBytes);
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
  const { nodeId, instance, nonce } = frame;
  if (!isNodeId(nodeId) || !isBytes(instance, instanceBytes) || !isBytes(nonce, nonceBytes)) return null;
  return { t: 'challenge', nodeId, instance, nonce };
}

export function parseAnswer(frame: unknown): AnswerFrame | null {
  if (!isRecord(frame) || frame['t'] !== 'answer' || !(frame['proof'] instanceof Uint8Array)) return null;
  return { t: 'answer', proof: frame['proof'] };
}

/** The acceptor's verdict, or null for anything else; its proof is checked by the caller. */
export function parseVerdict(frame: unknown): WelcomeFrame | RefusedFrame | null {
  if (!isRecord(frame) || !(frame['proof'] instanceof Uint8Array)) return null;
  const proof = frame['proof'];
  if (frame['t'] === 'welcome') return { t: 'welcome', proof };
  if (frame['t'] === 'refused' && frame['reason'] === 'duplicate') return { t: 'refused', reason: 'duplicate', proof };
  return null;
}
