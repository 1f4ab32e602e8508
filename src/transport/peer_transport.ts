// The node-to-node transport: one listener on cluster.internal_port and one HMAC-authenticated TCP connection per
// peer pair (handshake.ts: every frame after the handshake carries a MAC), inside mutual TLS when given certificates
// (cluster_tls.ts), shared by every channel (channel.ts); each data frame names its channel. Owns the listener, the peer table, the per-peer queues, requests
// and reconnect timers; nothing is module-global. Runs on the thread that created it (the node-link thread today);
// another thread uses a channel through port_channel.ts.
// Lifecycle: PeerTransport.listen(), openChannel() per channel, then close() or the last channel's close().
import { createServer, type Server, type Socket } from 'node:net';
import type { KeyObject } from 'node:crypto';
import { createServer as createTlsServer } from 'node:tls';
import { clusterTlsClientContext, clusterTlsServerOptions, type ClusterTlsMaterial } from './cluster_tls.js';
import { checkClusterSecret } from './cluster_secret.js';
import {
  Connection,
  type CloseOutcome,
  type ConnectionContext,
  type PeerAddress,
  type TransportLog,
} from './connection.js';
import { encodeFrame, frameBodyBytes, frameHeaderBytes } from './frame_codec.js';
import { freshInstance, isNodeId, secretKey } from './handshake.js';
import { LogBudget } from './log_budget.js';
import {
  channelIds,
  channelNameOf,
  LocalChannel,
  type ChannelEndpoint,
  type ChannelHandlers,
  type ChannelName,
} from './channel.js';

export type { PeerAddress, TransportLog } from './connection.js';
export { readClusterSecretFile, clusterSecretBytesMin } from './cluster_secret.js';

export interface PeerTransportOptions {
  /** This node's id, a positive integer (at most 2^32 - 1); a peer presenting it is refused. */
  nodeId: number;
  /** At least 32 bytes (cluster_secret.ts); copied, so the caller may wipe its own copy. */
  clusterSecret: Uint8Array;
  /** Port 0 picks a free port (tests); `port` tells which. */
  listen: PeerAddress;
  log?: TransportLog;
  /** Delay before redialling a peer: initial after the first failure, doubling per failure up to max, each
   *  drawn from [d/2, d) with `random`. */
  reconnectMs?: { initial: number; max: number };
  /** Per peer and channel, frames waiting for the connection or for a slow socket; beyond it the channel's
   *  oldest are dropped (Raft tolerates loss; a dropped request fails with 'unreachable'). */
  maxQueuedMessages?: number;
  /** Per peer and channel, the same bound in bytes; at least maxFrameBytes + 4 so one largest frame always fits. */
  maxQueuedBytes?: number;
  /** A frame body above it is refused: the receiver logs and closes the connection, the sender refuses to
   *  encode it (send logs and drops, request rejects with a RangeError). */
  maxFrameBytes?: number;
  /** From the TCP dial (or accept) to the end of the handshake. */
  handshakeTimeoutMs?: number;
  /** Incoming connections from one IP address still in their handshake (TLS's included); one more is closed at
   *  once, so a flood from one address holds few sockets and writes few lines. */
  maxPendingHandshakesPerAddress?: number;
  /** The jitter source of the reconnect delay, in [0, 1); injectable for deterministic tests. */
  random?: () => number;
  /** Mutual TLS on every connection, both ways, with certificates of this CA; the HMAC handshake still runs inside
   *  it (it binds the node id and the cluster secret). Absent or null: plain TCP, the HMAC handshake alone. */
  tls?: ClusterTlsMaterial | null;
}

/** The defaults of PeerTransportOptions, with their reasons. */
export const transportDefaults = {
  /** A restarting peer is back within tens of ms on loopback; 2 s caps the wait once it is back. */
  reconnectMs: { initial: 50, max: 2000 },
  /** About 100 heartbeat intervals of Raft traffic to a dead peer; older messages are stale anyway. */
  maxQueuedMessages: 1024,
  /** A metadata snapshot travels in one frame. */
  maxFrameBytes: 64 * 1024 * 1024,
  /** Generous for a loaded node, short enough that a silent socket does not hold a slot for long. */
  handshakeTimeoutMs: 5000,
  /** A node dials a peer once, plus a join's one-shot request now and then; nodes sharing an address (tests, a
   *  host running several) add theirs. 16 leaves room for those and for a racing redial. */
  maxPendingHandshakesPerAddress: 16,
  /** The budget of connection log lines (log_budget.ts): 20 a minute; the rest are counted in the next. */
  connectionLogLines: { lines: 20, windowMs: 60_000 },
} as const;

export type { TransportErrorCode } from '../protocol/transport_port_messages.js';
import type { TransportErrorCode } from '../protocol/transport_port_messages.js';

/**
 * Why a request failed. 'unreachable': no address, the dial or handshake failed, the request was dropped from a
 * full queue, or the connection closed before the reply (the peer may or may not have acted on it).
 * 'timeout': no reply in time (same doubt). 'remote_error': the peer's onRequest threw; message is its message.
 * 'closed': this transport was closed, or the peer removed.
 */
export class TransportError extends Error {
  override name = 'TransportError';
  constructor(
    readonly code: TransportErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Data frames are arrays led by their kind; the handshake frames (objects) come before any of them. The metadata
 * channel's frames keep the shape of transport version 1, which had no other channel; every other channel names its
 * wire id. A reply needs no channel, since request ids are unique per transport:
 *   metadata:    [message, message]                     [request, id, body]
 *   any channel: [channelMessage, channel, message]     [channelRequest, channel, id, body]
 *   replies:     [replyOk, id, value]                   [replyError, id, text]
 * On the wire each is followed by its MAC (connection.ts write). Version 1 nodes, which sent no MAC, are refused at
 * the hello: a rolling upgrade across version 2 runs the old and new nodes as two clusters until all are new.
 */
const frameKind = { message: 0, request: 1, replyOk: 2, replyError: 3, channelMessage: 4, channelRequest: 5 } as const;

function messageFrame(channel: number, message: unknown): unknown[] {
  return channel === channelIds.metadata ? [frameKind.message, message] : [frameKind.channelMessage, channel, message];
}

function requestFrame(channel: number, id: number, body: unknown): unknown[] {
  if (channel === channelIds.metadata) return [frameKind.request, id, body];
  return [frameKind.channelRequest, channel, id, body];
}

interface Outgoing {
  frame: Buffer;
  /** Set on a request frame, which fails at once when it is dropped rather than waiting for its timeout. */
  requestId: number | null;
}

interface Peer {
  readonly id: number;
  /** Where to dial; null for a peer known only by its incoming connection (it redials us if it wants). */
  address: PeerAddress | null;
  /** The open connection that serves the peer, whichever end dialled it. */
  conn: Connection | null;
  /** Our dial in its handshake. */
  dialing: Connection | null;
  /** Frames waiting for the connection or for a slow socket, by channel wire id (refusalQueueId for answers to
   *  a channel not open here). Each is bounded on its own, so a busy channel never pushes out another's frames. */
  queues: Map<number, ChannelQueue>;
  /** Something was sent to it: keep a connection up from now on (redial after a loss). */
  wanted: boolean;
  reconnectTimer: NodeJS.Timeout | null;
  /** Failed dials since the last open connection; sets the backoff and the log rate. */
  failedDials: number;
  droppedFrames: number;
}

interface ChannelQueue {
  items: Outgoing[];
  bytes: number;
}

/** The queue of the refusals of frames for a channel not open here; no channel has this wire id. */
const refusalQueueId = 0;

function queuedFrames(peer: Peer): number {
  let frames = 0;
  for (const queue of peer.queues.values()) frames += queue.items.length;
  return frames;
}

interface PendingRequest {
  /** The channel's wire id: closing the channel fails its requests. */
  channel: number;
  /** The peer it was sent to; null for requestAt. */
  peerId: number | null;
  /** The connection it was written on, once written. */
  conn: Connection | null;
  timer: NodeJS.Timeout;
  resolve: (reply: { from: number; reply: unknown }) => void;
  reject: (error: Error) => void;
}

const silentLog: TransportLog = { info() {}, warn() {} };

/** Logs the 1st, 2nd, 4th, 8th ... occurrence: a peer down for an hour costs a dozen lines, not thousands. */
function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

function isRequestId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value);
}

/** A channel id is a small non-negative integer; one this node does not know is still well formed. */
function isChannelId(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 0xffff;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.byteLength === b.byteLength && Buffer.compare(a, b) === 0;
}

function checkAddress(address: PeerAddress, what: string, portMin: number): void {
  if (typeof address?.host !== 'string' || address.host === '') {
    throw new Error(`${what}: host must be a non-empty string`);
  }
  if (!Number.isInteger(address.port) || address.port < portMin || address.port > 65535) {
    throw new Error(`${what}: port must be an integer in ${portMin}..65535`);
  }
}

interface Settings {
  reconnectMs: { initial: number; max: number };
  maxQueuedMessages: number;
  maxQueuedBytes: number;
  maxFrameBytes: number;
  random: () => number;
}

function settingsOf(options: PeerTransportOptions): Settings {
  if (!isNodeId(options.nodeId)) throw new Error(`nodeId: must be an integer in 1..4294967295, got ${options.nodeId}`);
  checkClusterSecret(options.clusterSecret, 'clusterSecret option');
  checkAddress(options.listen, 'listen', 0);
  const reconnectMs = options.reconnectMs ?? transportDefaults.reconnectMs;
  if (!(reconnectMs.initial > 0) || !(reconnectMs.max >= reconnectMs.initial)) {
    throw new Error('reconnectMs: initial must be above 0 and max at least initial');
  }
  const maxFrameBytes = options.maxFrameBytes ?? transportDefaults.maxFrameBytes;
  if (!Number.isInteger(maxFrameBytes) || maxFrameBytes < 1024 || maxFrameBytes > 0xffff_ffff) {
    throw new Error('maxFrameBytes: must be an integer in 1024..4294967295');
  }
  const maxQueuedMessages = options.maxQueuedMessages ?? transportDefaults.maxQueuedMessages;
  if (!Number.isInteger(maxQueuedMessages) || maxQueuedMessages < 1) {
    throw new Error('maxQueuedMessages: must be an integer of 1 or more');
  }
  const maxQueuedBytes = options.maxQueuedBytes ?? maxFrameBytes + frameHeaderBytes;
  if (!Number.isInteger(maxQueuedBytes) || maxQueuedBytes < maxFrameBytes + frameHeaderBytes) {
    throw new Error('maxQueuedBytes: must be an integer of at least maxFrameBytes + 4');
  }
  return { reconnectMs, maxQueuedMessages, maxQueuedBytes, maxFrameBytes, random: options.random ?? Math.random };
}

export class PeerTransport {
  private readonly peers = new Map<number, Peer>();
  /** Every live connection, in or out, open or in its handshake: close() ends them all. */
  private readonly connections = new Set<Connection>();
  private readonly pending = new Map<number, PendingRequest>();
  /** requestAt's connection -> its one request id, and its request frame until written once the handshake is done. */
  private readonly oneshots = new Map<Connection, { id: number; frame: Buffer | null }>();
  /** The open channels' handlers, by wire id. */
  private readonly channels = new Map<number, ChannelHandlers>();
  /** Frames dropped for naming a channel not open here; sets the log rate. */
  private unknownChannelFrames = 0;
  /** The members setMembers named; null until then (nobody is a member of a membersOnly channel). */
  private members: ReadonlySet<number> | null = null;
  /** Incoming TLS handshakes that failed (no or a foreign certificate, not TLS at all); sets the log rate. */
  private tlsRefusals = 0;
  /** Incoming sockets not yet through the handshake, `address:port` -> IP address, and their count per address. */
  private readonly handshaking = new Map<string, string>();
  private readonly handshakingByAddress = new Map<string, number>();
  /** Incoming connections closed for the per-address cap. */
  private pendingCapRefusals = 0;
  private readonly maxPendingPerAddress: number;
  private nextRequestId = 1;
  private closed = false;
  private readonly context: ConnectionContext;
  private readonly log: TransportLog;
  /** The lines a stranger can cause, budgeted (log_budget.ts). */
  private readonly connectionLog: TransportLog;
  private readonly hooks = {
    admit: (conn: Connection) => this.admit(conn),
    opened: (conn: Connection) => this.onOpened(conn),
    frame: (conn: Connection, value: unknown) => this.onFrame(conn, value),
    drained: (conn: Connection) => this.onDrained(conn),
    closed: (conn: Connection, outcome: CloseOutcome) => this.onClosed(conn, outcome),
  };

  private constructor(
    private readonly options: PeerTransportOptions,
    private readonly settings: Settings,
    key: KeyObject,
    private readonly server: Server,
  ) {
    this.log = options.log ?? silentLog;
    const budget = transportDefaults.connectionLogLines;
    this.connectionLog = new LogBudget(this.log, budget.lines, budget.windowMs);
    this.maxPendingPerAddress = options.maxPendingHandshakesPerAddress ?? transportDefaults.maxPendingHandshakesPerAddress;
    const tls = options.tls ?? null;
    this.context = {
      nodeId: options.nodeId,
      key,
      instance: freshInstance(),
      frameBytesMax: settings.maxFrameBytes,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? transportDefaults.handshakeTimeoutMs,
      log: this.connectionLog,
      tls: tls === null ? null : clusterTlsClientContext(tls),
    };
    // Every raw socket counts against its address's cap, TLS or not; a TLS listener hands a socket over once the
    // peer's certificate is verified.
    server.on('connection', (socket: Socket) => {
      if (this.admitIncoming(socket) && tls === null) this.onAccept(socket);
    });
    if (tls !== null) server.on('secureConnection', (socket: Socket) => this.onAccept(socket));
    server.on('tlsClientError', (error: Error & { code?: string }, socket: Socket) => this.onTlsRefused(error, socket));
    server.on('error', (error) => this.log.warn({ error: error.message }, 'node-to-node listener error'));
  }

  /** Validates the options (throws a clear Error), then listens; resolves once bound. */
  static async listen(options: PeerTransportOptions): Promise<PeerTransport> {
    const settings = settingsOf(options);
    const handshakeTimeoutMs = options.handshakeTimeoutMs ?? transportDefaults.handshakeTimeoutMs;
    const tls = options.tls ?? null;
    const server = tls === null
      ? createServer({ noDelay: true })
      : createTlsServer({ ...clusterTlsServerOptions(tls, handshakeTimeoutMs), noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.listen.port, options.listen.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new PeerTransport(options, settings, secretKey(options.clusterSecret), server);
  }

  get port(): number {
    const address = this.server.address();
    if (address === null || typeof address === 'string') throw new Error('transport is not listening');
    return address.port;
  }

  /** Records (or changes) where a peer listens. Nothing is dialled until there is something to send. */
  setPeer(id: number, address: PeerAddress): void {
    if (!isNodeId(id) || id === this.options.nodeId) throw new Error(`setPeer: ${id} is not another node's id`);
    checkAddress(address, `setPeer(${id})`, 1);
    const peer = this.peerRecord(id);
    const changed = peer.address === null || peer.address.host !== address.host || peer.address.port !== address.port;
    peer.address = { host: address.host, port: address.port };
    if (!changed || this.closed) return;
    // A dial or a wait aimed at the old address is abandoned; an open connection stays, it is authenticated.
    if (peer.dialing !== null) {
      const dialing = peer.dialing;
      peer.dialing = null;
      dialing.close();
    }
    if (peer.reconnectTimer !== null) {
      clearTimeout(peer.reconnectTimer);
      peer.reconnectTimer = null;
    }
    if (peer.conn === null && (peer.wanted || queuedFrames(peer) > 0)) this.dial(peer);
  }

  /** Closes the peer's connection and forgets it; its queued and in-flight requests fail with 'closed'. */
  removePeer(id: number): void {
    const peer = this.peers.get(id);
    if (peer === undefined) return;
    this.peers.delete(id);
    if (peer.reconnectTimer !== null) clearTimeout(peer.reconnectTimer);
    peer.reconnectTimer = null;
    for (const conn of [peer.conn, peer.dialing]) {
      if (conn === null) continue;
      this.failInFlight(conn, 'closed', `node ${id} was removed`);
      conn.close();
    }
    peer.conn = null;
    peer.dialing = null;
    this.failQueuedRequests(peer, 'closed', `node ${id} was removed`);
    peer.queues.clear();
  }

  setMembers(ids: readonly number[]): void {
    this.members = new Set(ids);
  }

  /** Registers a channel's handlers and returns the endpoint its user holds; a channel opens once per transport. */
  openChannel(name: ChannelName, handlers: ChannelHandlers): ChannelEndpoint {
    if (this.closed) throw new Error(`openChannel(${name}): transport closed`);
    const id = channelIds[name];
    if (this.channels.has(id)) throw new Error(`openChannel(${name}): already open`);
    this.channels.set(id, handlers);
    return new LocalChannel(name, this);
  }

  /** Ends one channel: its pending requests fail with 'closed' and frames that arrive for it are refused as for an
   *  unknown channel. The transport closes with its last open channel. */
  async closeChannel(name: ChannelName): Promise<void> {
    const id = channelIds[name];
    if (!this.channels.delete(id)) return;
    // The last channel's close is the transport's, with the same errors as close() called directly.
    if (this.channels.size === 0) return this.close();
    for (const [requestId, request] of this.pending) {
      if (request.channel === id) this.settle(requestId, new TransportError('closed', `channel ${name} closed`));
    }
  }

  /** Queues one message of channel for the peer and dials it if needed. Never throws: a message that cannot be sent
   *  (not encodable, too large, channel or transport closed) is logged and dropped, which Raft tolerates. */
  sendOn(channel: ChannelName, to: number, message: unknown): void {
    if (this.closed || !this.channels.has(channelIds[channel])) return;
    if (!isNodeId(to) || to === this.options.nodeId) {
      this.log.warn({ peer: to, channel }, 'node-to-node send to an invalid node id dropped');
      return;
    }
    let frame: Buffer;
    try {
      frame = this.encodeChecked(messageFrame(channelIds[channel], message));
    } catch (error) {
      this.log.warn({ peer: to, channel, error: (error as Error).message }, 'node-to-node message dropped');
      return;
    }
    const peer = this.peerRecord(to);
    peer.wanted = true;
    this.enqueue(peer, channelIds[channel], { frame, requestId: null });
    this.ensureConnected(peer);
  }

  /** One request of channel to a peer; rejects with a TransportError (RangeError for a bad timeout or an oversize
   *  body). */
  requestOn(channel: ChannelName, to: number, body: unknown, timeoutMs: number): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const peer = this.peers.get(to);
      let id: number, frame: Buffer;
      try {
        ({ id, frame } = this.prepareRequest(channel, body, timeoutMs, () => {
          if (peer === undefined || (peer.address === null && peer.conn === null)) {
            throw new TransportError('unreachable', `node ${to} has no known address`);
          }
        }));
      } catch (error) {
        return reject(error);
      }
      const request = { id, channel: channelIds[channel], peerId: to, conn: null, timeoutMs };
      this.addPending(request, (answer) => resolve(answer.reply), reject);
      peer!.wanted = true;
      this.enqueue(peer!, channelIds[channel], { frame, requestId: id });
      this.ensureConnected(peer!);
    });
  }

  /** One request of channel over a connection of its own to an address whose node id is not known (a joining
   *  node); resolves with the id the peer authenticated as. The connection closes after the reply. */
  requestAtOn(
    channel: ChannelName,
    address: PeerAddress,
    body: unknown,
    timeoutMs: number,
  ): Promise<{ from: number; reply: unknown }> {
    return new Promise((resolve, reject) => {
      let id: number, frame: Buffer;
      try {
        ({ id, frame } = this.prepareRequest(channel, body, timeoutMs, () => checkAddress(address, 'requestAt', 1)));
      } catch (error) {
        return reject(error);
      }
      const conn = Connection.dial(address, null, true, this.context, this.hooks);
      this.connections.add(conn);
      this.oneshots.set(conn, { id, frame });
      this.addPending({ id, channel: channelIds[channel], peerId: null, conn, timeoutMs }, resolve, reject);
    });
  }

  /** What requestOn and requestAtOn share: refuses when the transport or the channel is closed, for a bad timeout
   *  or when check throws, then takes a request id and encodes the frame (throws when the body cannot be encoded or
   *  is too large). */
  private prepareRequest(
    channel: ChannelName,
    body: unknown,
    timeoutMs: number,
    check: () => void,
  ): { id: number; frame: Buffer } {
    if (this.closed) throw new TransportError('closed', 'transport closed');
    if (!this.channels.has(channelIds[channel])) throw new TransportError('closed', `channel ${channel} closed`);
    if (!(timeoutMs > 0)) throw new RangeError(`request timeoutMs must be above 0, got ${timeoutMs}`);
    check();
    const id = this.nextRequestId++;
    return { id, frame: this.encodeChecked(requestFrame(channelIds[channel], id, body)) };
  }

  /** Peers with an open connection, ascending. */
  connectedPeers(): number[] {
    const ids: number[] = [];
    for (const peer of this.peers.values()) if (peer.conn !== null) ids.push(peer.id);
    return ids.sort((a, b) => a - b);
  }

  /** Stops listening, closes every connection and fails every pending request with 'closed'. Idempotent. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      for (const peer of this.peers.values()) {
        if (peer.reconnectTimer !== null) clearTimeout(peer.reconnectTimer);
        peer.reconnectTimer = null;
        peer.queues.clear();
      }
      for (const [id, request] of this.pending) {
        clearTimeout(request.timer);
        this.pending.delete(id);
        request.reject(new TransportError('closed', 'transport closed'));
      }
      for (const conn of this.connections) conn.close();
    }
    if (!this.server.listening) return;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  // --- connections -------------------------------------------------------------------------------------------

  /** A peer that failed the TLS handshake never reaches Connection: logged here, since the dialer of a foreign CA
   *  or without TLS learns only that the connection closed. */
  private onTlsRefused(error: Error & { code?: string }, socket: Socket & { authorizationError?: Error | string }): void {
    this.tlsRefusals += 1;
    if (isPowerOfTwo(this.tlsRefusals)) {
      // node:tls reports a refused handshake once the socket is torn down, when its address is mostly gone.
      const remote = socket.remoteAddress === undefined ? {} : { remote: `${socket.remoteAddress}:${socket.remotePort ?? '?'}` };
      // A rejected client certificate ends the socket without an error of its own ('socket hang up'); the
      // verification's code (UNABLE_TO_VERIFY_LEAF_SIGNATURE, CERT_HAS_EXPIRED, ...) is the reason.
      const verify = socket.authorizationError;
      const reason = verify === undefined || verify === null ? error.message : `client certificate refused: ${String(verify)}`;
      const fields = { ...remote, reason, code: error.code, tlsRefusals: this.tlsRefusals };
      this.log.warn(fields, 'node-to-node TLS handshake refused');
    }
    socket.destroy();
  }

  /** Counts a new incoming socket against its address's cap of pending handshakes; false (socket closed) over it. */
  private admitIncoming(socket: Socket): boolean {
    const address = socket.remoteAddress;
    const count = address === undefined ? 0 : this.handshakingByAddress.get(address) ?? 0;
    if (this.closed || address === undefined || count >= this.maxPendingPerAddress) {
      if (!this.closed && address !== undefined) {
        this.pendingCapRefusals += 1;
        this.connectionLog.warn(
          { remote: `${address}:${socket.remotePort ?? '?'}`, pendingHandshakes: count, refusedForCap: this.pendingCapRefusals },
          'node-to-node connection refused: too many handshakes pending from its address',
        );
      }
      socket.destroy();
      return false;
    }
    const remote = `${address}:${socket.remotePort ?? '?'}`;
    this.handshaking.set(remote, address);
    this.handshakingByAddress.set(address, count + 1);
    socket.once('close', () => this.handshakeDone(remote));
    return true;
  }

  /** The socket at remote finished its handshake (or closed): its slot is free. Idempotent. */
  private handshakeDone(remote: string): void {
    const address = this.handshaking.get(remote);
    if (address === undefined) return;
    this.handshaking.delete(remote);
    const count = (this.handshakingByAddress.get(address) ?? 1) - 1;
    if (count > 0) this.handshakingByAddress.set(address, count);
    else this.handshakingByAddress.delete(address);
  }

  private onAccept(socket: Socket): void {
    if (this.closed) {
      socket.destroy();
      return;
    }
    this.connections.add(Connection.accept(socket, this.context, this.hooks));
  }

  private peerRecord(id: number): Peer {
    let peer = this.peers.get(id);
    if (peer === undefined) {
      peer = {
        id,
        address: null,
        conn: null,
        dialing: null,
        queues: new Map(),
        wanted: false,
        reconnectTimer: null,
        failedDials: 0,
        droppedFrames: 0,
      };
      this.peers.set(id, peer);
    }
    return peer;
  }

  private ensureConnected(peer: Peer): void {
    if (peer.conn !== null) return this.flush(peer);
    if (peer.dialing !== null || peer.reconnectTimer !== null || peer.address === null || this.closed) return;
    this.dial(peer);
  }

  private dial(peer: Peer): void {
    if (peer.address === null) return;
    peer.dialing = Connection.dial(peer.address, peer.id, false, this.context, this.hooks);
    this.connections.add(peer.dialing);
  }

  /**
   * The tie-break, on the acceptor once the dialer is authenticated. Both ends keep the connection dialled by
   * the lower id: so an incoming connection from a lower id is always taken (it replaces ours), and one from a
   * higher id is refused while our own dial to it is under way (the dialler then takes ours) or while an open
   * connection from the same instance of that peer serves (a late racer; a restarted peer has a new instance,
   * and its connection replaces the stale one).
   */
  private admit(conn: Connection): boolean {
    if (this.closed) return false;
    if (conn.peerId < this.options.nodeId) return true;
    const peer = this.peers.get(conn.peerId);
    if (peer === undefined) return true;
    if (peer.dialing !== null) return false;
    return !(peer.conn !== null && sameBytes(peer.conn.peerInstance, conn.peerInstance));
  }

  private onOpened(conn: Connection): void {
    if (conn.role === 'acceptor') this.handshakeDone(conn.remote);
    if (this.closed) return conn.close();
    if (conn.oneshot) {
      const oneshot = this.oneshots.get(conn);
      const frame = oneshot?.frame ?? null;
      if (oneshot !== undefined) oneshot.frame = null;
      // The acceptor of a oneshot connection only answers; the dialer writes its one request now.
      if (conn.role === 'dialer' && oneshot !== undefined && frame !== null && this.pending.has(oneshot.id)) {
        conn.inFlightRequestIds.add(oneshot.id);
        conn.write(frame);
      }
      return;
    }
    let peer: Peer;
    if (conn.role === 'dialer') {
      const dialed = this.peers.get(conn.peerId);
      // Abandoned meanwhile (peer removed, address changed): setPeer or removePeer already moved on.
      if (dialed === undefined || dialed.dialing !== conn) return conn.close();
      peer = dialed;
      peer.dialing = null;
    } else {
      peer = this.peerRecord(conn.peerId);
      if (peer.dialing !== null) {
        // The peer's dial won the tie-break: ours is dropped, and its queue moves to this connection.
        const dialing = peer.dialing;
        peer.dialing = null;
        dialing.close();
      }
    }
    if (peer.conn !== null) {
      const replaced = peer.conn;
      peer.conn = null;
      this.failInFlight(replaced, 'unreachable', `connection to node ${peer.id} replaced before the reply`);
      replaced.close();
    }
    if (peer.reconnectTimer !== null) clearTimeout(peer.reconnectTimer);
    peer.reconnectTimer = null;
    peer.conn = conn;
    peer.failedDials = 0;
    this.log.info({ peer: peer.id, remote: conn.remote, role: conn.role }, 'node-to-node connection open');
    this.flush(peer);
  }

  private onClosed(conn: Connection, outcome: CloseOutcome): void {
    this.connections.delete(conn);
    if (conn.role === 'acceptor') this.handshakeDone(conn.remote);
    this.failInFlight(conn, 'unreachable', `connection to node ${conn.peerId} closed before the reply`);
    if (conn.oneshot && conn.role === 'dialer') {
      const id = this.oneshots.get(conn)?.id;
      this.oneshots.delete(conn);
      const why = `${conn.remote}: ${conn.failure || 'closed'}`;
      if (id !== undefined) this.settle(id, new TransportError('unreachable', why));
      return;
    }
    if (this.closed || conn.oneshot) return;
    if (conn.role === 'dialer' && conn.expectedPeerId !== null) {
      const peer = this.peers.get(conn.expectedPeerId);
      if (peer !== undefined && peer.dialing === conn) {
        peer.dialing = null;
        this.onDialFailed(peer, conn, outcome);
        return;
      }
    }
    const peer = this.peers.get(conn.peerId);
    if (peer === undefined || peer.conn !== conn) return;
    peer.conn = null;
    this.log.info({ peer: peer.id, remote: conn.remote }, 'node-to-node connection lost');
    if (peer.wanted) this.scheduleReconnect(peer);
  }

  private onDialFailed(peer: Peer, conn: Connection, outcome: CloseOutcome): void {
    peer.failedDials += 1;
    if (outcome !== 'duplicate') {
      // Requests fail fast, so a caller learns of an unreachable leader now rather than at its timeout;
      // one-way messages wait for the next connection.
      this.failQueuedRequests(peer, 'unreachable', `node ${peer.id} at ${conn.remote}: ${conn.failure}`);
      if (isPowerOfTwo(peer.failedDials)) {
        this.log.warn(
          { peer: peer.id, remote: conn.remote, failedDials: peer.failedDials, reason: conn.failure },
          'node-to-node dial failed',
        );
      }
    }
    // After 'duplicate' the peer's own dial is expected to arrive and cancel this retry.
    this.scheduleReconnect(peer);
  }

  private scheduleReconnect(peer: Peer): void {
    if (this.closed || peer.address === null || peer.conn !== null || peer.dialing !== null) return;
    if (peer.reconnectTimer !== null) return;
    const { initial, max } = this.settings.reconnectMs;
    const ceilingMs = Math.min(max, initial * 2 ** Math.min(peer.failedDials, 30));
    const delayMs = ceilingMs / 2 + (this.settings.random() * ceilingMs) / 2;
    peer.reconnectTimer = setTimeout(() => {
      peer.reconnectTimer = null;
      if (this.closed || this.peers.get(peer.id) !== peer || peer.conn !== null || peer.dialing !== null) return;
      this.dial(peer);
    }, delayMs);
  }

  // --- frames ------------------------------------------------------------------------------------------------

  private encodeChecked(value: unknown): Buffer {
    const frame = encodeFrame(value);
    const bodyBytes = frameBodyBytes(frame);
    if (bodyBytes > this.settings.maxFrameBytes) {
      throw new RangeError(`frame of ${bodyBytes} bytes exceeds maxFrameBytes ${this.settings.maxFrameBytes}`);
    }
    return frame;
  }

  private enqueue(peer: Peer, channel: number, item: Outgoing): void {
    let queue = peer.queues.get(channel);
    if (queue === undefined) {
      queue = { items: [], bytes: 0 };
      peer.queues.set(channel, queue);
    }
    queue.items.push(item);
    queue.bytes += item.frame.byteLength;
    while (queue.items.length > this.settings.maxQueuedMessages || queue.bytes > this.settings.maxQueuedBytes) {
      const dropped = queue.items.shift();
      if (dropped === undefined) break;
      queue.bytes -= dropped.frame.byteLength;
      peer.droppedFrames += 1;
      if (dropped.requestId !== null) {
        const why = `node ${peer.id}: queue full, request dropped`;
        this.settle(dropped.requestId, new TransportError('unreachable', why));
      }
      if (isPowerOfTwo(peer.droppedFrames)) {
        const fields = { peer: peer.id, channel, droppedFrames: peer.droppedFrames };
        this.log.warn(fields, 'node-to-node queue full, oldest dropped');
      }
    }
  }

  /** Hands queued frames to the socket until it pushes back; 'drain' resumes. The channels take turns, a frame
   *  each, so a channel with a long queue does not hold back another's next frame. */
  private flush(peer: Peer): void {
    const conn = peer.conn;
    if (conn === null || !conn.isOpen) return;
    let wrote = true;
    while (wrote && !conn.writeBlocked) {
      wrote = false;
      for (const queue of peer.queues.values()) {
        if (conn.writeBlocked) break;
        const item = queue.items.shift();
        if (item === undefined) continue;
        wrote = true;
        queue.bytes -= item.frame.byteLength;
        if (item.requestId !== null) {
          const request = this.pending.get(item.requestId);
          // Timed out while queued: the caller has its answer, the peer need not act on it.
          if (request === undefined) continue;
          request.conn = conn;
          conn.inFlightRequestIds.add(item.requestId);
        }
        conn.write(item.frame);
      }
    }
  }

  private onDrained(conn: Connection): void {
    if (conn.oneshot) return;
    const peer = this.peers.get(conn.peerId);
    if (peer !== undefined && peer.conn === conn) this.flush(peer);
  }

  private onFrame(conn: Connection, value: unknown): void {
    if (!Array.isArray(value)) return conn.refuse('malformed data frame');
    const kind: unknown = value[0];
    if (kind === frameKind.message) return this.onMessageFrame(conn, channelIds.metadata, value[1]);
    if (kind === frameKind.request) return this.onRequestFrame(conn, channelIds.metadata, value[1], value[2]);
    if (kind === frameKind.channelMessage) return this.onMessageFrame(conn, value[1], value[2]);
    if (kind === frameKind.channelRequest) return this.onRequestFrame(conn, value[1], value[2], value[3]);
    if (kind !== frameKind.replyOk && kind !== frameKind.replyError) return conn.refuse('unknown data frame kind');
    const id: unknown = value[1];
    if (!isRequestId(id)) return conn.refuse('data frame without a request id');
    const request = this.pending.get(id);
    // A reply after the timeout, or on a connection the request was not written on: nobody waits for it.
    if (request === undefined || request.conn !== conn) return;
    conn.inFlightRequestIds.delete(id);
    if (kind === frameKind.replyOk) {
      this.settle(id, { from: conn.peerId, reply: value[2] });
    } else {
      this.settle(id, new TransportError('remote_error', typeof value[2] === 'string' ? value[2] : 'remote error'));
    }
    if (conn.oneshot) conn.close();
  }

  private onMessageFrame(conn: Connection, channel: unknown, message: unknown): void {
    if (!isChannelId(channel)) return conn.refuse('data frame without a channel');
    if (conn.oneshot) return conn.refuse('one-way message on a requestAt connection');
    const handlers = this.channels.get(channel);
    if (handlers === undefined) return this.onUnknownChannel(conn, channel);
    if (handlers.membersOnly === true && !this.isMember(conn, channel)) return;
    handlers.onMessage(conn.peerId, message);
  }

  /** For a membersOnly channel: false, logged on the budget, when the connection's peer is not a member. */
  private isMember(conn: Connection, channel: number): boolean {
    if (this.members?.has(conn.peerId) === true) return true;
    this.connectionLog.warn(
      { peer: conn.peerId, channel: channelNameOf(channel) ?? channel },
      'node-to-node frame from a node that is not a member refused',
    );
    return false;
  }

  /**
   * A frame for a channel this node has not open (a newer peer's channel, or one opened on the peer only): dropped
   * with a rate-limited log line, and a request answered with a remote_error. The connection stays, since the other
   * channels on it are sound.
   */
  private onUnknownChannel(conn: Connection, channel: number, requestId: number | null = null): void {
    this.unknownChannelFrames += 1;
    if (isPowerOfTwo(this.unknownChannelFrames)) {
      this.log.warn(
        { peer: conn.peerId, channel, unknownChannelFrames: this.unknownChannelFrames },
        'node-to-node frame for a channel not open here dropped',
      );
    }
    if (requestId === null) return;
    const name = channelNameOf(channel) ?? `#${channel}`;
    const refusal = `channel ${name} is not open on node ${this.options.nodeId}`;
    this.reply(conn, { id: requestId, channel: refusalQueueId }, false, refusal);
  }

  private onRequestFrame(conn: Connection, channel: unknown, id: unknown, body: unknown): void {
    if (!isChannelId(channel)) return conn.refuse('data frame without a channel');
    if (!isRequestId(id)) return conn.refuse('data frame without a request id');
    const handlers = this.channels.get(channel);
    if (handlers === undefined) return this.onUnknownChannel(conn, channel, id);
    if (handlers.membersOnly === true && !this.isMember(conn, channel)) {
      return this.reply(conn, { id, channel }, false, `node ${conn.peerId} is not a member of this cluster`);
    }
    const handler = handlers.onRequest;
    let reply: Promise<unknown>;
    try {
      reply =
        handler === undefined
          ? Promise.reject(new Error('this node takes no requests on this channel'))
          : Promise.resolve(handler(conn.peerId, body));
    } catch (error) {
      reply = Promise.reject(error);
    }
    reply.then(
      (result) => this.reply(conn, { id, channel }, true, result),
      (error: unknown) => {
        this.reply(conn, { id, channel }, false, error instanceof Error ? error.message : String(error));
      },
    );
  }

  /** Answers on the connection the request came on, queued with its channel's frames; if the connection is gone
   *  the requester has failed it already. */
  private reply(conn: Connection, request: { id: number; channel: number }, ok: boolean, value: unknown): void {
    const { id } = request;
    if (!conn.isOpen || this.closed) return;
    let frame: Buffer;
    try {
      frame = this.encodeChecked([ok ? frameKind.replyOk : frameKind.replyError, id, value]);
    } catch (error) {
      frame = encodeFrame([frameKind.replyError, id, `reply not sent: ${(error as Error).message}`]);
    }
    if (conn.oneshot) {
      conn.write(frame);
      return;
    }
    const peer = this.peers.get(conn.peerId);
    if (peer === undefined || peer.conn !== conn) return;
    this.enqueue(peer, request.channel, { frame, requestId: null });
    this.flush(peer);
  }

  // --- requests ----------------------------------------------------------------------------------------------

  private addPending(
    request: { id: number; channel: number; peerId: number | null; conn: Connection | null; timeoutMs: number },
    resolve: (answer: { from: number; reply: unknown }) => void,
    reject: (error: Error) => void,
  ): void {
    const { id, channel, peerId, conn, timeoutMs } = request;
    const timer = setTimeout(() => {
      const pending = this.pending.get(id);
      const target = peerId === null ? 'the address' : `node ${peerId}`;
      this.settle(id, new TransportError('timeout', `no reply from ${target} within ${timeoutMs} ms`));
      if (pending?.conn?.oneshot === true) pending.conn.close();
    }, timeoutMs);
    this.pending.set(id, { channel, peerId, conn, timer, resolve, reject });
  }

  /** Resolves or rejects a pending request once; later calls for the same id do nothing. */
  private settle(id: number, outcome: { from: number; reply: unknown } | Error): void {
    const request = this.pending.get(id);
    if (request === undefined) return;
    this.pending.delete(id);
    clearTimeout(request.timer);
    request.conn?.inFlightRequestIds.delete(id);
    if (outcome instanceof Error) request.reject(outcome);
    else request.resolve(outcome);
  }

  private failInFlight(conn: Connection, code: TransportErrorCode, message: string): void {
    for (const id of [...conn.inFlightRequestIds]) this.settle(id, new TransportError(code, message));
    conn.inFlightRequestIds.clear();
  }

  private failQueuedRequests(peer: Peer, code: TransportErrorCode, message: string): void {
    for (const queue of peer.queues.values()) {
      const kept: Outgoing[] = [];
      for (const item of queue.items) {
        if (item.requestId === null) kept.push(item);
        else {
          queue.bytes -= item.frame.byteLength;
          this.settle(item.requestId, new TransportError(code, message));
        }
      }
      queue.items = kept;
    }
  }
}
