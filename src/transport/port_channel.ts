// One channel of the node-to-node transport used from a thread other than the transport's own, over a MessagePort:
// bridgeChannel runs on the transport's thread; PortChannel runs on the other thread and is the same ChannelEndpoint
// a LocalChannel is, so a channel's user does not know which side of a port it is on. Timeouts, queues, reconnects
// and the handshake stay the transport's; the bridge adds one port message each way per frame. For the metadata
// thread and the front once the transport runs on the data plane's own thread; bench/forward_hop.ts measures it.
import type { MessagePort } from 'node:worker_threads';
import type { ChannelEndpoint, ChannelHandlers, ChannelName } from './channel.js';
import { TransportError, type PeerTransport } from './peer_transport.js';
import type { FromTransportThread, PeerAddress, ToTransportThread } from '../protocol/transport_port_messages.js';

function failureOf(id: number, error: unknown): FromTransportThread {
  if (error instanceof TransportError) return { t: 'failed', id, code: error.code, message: error.message };
  if (error instanceof RangeError) return { t: 'failed', id, code: 'range', message: error.message };
  return { t: 'failed', id, code: 'remote_error', message: error instanceof Error ? error.message : String(error) };
}

/**
 * Opens channel name on transport and lets a PortChannel on another thread use it over port. Without handlers the
 * channel's incoming messages and requests go over the port to the PortChannel's handlers (the user's thread serves
 * the channel); with handlers they are served here, and the port side only sends and asks. Returns the channel for
 * this thread's own use. The bridge ends when the PortChannel closes or the port does; requests the port side had
 * not answered then fail on the peer's side, and a channel served over the port closes with it (one served here
 * stays open for this thread).
 */
export function bridgeChannel(
  transport: PeerTransport,
  name: ChannelName,
  port: MessagePort,
  handlers?: ChannelHandlers,
): ChannelEndpoint {
  const inbound = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  let nextRef = 1;
  const post = (message: FromTransportThread): void => port.postMessage(message);
  const channel = transport.openChannel(name, handlers ?? {
    onMessage: (from, message) => post({ t: 'message', from, message }),
    onRequest: (from, body) =>
      new Promise((resolve, reject) => {
        const ref = nextRef++;
        inbound.set(ref, { resolve, reject });
        post({ t: 'request', ref, from, body });
      }),
  });
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    for (const waiter of inbound.values()) waiter.reject(new Error(`channel ${name} closed`));
    inbound.clear();
    port.close();
    if (handlers === undefined) void channel.close();
  };
  port.on('message', (message: ToTransportThread) => {
    if (message.t === 'close') return end();
    if (message.t === 'reply') {
      const waiter = inbound.get(message.ref);
      inbound.delete(message.ref);
      if (message.ok) waiter?.resolve(message.value);
      else waiter?.reject(new Error(String(message.value)));
      return;
    }
    bridgeCall(channel, message, post);
  });
  port.on('close', end);
  return channel;
}

/** The calls that go straight to the channel. */
function bridgeCall(
  channel: ChannelEndpoint,
  message: Exclude<ToTransportThread, { t: 'close' | 'reply' }>,
  post: (message: FromTransportThread) => void,
): void {
  switch (message.t) {
    case 'send':
      return channel.send(message.to, message.message);
    case 'request': {
      const { id, to } = message;
      channel.request(to, message.body, message.timeoutMs).then(
        (reply) => post({ t: 'settled', id, from: to, reply }),
        (error: unknown) => post(failureOf(id, error)),
      );
      return;
    }
    case 'requestAt': {
      const { id } = message;
      channel.requestAt(message.address, message.body, message.timeoutMs).then(
        ({ from, reply }) => post({ t: 'settled', id, from, reply }),
        (error: unknown) => post(failureOf(id, error)),
      );
      return;
    }
    case 'setPeer':
      return channel.setPeer(message.id, message.address);
    case 'removePeer':
      return channel.removePeer(message.id);
    case 'setMembers':
      return channel.setMembers(message.ids);
  }
}

interface Waiting {
  resolve: (answer: { from: number; reply: unknown }) => void;
  reject: (error: Error) => void;
}

/** The user's side of a bridged channel. Its requests time out on the transport's thread, which always answers. */
export class PortChannel implements ChannelEndpoint {
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;
  private closed = false;

  constructor(
    readonly name: ChannelName,
    private readonly port: MessagePort,
    private readonly handlers: ChannelHandlers,
  ) {
    port.on('message', (message: FromTransportThread) => this.onMessage(message));
    port.on('close', () => this.failAll());
  }

  send(to: number, message: unknown): void {
    if (!this.closed) this.post({ t: 'send', to, message });
  }

  async request(to: number, body: unknown, timeoutMs: number): Promise<unknown> {
    return (await this.call((id) => ({ t: 'request', id, to, body, timeoutMs }))).reply;
  }

  requestAt(address: PeerAddress, body: unknown, timeoutMs: number): Promise<{ from: number; reply: unknown }> {
    return this.call((id) => ({ t: 'requestAt', id, address, body, timeoutMs }));
  }

  setPeer(id: number, address: PeerAddress): void {
    if (!this.closed) this.post({ t: 'setPeer', id, address });
  }

  removePeer(id: number): void {
    if (!this.closed) this.post({ t: 'removePeer', id });
  }

  setMembers(ids: readonly number[]): void {
    if (!this.closed) this.post({ t: 'setMembers', ids: [...ids] });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.post({ t: 'close' });
    this.failAll();
    this.port.close();
  }

  private post(message: ToTransportThread): void {
    this.port.postMessage(message);
  }

  private call(make: (id: number) => ToTransportThread): Promise<{ from: number; reply: unknown }> {
    if (this.closed) return Promise.reject(new TransportError('closed', `channel ${this.name} closed`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.post(make(id));
    });
  }

  private onMessage(message: FromTransportThread): void {
    switch (message.t) {
      case 'message':
        return this.handlers.onMessage(message.from, message.message);
      case 'request':
        return this.onRequest(message.ref, message.from, message.body);
      case 'settled':
      case 'failed': {
        const waiting = this.waiting.get(message.id);
        this.waiting.delete(message.id);
        if (waiting === undefined) return;
        if (message.t === 'settled') return waiting.resolve({ from: message.from, reply: message.reply });
        const { code } = message;
        waiting.reject(code === 'range' ? new RangeError(message.message) : new TransportError(code, message.message));
        return;
      }
    }
  }

  private onRequest(ref: number, from: number, body: unknown): void {
    const handler = this.handlers.onRequest;
    let reply: Promise<unknown>;
    try {
      const refused = (): Promise<unknown> => Promise.reject(new Error('this node takes no requests on this channel'));
      reply = handler === undefined ? refused() : handler(from, body);
    } catch (error) {
      reply = Promise.reject(error);
    }
    const answer = (ok: boolean, value: unknown): void => {
      if (!this.closed) this.post({ t: 'reply', ref, ok, value });
    };
    reply.then(
      (value) => answer(true, value),
      (error: unknown) => answer(false, error instanceof Error ? error.message : String(error)),
    );
  }

  private failAll(): void {
    this.closed = true;
    const error = new TransportError('closed', `channel ${this.name} closed`);
    for (const waiting of this.waiting.values()) waiting.reject(error);
    this.waiting.clear();
  }
}
