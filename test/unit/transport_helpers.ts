// Shared by the transport_*.test.ts files: transports on 127.0.0.1 port 0 with a recording log and inbox,
// bounded waits, and a raw socket that performs a real handshake (as dialer or acceptor), takes up the connection's
// MAC keys, and then writes (sealed, altered or bare) or withholds bytes at will. Test code only; not a test file
// itself (tap runs *.test.js).
import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { Test } from 'tap';
import { decodeBody, encodeFrame, FrameDecoder, frameHeaderBytes } from '../../src/transport/frame_codec.js';
import {
  connectionKeys,
  frameMac,
  freshInstance,
  freshNonce,
  handshakeProof,
  macBytes,
  parseAnswer,
  parseChallenge,
  parseHello,
  proofMatches,
  secretKey,
  transportVersion,
  type Transcript,
} from '../../src/transport/handshake.js';
import type { ChannelEndpoint, ChannelHandlers } from '../../src/transport/channel.js';
import { PeerTransport, type PeerTransportOptions } from '../../src/transport/peer_transport.js';

export const loopback = '127.0.0.1';

export function secretOf(fill: number, bytes = 32): Uint8Array {
  return new Uint8Array(bytes).fill(fill);
}

export interface LogLine {
  level: 'info' | 'warn';
  obj: Record<string, unknown>;
  msg: string;
}

export class RecordingLog {
  readonly lines: LogLine[] = [];
  info(obj: object, msg = ''): void {
    this.lines.push({ level: 'info', obj: obj as Record<string, unknown>, msg });
  }
  warn(obj: object, msg = ''): void {
    this.lines.push({ level: 'warn', obj: obj as Record<string, unknown>, msg });
  }
  find(predicate: (line: LogLine) => boolean): LogLine | undefined {
    return this.lines.find(predicate);
  }
}

/** Polls cond every 5 ms; rejects after timeoutMs (generous: a busy machine is slow) naming what it waited for. */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export interface Node {
  id: number;
  transport: PeerTransport;
  /** The metadata channel, which every test here speaks on unless it says otherwise. */
  channel: ChannelEndpoint;
  log: RecordingLog;
  /** Every one-way message received, as [from, message]. */
  received: [number, unknown][];
  address: { host: string; port: number };
}

export async function startNode(
  t: Test,
  id: number,
  overrides: Partial<PeerTransportOptions & ChannelHandlers> = {},
): Promise<Node> {
  const log = new RecordingLog();
  const received: [number, unknown][] = [];
  const { onMessage, onRequest, ...options } = overrides;
  const transport = await PeerTransport.listen({
    nodeId: id,
    clusterSecret: secretOf(7),
    listen: { host: loopback, port: 0 },
    log,
    reconnectMs: { initial: 20, max: 200 },
    ...options,
  });
  t.teardown(() => transport.close());
  const channel = transport.openChannel('metadata', {
    onMessage: onMessage ?? ((from, message) => received.push([from, message])),
    ...(onRequest === undefined ? {} : { onRequest }),
  });
  return { id, transport, channel, log, received, address: { host: loopback, port: transport.port } };
}

/** Makes every node know every other's address. */
export function meshOf(nodes: Node[]): void {
  for (const a of nodes) for (const b of nodes) if (a !== b) a.transport.setPeer(b.id, b.address);
}

export interface RawKeys {
  send: KeyObject;
  receive: KeyObject;
}

/** Decoded frames of a raw socket, handed out in order with a bounded wait; once keyed, frames both ways carry
 *  MACs, checked on receipt (a frame that fails is counted in badFrames, not delivered). */
export class FrameReader {
  readonly frames: unknown[] = [];
  closed = false;
  badFrames = 0;
  /** Taken up when a welcome arrives, from the frame after it on (the acceptor may send data in the same chunk). */
  keysOnWelcome: RawKeys | null = null;
  private keys: RawKeys | null = null;
  private sent = 0;
  private received = 0;
  private taken = 0;
  private readonly decoder = new FrameDecoder(64 * 1024 * 1024);

  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => this.decoder.pushFrames(chunk, (header, body, trailer) => this.onFrame(header, body, trailer)));
    socket.on('close', () => (this.closed = true));
    socket.on('error', () => {});
  }

  useKeys(keys: RawKeys): void {
    this.keys = keys;
    this.decoder.setTrailerBytes(macBytes);
  }

  private onFrame(header: Buffer, body: Buffer, trailer: Buffer): void {
    if (this.keys !== null) {
      const expected = frameMac(this.keys.receive, this.received, header, body);
      if (trailer.byteLength !== macBytes || !timingSafeEqual(expected, trailer)) {
        this.badFrames += 1;
        return;
      }
      this.received += 1;
    }
    const value = decodeBody(body);
    this.frames.push(value);
    const welcome = (value as { t?: unknown } | null)?.t === 'welcome';
    if (this.keys === null && this.keysOnWelcome !== null && welcome) this.useKeys(this.keysOnWelcome);
  }

  /** The bytes of one frame as sent on this connection now: with its MAC once keyed (taking a sequence number). */
  seal(frame: Buffer): Buffer {
    if (this.keys === null) return frame;
    const mac = frameMac(this.keys.send, this.sent++, frame.subarray(0, frameHeaderBytes), frame.subarray(frameHeaderBytes));
    return Buffer.concat([frame, mac]);
  }

  async next(what: string, timeoutMs = 5000): Promise<unknown> {
    await waitFor(() => this.frames.length > this.taken || this.closed, what, timeoutMs);
    if (this.frames.length <= this.taken) throw new Error(`socket closed while waiting for ${what}`);
    return this.frames[this.taken++];
  }

  write(value: unknown): void {
    this.socket.write(this.seal(encodeFrame(value)));
  }
}

export interface RawDialOptions {
  port: number;
  nodeId: number;
  secret: Uint8Array;
  /** Sent as the answer instead of the right proof. */
  forgeAnswer?: Uint8Array;
  /** The dialer's instance id; fresh when absent. */
  instance?: Uint8Array;
}

/** Connects and says hello; the caller continues the handshake (or not). */
export async function rawConnect(port: number): Promise<FrameReader> {
  const socket = connect({ host: loopback, port });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.setNoDelay(true);
  return new FrameReader(socket);
}

export interface RawDial {
  reader: FrameReader;
  verdict: unknown;
  peerId: number;
  transcript: Transcript;
}

/** The dialer side of a real handshake over a raw socket; resolves after the acceptor's verdict, keyed if welcomed. */
export async function rawDial(options: RawDialOptions): Promise<RawDial> {
  const reader = await rawConnect(options.port);
  const key = secretKey(options.secret);
  const instance = options.instance ?? freshInstance();
  const nonce = freshNonce();
  reader.write({ t: 'hello', v: transportVersion, nodeId: options.nodeId, instance, nonce, oneshot: false });
  const challenge = parseChallenge(await reader.next('challenge'));
  if (challenge === null) throw new Error('malformed challenge');
  const transcript = {
    dialerId: options.nodeId,
    acceptorId: challenge.nodeId,
    dialerInstance: instance,
    acceptorInstance: challenge.instance,
    dialerNonce: nonce,
    acceptorNonce: challenge.nonce,
    oneshot: false,
  };
  const keys = connectionKeys(key, transcript);
  reader.keysOnWelcome = { send: keys.dialerToAcceptor, receive: keys.acceptorToDialer };
  reader.write({ t: 'answer', proof: options.forgeAnswer ?? handshakeProof(key, 'dialer', transcript) });
  let verdict: unknown = null;
  try {
    verdict = await reader.next('verdict');
  } catch {
    verdict = null;
  }
  return { reader, verdict, peerId: challenge.nodeId, transcript };
}

/** A listener that completes the acceptor side of a real handshake, then stops reading (socket paused). */
export async function rawStallingAcceptor(t: Test, nodeId: number, secret: Uint8Array): Promise<{ server: Server; port: number; sockets: Socket[] }> {
  const key = secretKey(secret);
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    const reader = new FrameReader(socket);
    void (async () => {
      const hello = parseHello(await reader.next('hello'));
      if (hello === null) return socket.destroy();
      const instance = freshInstance();
      const nonce = freshNonce();
      const transcript = {
        dialerId: hello.nodeId,
        acceptorId: nodeId,
        dialerInstance: hello.instance,
        acceptorInstance: instance,
        dialerNonce: hello.nonce,
        acceptorNonce: nonce,
        oneshot: hello.oneshot,
      };
      reader.write({ t: 'challenge', nodeId, instance, nonce });
      const answer = parseAnswer(await reader.next('answer'));
      if (answer === null || !proofMatches(handshakeProof(key, 'dialer', transcript), answer.proof)) return socket.destroy();
      reader.write({ t: 'welcome', proof: handshakeProof(key, 'acceptor', transcript) });
      socket.pause();
    })().catch(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, loopback, resolve));
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, sockets };
}
