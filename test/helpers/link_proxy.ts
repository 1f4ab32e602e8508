// The link fault harness of the cluster tests and the cluster crash loop: a TCP proxy on loopback in front of each
// node's internal port (TestCluster's linkProxy option points the bootstrap list and the advertised internal
// addresses at it), which on command delays, blackholes (drop) or cuts every link of a chosen node, and heals it.
// Runs in the test process; imports nothing from src/. A connection is attributed to both of its nodes: the target
// (the front it came in through) and the dialer, read from the first frame the dialer sends (transportHelloNodeId).
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Unpackr } from 'msgpackr';

/** What a node's links suffer. delay: every byte is held ms before it is forwarded, both ways. stall: bytes are held
 *  (the senders paused once the bounded buffers fill) and delivered at the heal, as TCP does across a partition that
 *  ends before the connection times out. drop: bytes are read and thrown away, nothing is forwarded and nothing is
 *  closed (a blackhole). cut: every connection is destroyed and every new one is closed at once. */
export type LinkFault = { kind: 'none' } | { kind: 'delay'; ms: number } | { kind: 'stall' } | { kind: 'drop' } | { kind: 'cut' };

export interface LinkProxyOptions {
  /** The dialing node's id from the first bytes it sent: a number, undefined when they name no node (the
   *  connection is then attributed to its target only), null while more bytes are needed. */
  identify?: (head: Buffer) => number | undefined | null;
  /** Bytes one direction of a connection holds (delayed or waiting for the other side) before its source socket is
   *  paused. */
  bufferBytes?: number;
}

/** More than any hello: past this many bytes without an answer from identify, the dialer stays unknown. */
const identifyBytesMax = 64 * 1024;
const defaultBufferBytes = 256 * 1024;

/**
 * Reads the node id from a transport hello (src/transport/handshake.ts: the dialer's first frame, a u32 big-endian
 * body length and a msgpack map {t: 'hello', nodeId, ...}). Only the two fields are read, so a change elsewhere in
 * the hello does not break the harness.
 */
export function transportHelloNodeId(head: Buffer): number | undefined | null {
  if (head.length < 4) return null;
  const length = head.readUInt32BE(0);
  if (length > identifyBytesMax) return undefined;
  if (head.length < 4 + length) return null;
  try {
    const frame = helloUnpackr.unpack(head.subarray(4, 4 + length)) as { t?: unknown; nodeId?: unknown };
    return frame.t === 'hello' && typeof frame.nodeId === 'number' ? frame.nodeId : undefined;
  } catch {
    return undefined;
  }
}
const helloUnpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** One direction of a proxied connection: a FIFO of chunks, each due at its arrival time plus the delay then set. */
class Pipe {
  private readonly queue: { dueMs: number; chunk: Buffer }[] = [];
  private queuedBytes = 0;
  private timer: NodeJS.Timeout | undefined;
  private pausedByUs = false;
  delayMs = 0;
  dropping = false;
  /** Holds every byte (stall): nothing is written until it is cleared. */
  stalled = false;
  /** Bytes read and thrown away while dropping. */
  discarded = 0;

  constructor(private readonly from: () => Socket | undefined, private readonly to: () => Socket | undefined, private readonly bufferBytes: number) {}

  get bytes(): number {
    return this.queuedBytes;
  }

  push(chunk: Buffer): void {
    if (this.dropping) {
      this.discarded += chunk.length;
      return;
    }
    this.queue.push({ dueMs: Date.now() + this.delayMs, chunk });
    this.queuedBytes += chunk.length;
    this.pump();
  }

  /** Forwards every due chunk the destination takes without buffering more; pauses or resumes the source. */
  pump(): void {
    const dest = this.to();
    clearTimeout(this.timer);
    this.timer = undefined;
    if (dest !== undefined && !dest.connecting && !dest.destroyed && !this.stalled) {
      while (this.queue.length > 0 && !dest.writableNeedDrain) {
        const head = this.queue[0]!;
        const waitMs = head.dueMs - Date.now();
        if (waitMs > 0) {
          this.timer = setTimeout(() => this.pump(), waitMs);
          break;
        }
        this.queue.shift();
        this.queuedBytes -= head.chunk.length;
        dest.write(head.chunk);
      }
    }
    this.flowControl(dest);
  }

  private flowControl(dest: Socket | undefined): void {
    const full = this.queuedBytes >= this.bufferBytes || dest?.writableNeedDrain === true;
    if (full && !this.pausedByUs) {
      this.pausedByUs = true;
      this.from()?.pause();
    } else if (!full && this.pausedByUs) {
      this.pausedByUs = false;
      this.from()?.resume();
    }
  }

  /** Starts throwing bytes away: what was queued is lost too. */
  drop(): void {
    this.dropping = true;
    for (const { chunk } of this.queue) this.discarded += chunk.length;
    this.queue.length = 0;
    this.queuedBytes = 0;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flowControl(undefined);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.queue.length = 0;
    this.queuedBytes = 0;
  }
}

/** One accepted connection and its upstream socket (opened once something is to be forwarded). */
class ProxiedConnection {
  source: number | undefined;
  identified: boolean;
  private head: Buffer[] = [];
  private headBytes = 0;
  upstream: Socket | undefined;
  readonly up: Pipe;
  readonly down: Pipe;
  /** Bytes were thrown away: the stream cannot carry on, so a heal closes it (the nodes redial). */
  tainted = false;
  closed = false;

  constructor(readonly client: Socket, readonly target: number, private readonly upstreamPort: number,
    private readonly proxy: LinkProxy, bufferBytes: number) {
    this.identified = proxy.identify === undefined;
    this.up = new Pipe(() => client, () => this.upstream, bufferBytes);
    this.down = new Pipe(() => this.upstream, () => client, bufferBytes);
    client.on('data', (chunk: Buffer) => this.fromClient(chunk));
    client.on('drain', () => this.down.pump());
    client.on('error', () => this.close());
    client.on('close', () => this.close());
  }

  private fromClient(chunk: Buffer): void {
    if (this.identified) return this.up.push(chunk);
    this.head.push(chunk);
    this.headBytes += chunk.length;
    const whole = Buffer.concat(this.head);
    const id = this.proxy.identify!(whole);
    if (id === null && this.headBytes < identifyBytesMax) return;
    this.identified = true;
    this.source = id ?? undefined;
    this.head = [];
    this.proxy.apply(this);
    if (!this.closed) this.up.push(whole);
  }

  /** Brings the connection in line with the faults of its two nodes. */
  applyFault(fault: LinkFault): void {
    if (this.closed) return;
    if (fault.kind === 'cut') return this.close();
    if (fault.kind === 'drop') {
      this.tainted = true;
      this.up.drop();
      this.down.drop();
      return;
    }
    if (this.tainted) return this.close();
    const delayMs = fault.kind === 'delay' ? fault.ms : 0;
    for (const pipe of [this.up, this.down]) {
      pipe.delayMs = delayMs;
      pipe.stalled = fault.kind === 'stall';
    }
    if (this.identified) this.openUpstream();
    this.up.pump();
    this.down.pump();
  }

  private openUpstream(): void {
    if (this.upstream !== undefined) return;
    const upstream = connect({ host: '127.0.0.1', port: this.upstreamPort, noDelay: true });
    this.upstream = upstream;
    upstream.on('connect', () => this.up.pump());
    upstream.on('data', (chunk: Buffer) => this.down.push(chunk));
    upstream.on('drain', () => this.up.pump());
    upstream.on('error', () => this.upstreamGone());
    upstream.on('close', () => this.upstreamGone());
  }

  /** The node went away: the dialer sees the close, unless its bytes are being dropped (a blackhole says nothing). */
  private upstreamGone(): void {
    if (!this.up.dropping) this.close();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.up.stop();
    this.down.stop();
    this.client.destroy();
    this.upstream?.destroy();
    this.proxy.forget(this);
  }
}

/**
 * Fronts, one per node id, each a listener on a loopback port (picked by the kernel) forwarding to that node's
 * internal port. Faults are set per node and hit every connection either end of which is that node. Lifecycle:
 * construct, front() per node, then delay/drop/cut/heal at will, close() at the end.
 */
export class LinkProxy {
  readonly identify: LinkProxyOptions['identify'];
  readonly bufferBytes: number;
  private readonly servers = new Map<number, { server: Server; port: number }>();
  private readonly faults = new Map<number, LinkFault>();
  private readonly open = new Set<ProxiedConnection>();
  /** Connections accepted and closed at once because their node was cut. */
  refused = 0;
  accepted = 0;

  constructor(options: LinkProxyOptions = {}) {
    this.identify = options.identify;
    this.bufferBytes = options.bufferBytes ?? defaultBufferBytes;
  }

  /** Listens for node `id`, forwarding to upstreamPort on 127.0.0.1; resolves to the port to give other nodes. */
  async front(id: number, upstreamPort: number): Promise<number> {
    if (this.servers.has(id)) throw new Error(`link proxy: node ${id} has a front already`);
    const server = createServer({ noDelay: true, pauseOnConnect: false }, (client) => this.accept(client, id, upstreamPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('link proxy: no port');
    this.servers.set(id, { server, port: address.port });
    return address.port;
  }

  port(id: number): number {
    const front = this.servers.get(id);
    if (front === undefined) throw new Error(`link proxy: no front for node ${id}`);
    return front.port;
  }

  delay(id: number, ms: number): void {
    if (!(ms >= 0)) throw new RangeError('link proxy: delay must be >= 0 ms');
    this.set(id, { kind: 'delay', ms });
  }

  stall(id: number): void {
    this.set(id, { kind: 'stall' });
  }

  drop(id: number): void {
    this.set(id, { kind: 'drop' });
  }

  cut(id: number): void {
    this.set(id, { kind: 'cut' });
  }

  /** Ends node id's fault. Connections that lost bytes while dropped are closed, so the nodes redial. */
  heal(id: number): void {
    this.set(id, { kind: 'none' });
  }

  fault(id: number): LinkFault {
    return this.faults.get(id) ?? { kind: 'none' };
  }

  /** Connections open now (between proxy and dialers). */
  connections(): number {
    return this.open.size;
  }

  /** Bytes the proxy holds now: in its pipes (delayed, or waiting for a full socket) and in its sockets' write
   *  buffers. */
  bufferedBytes(): number {
    let sum = 0;
    for (const conn of this.open) sum += conn.up.bytes + conn.down.bytes + conn.client.writableLength + (conn.upstream?.writableLength ?? 0);
    return sum;
  }

  async close(): Promise<void> {
    for (const conn of [...this.open]) conn.close();
    await Promise.all([...this.servers.values()].map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))));
    this.servers.clear();
  }

  private set(id: number, fault: LinkFault): void {
    this.faults.set(id, fault);
    for (const conn of [...this.open]) if (conn.target === id || conn.source === id) this.apply(conn);
  }

  /** The worse fault of the connection's two nodes: cut over drop over stall over delay (delays add up). */
  private effective(conn: ProxiedConnection): LinkFault {
    const faults = [this.fault(conn.target), conn.source === undefined ? { kind: 'none' as const } : this.fault(conn.source)];
    if (faults.some((f) => f.kind === 'cut')) return { kind: 'cut' };
    if (faults.some((f) => f.kind === 'drop')) return { kind: 'drop' };
    if (faults.some((f) => f.kind === 'stall')) return { kind: 'stall' };
    const ms = faults.reduce((sum, f) => sum + (f.kind === 'delay' ? f.ms : 0), 0);
    return ms > 0 ? { kind: 'delay', ms } : { kind: 'none' };
  }

  /** @internal ProxiedConnection calls it once it knows its dialer. */
  apply(conn: ProxiedConnection): void {
    conn.applyFault(this.effective(conn));
  }

  /** @internal */
  forget(conn: ProxiedConnection): void {
    this.open.delete(conn);
  }

  private accept(client: Socket, target: number, upstreamPort: number): void {
    client.setNoDelay(true);
    if (this.fault(target).kind === 'cut') {
      this.refused++;
      client.on('error', () => {});
      client.destroy();
      return;
    }
    this.accepted++;
    const conn = new ProxiedConnection(client, target, upstreamPort, this, this.bufferBytes);
    this.open.add(conn);
    // Until the dialer is known only the target's fault is applied; it is applied again once identify answers.
    this.apply(conn);
  }
}
