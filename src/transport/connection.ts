// One TCP connection between two nodes, plain or inside mutual TLS (cluster_tls.ts): the socket, its frame decoder
// and the handshake state machine of either side (see handshake.ts). After the handshake it only moves frames, each
// with its MAC (written on write, checked before the frame is decoded; a failure closes the connection); which
// connection serves a peer, queues, requests and reconnects are PeerTransport's. Runs on the thread that owns its
// PeerTransport; lives from the dial or accept until the socket closes, and reports that close exactly once.
import { connect, type Socket } from 'node:net';
import { timingSafeEqual, type KeyObject } from 'node:crypto';
import { connect as tlsConnect, type SecureContext } from 'node:tls';
import { clusterTlsDialOptions } from './cluster_tls.js';
import { decodeBody, encodeFrame, FrameDecoder, frameHeaderBytes, FrameTooLargeError } from './frame_codec.js';
import {
  connectionKeys,
  frameMac,
  freshNonce,
  handshakeProof,
  macBytes,
  parseAnswer,
  parseChallenge,
  parseHello,
  parseVerdict,
  proofMatches,
  transportVersion,
  type Transcript,
} from './handshake.js';

/** Until the peer is authenticated its frames are handshake frames (well under 200 bytes): a stranger may not
 *  make us buffer a data-sized frame. */
export const handshakeFrameBytesMax = 1024;
/** TCP keepalive after this idle time, so a peer whose host vanished is noticed even when nothing is sent. */
const keepAliveInitialDelayMs = 10_000;

export interface TransportLog {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
}

export type { PeerAddress } from '../protocol/transport_port_messages.js';
import type { PeerAddress } from '../protocol/transport_port_messages.js';

/** What every connection of one PeerTransport shares. */
export interface ConnectionContext {
  nodeId: number;
  key: KeyObject;
  instance: Uint8Array;
  frameBytesMax: number;
  handshakeTimeoutMs: number;
  /** Every line a connection writes is one a stranger or a peer can cause, so this log has a budget
   *  (log_budget.ts). */
  log: TransportLog;
  /** Dials run mutual TLS with this context (cluster_tls.ts); null: plain TCP, the HMAC handshake alone. */
  tls: SecureContext | null;
}

/**
 * 'duplicate': the acceptor kept another connection to us (tie-break), not a failure.
 * 'failed': never opened (connect error, refused handshake, deadline). 'lost': closed after it opened.
 */
export type CloseOutcome = 'duplicate' | 'failed' | 'lost';

export interface ConnectionHooks {
  /** Acceptor side, peer authenticated: keep this connection (welcome) or refuse it as a duplicate. */
  admit(conn: Connection): boolean;
  opened(conn: Connection): void;
  frame(conn: Connection, value: unknown): void;
  /** The socket took the bytes it had refused (write returned false before). */
  drained(conn: Connection): void;
  closed(conn: Connection, outcome: CloseOutcome): void;
}

type ConnectionState = 'connecting' | 'hello' | 'challenge' | 'answer' | 'verdict' | 'open' | 'closed';

export class Connection {
  private state: ConnectionState;
  private readonly decoder = new FrameDecoder(handshakeFrameBytesMax);
  private readonly localNonce = freshNonce();
  private transcript: Transcript | null = null;
  private handshakeTimer: NodeJS.Timeout | null;
  /** This side's and the peer's MAC keys, and how many frames each way were sent or checked; set on open. */
  private sendKey: KeyObject | null = null;
  private receiveKey: KeyObject | null = null;
  private sentFrames = 0;
  private receivedFrames = 0;
  /** The authenticated peer's node id and instance; set during the handshake, trusted only once open. */
  peerId = 0;
  peerInstance: Uint8Array = new Uint8Array(0);
  /** Why it never opened, for the transport's log of dial failures. */
  failure = '';
  /** Request ids written on this connection and not yet answered; failed when it closes. */
  readonly inFlightRequestIds = new Set<number>();
  /** We refused the peer (and logged why). */
  private refusedHere = false;
  /** The socket refused bytes (write returned false) and has not drained yet. */
  writeBlocked = false;

  private constructor(
    private readonly socket: Socket,
    readonly role: 'dialer' | 'acceptor',
    private oneshotFlag: boolean,
    /** Dialer: the node id the dialled address should answer with, or null when unknown (requestAt). */
    readonly expectedPeerId: number | null,
    readonly remote: string,
    private readonly context: ConnectionContext,
    private readonly hooks: ConnectionHooks,
  ) {
    this.state = role === 'dialer' ? 'connecting' : 'hello';
    // The deadline covers the TCP connect too, so a black-holed address fails like a silent peer.
    this.handshakeTimer = setTimeout(() => this.refuse('handshake deadline passed'), context.handshakeTimeoutMs);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, keepAliveInitialDelayMs);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => {
      this.writeBlocked = false;
      if (this.state === 'open') hooks.drained(this);
    });
    socket.on('error', (error) => {
      if (this.failure === '') this.failure = error.message;
    });
    socket.on('close', () => this.onClose());
  }

  static dial(
    address: PeerAddress,
    expectedPeerId: number | null,
    oneshot: boolean,
    context: ConnectionContext,
    hooks: ConnectionHooks,
  ): Connection {
    const socket = context.tls === null
      ? connect({ host: address.host, port: address.port, noDelay: true })
      : tlsConnect(clusterTlsDialOptions(context.tls, address.host, address.port));
    const remote = `${address.host}:${address.port}`;
    const conn = new Connection(socket, 'dialer', oneshot, expectedPeerId, remote, context, hooks);
    // Over TLS the hello waits for the peer's certificate to be verified; the HMAC handshake then runs inside.
    socket.once(context.tls === null ? 'connect' : 'secureConnect', () => conn.onConnect());
    return conn;
  }

  static accept(socket: Socket, context: ConnectionContext, hooks: ConnectionHooks): Connection {
    const remote = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    return new Connection(socket, 'acceptor', false, null, remote, context, hooks);
  }

  /** A requestAt connection: it carries requests and their replies only, and is no peer's connection. The
   *  acceptor learns it from the hello. */
  get oneshot(): boolean {
    return this.oneshotFlag;
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** Writes one encoded frame of an open connection and its MAC; false when the socket wants a 'drain' before
   *  more. The MAC is made here, not at encoding: a queued frame learns its connection and sequence number only
   *  now. */
  write(frame: Buffer): boolean {
    if (this.state !== 'open' || this.sendKey === null) return false;
    const header = frame.subarray(0, frameHeaderBytes);
    const mac = frameMac(this.sendKey, this.sentFrames++, header, frame.subarray(frameHeaderBytes));
    // Corked: the frame and its MAC leave in one write rather than two packets.
    this.socket.cork();
    this.socket.write(frame);
    const more = this.socket.write(mac);
    this.socket.uncork();
    if (!more) this.writeBlocked = true;
    return more;
  }

  /** Closes without a log line (the transport decided: replaced, removed, shut down). */
  close(): void {
    this.socket.destroy();
  }

  /** Ends a connection whose peer broke a rule: logged with its address, then closed; nothing more is read. */
  refuse(reason: string, fields: object = {}): void {
    if (this.state === 'closed') return;
    this.refusedHere = true;
    if (this.failure === '') this.failure = reason;
    const peer = this.peerId === 0 ? {} : { peer: this.peerId };
    this.context.log.warn(
      { remote: this.remote, role: this.role, ...peer, ...fields, reason },
      'node-to-node connection refused',
    );
    this.socket.destroy();
  }

  private sendHandshake(value: unknown): void {
    this.socket.write(encodeFrame(value));
  }

  private onConnect(): void {
    if (this.state !== 'connecting') return;
    this.state = 'challenge';
    this.sendHandshake({
      t: 'hello',
      v: transportVersion,
      nodeId: this.context.nodeId,
      instance: this.context.instance,
      nonce: this.localNonce,
      oneshot: this.oneshot,
    });
  }

  private onData(chunk: Buffer): void {
    try {
      this.decoder.pushFrames(chunk, (header, body, trailer) => this.onFrame(header, body, trailer));
    } catch (error) {
      if (error instanceof FrameTooLargeError) {
        this.refuse('frame too large', { frameBytes: error.frameBytes, frameBytesMax: error.frameBytesMax });
      } else {
        this.refuse('undecodable frame', { error: (error as Error).message });
      }
    }
  }

  /** Throws what decodeBody throws (the caller refuses the connection). */
  private onFrame(header: Buffer, body: Buffer, trailer: Buffer): void {
    // A frame may have closed the connection (refusal, replacement): what follows it is not acted on.
    if (this.state === 'closed' || this.socket.destroyed) return;
    if (this.state !== 'open') return this.onHandshakeFrame(decodeBody(body));
    if (this.receiveKey === null) return this.refuse('data frame without keys');
    const expected = frameMac(this.receiveKey, this.receivedFrames, header, body);
    if (trailer.byteLength !== macBytes || !timingSafeEqual(expected, trailer)) {
      return this.refuse('data frame failed authentication', { frame: this.receivedFrames });
    }
    this.receivedFrames += 1;
    this.hooks.frame(this, decodeBody(body));
  }

  private onHandshakeFrame(value: unknown): void {
    switch (this.state) {
      case 'hello':
        return this.onHello(value);
      case 'challenge':
        return this.onChallenge(value);
      case 'answer':
        return this.onAnswer(value);
      case 'verdict':
        return this.onVerdict(value);
      default:
        return this.refuse('unexpected handshake frame');
    }
  }

  /** Acceptor: a dialer introduces itself; we answer with our nonce only, and prove once it has proven. */
  private onHello(value: unknown): void {
    const hello = parseHello(value);
    if (hello === null) return this.refuse('malformed hello or another transport version');
    this.peerId = hello.nodeId;
    if (hello.nodeId === this.context.nodeId) return this.refuse('peer presents our own node id');
    this.transcript = {
      dialerId: hello.nodeId,
      acceptorId: this.context.nodeId,
      dialerInstance: hello.instance,
      acceptorInstance: this.context.instance,
      dialerNonce: hello.nonce,
      acceptorNonce: this.localNonce,
      oneshot: hello.oneshot,
    };
    this.peerInstance = hello.instance;
    this.oneshotFlag = hello.oneshot;
    this.state = 'answer';
    this.sendHandshake({
      t: 'challenge',
      nodeId: this.context.nodeId,
      instance: this.context.instance,
      nonce: this.localNonce,
    });
  }

  /** Dialer: the acceptor named itself and its nonce; we prove first, and check its proof in the verdict. */
  private onChallenge(value: unknown): void {
    const challenge = parseChallenge(value);
    if (challenge === null) return this.refuse('malformed challenge');
    this.peerId = challenge.nodeId;
    if (challenge.nodeId === this.context.nodeId) return this.refuse('peer presents our own node id');
    this.transcript = {
      dialerId: this.context.nodeId,
      acceptorId: challenge.nodeId,
      dialerInstance: this.context.instance,
      acceptorInstance: challenge.instance,
      dialerNonce: this.localNonce,
      acceptorNonce: challenge.nonce,
      oneshot: this.oneshot,
    };
    if (this.expectedPeerId !== null && challenge.nodeId !== this.expectedPeerId) {
      return this.refuse('address answers with another node id', { expectedPeer: this.expectedPeerId });
    }
    this.peerInstance = challenge.instance;
    this.state = 'verdict';
    this.sendHandshake({ t: 'answer', proof: handshakeProof(this.context.key, 'dialer', this.transcript) });
  }

  /** Acceptor: the dialer's proof decides; then the tie-break decides whether this connection serves. */
  private onAnswer(value: unknown): void {
    const answer = parseAnswer(value);
    if (answer === null || this.transcript === null) return this.refuse('malformed answer');
    const expected = handshakeProof(this.context.key, 'dialer', this.transcript);
    if (!proofMatches(expected, answer.proof)) return this.refuse('bad proof (another cluster secret?)');
    const proof = handshakeProof(this.context.key, 'acceptor', this.transcript);
    if (!this.oneshot && !this.hooks.admit(this)) {
      this.sendHandshake({ t: 'refused', reason: 'duplicate', proof });
      this.failure = 'duplicate';
      this.state = 'closed';
      this.clearHandshakeTimer();
      // Destroyed once the verdict is flushed, not left half-open for the dialer to close: the transport
      // forgets this connection now, and its close() must not wait on a socket it no longer tracks.
      this.socket.end(() => this.socket.destroy());
      this.hooks.closed(this, 'duplicate');
      return;
    }
    this.sendHandshake({ t: 'welcome', proof });
    this.open();
  }

  /** Dialer: the acceptor proves it holds the secret, and keeps this connection or another one to us. */
  private onVerdict(value: unknown): void {
    const verdict = parseVerdict(value);
    if (verdict === null || this.transcript === null) return this.refuse('malformed verdict');
    const expected = handshakeProof(this.context.key, 'acceptor', this.transcript);
    if (!proofMatches(expected, verdict.proof)) return this.refuse('bad proof (another cluster secret?)');
    if (verdict.t === 'refused') {
      this.failure = 'duplicate';
      this.state = 'closed';
      this.clearHandshakeTimer();
      this.socket.destroy();
      this.hooks.closed(this, 'duplicate');
      return;
    }
    this.open();
  }

  private open(): void {
    if (this.transcript === null) return this.refuse('opened without a handshake');
    this.clearHandshakeTimer();
    const keys = connectionKeys(this.context.key, this.transcript);
    this.sendKey = this.role === 'dialer' ? keys.dialerToAcceptor : keys.acceptorToDialer;
    this.receiveKey = this.role === 'dialer' ? keys.acceptorToDialer : keys.dialerToAcceptor;
    this.state = 'open';
    this.decoder.setFrameBytesMax(this.context.frameBytesMax);
    this.decoder.setTrailerBytes(macBytes);
    this.hooks.opened(this);
  }

  private clearHandshakeTimer(): void {
    if (this.handshakeTimer !== null) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
  }

  private onClose(): void {
    this.clearHandshakeTimer();
    if (this.state === 'closed') return;
    const wasOpen = this.state === 'open';
    if (!wasOpen && this.failure === '') this.failure = 'closed during the handshake';
    // A refusal of ours was logged by refuse(); a close by the other end during the handshake was not.
    if (!wasOpen && !this.refusedHere && this.role === 'acceptor') {
      // The dialer gave up, or refused our proof or node id: logged here, since the dialer's side says nothing to us.
      this.context.log.info(
        { remote: this.remote, role: this.role, reason: this.failure },
        'node-to-node handshake not completed',
      );
    }
    this.state = 'closed';
    this.hooks.closed(this, wasOpen ? 'lost' : 'failed');
  }
}
