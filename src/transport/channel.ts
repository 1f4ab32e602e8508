// The channels of the node-to-node transport: their wire ids, the handlers a channel registers, and the one shape
// its user holds (ChannelEndpoint), whether the user runs on the transport's thread (LocalChannel, here) or on
// another thread (PortChannel, port_channel.ts). Used on the thread that owns the PeerTransport (the metadata
// thread today) and, through port_channel.ts, on any thread that holds a bridged port.
import type { PeerAddress } from './connection.js';

/** The channels a data frame may name, by their wire id. An id never changes meaning; a new channel takes a new id. */
export const channelIds = {
  /** Raft messages, liveness, forwarded metadata writes, joins (src/raft/shell). Its frames carry no channel id on
   *  the wire (peer_transport.ts frameKind), as before channels existed. */
  metadata: 1,
  /** Produce, consume and ack forwarded to a partition's owner (issue 29). */
  data: 2,
} as const;

export type ChannelName = keyof typeof channelIds;

/** The channel a wire id names, or null for an id no version of this node knows. */
export function channelNameOf(id: unknown): ChannelName | null {
  for (const [name, known] of Object.entries(channelIds)) if (known === id) return name as ChannelName;
  return null;
}

export interface ChannelHandlers {
  /** One-way messages of this channel, in order per connection. A throw is a programmer error (fail-stop). */
  onMessage: (from: number, message: unknown) => void;
  /** Requests of this channel; a throw or rejection reaches the caller as a TransportError 'remote_error' carrying
   *  its message. Without it every request on this channel is answered with a remote_error. */
  onRequest?: (from: number, body: unknown) => Promise<unknown>;
  /** Serve only the members setMembers named: another peer's requests are answered with a remote_error and its
   *  messages dropped, with a budgeted log line. Until setMembers is first called nobody is a member. */
  membersOnly?: boolean;
}

/**
 * What a channel's user holds. send, request and requestAt carry this channel's frames only; setPeer and removePeer
 * act on the transport's one peer table, which every channel shares (a node has one address whatever it carries).
 * close() ends this channel: its pending requests fail with 'closed', and a transport with no open channel left
 * stops listening.
 */
export interface ChannelEndpoint {
  readonly name: ChannelName;
  /** Never throws: a message that cannot be sent is logged and dropped (the channel's protocol tolerates loss). */
  send(to: number, message: unknown): void;
  request(to: number, body: unknown, timeoutMs: number): Promise<unknown>;
  requestAt(address: PeerAddress, body: unknown, timeoutMs: number): Promise<{ from: number; reply: unknown }>;
  setPeer(id: number, address: PeerAddress): void;
  removePeer(id: number): void;
  /** The cluster's members as the metadata says, for every channel opened membersOnly; replaces the last list. */
  setMembers(ids: readonly number[]): void;
  close(): Promise<void>;
}

/** What LocalChannel needs of the PeerTransport it was opened on. */
export interface ChannelHost {
  sendOn(channel: ChannelName, to: number, message: unknown): void;
  requestOn(channel: ChannelName, to: number, body: unknown, timeoutMs: number): Promise<unknown>;
  requestAtOn(
    channel: ChannelName,
    address: PeerAddress,
    body: unknown,
    timeoutMs: number,
  ): Promise<{ from: number; reply: unknown }>;
  setPeer(id: number, address: PeerAddress): void;
  removePeer(id: number): void;
  setMembers(ids: readonly number[]): void;
  closeChannel(channel: ChannelName): Promise<void>;
}

/** A channel used on the thread that owns its transport: every call goes straight to the transport. */
export class LocalChannel implements ChannelEndpoint {
  constructor(
    readonly name: ChannelName,
    private readonly host: ChannelHost,
  ) {}

  send(to: number, message: unknown): void {
    this.host.sendOn(this.name, to, message);
  }

  request(to: number, body: unknown, timeoutMs: number): Promise<unknown> {
    return this.host.requestOn(this.name, to, body, timeoutMs);
  }

  requestAt(address: PeerAddress, body: unknown, timeoutMs: number): Promise<{ from: number; reply: unknown }> {
    return this.host.requestAtOn(this.name, address, body, timeoutMs);
  }

  setPeer(id: number, address: PeerAddress): void {
    this.host.setPeer(id, address);
  }

  removePeer(id: number): void {
    this.host.removePeer(id);
  }

  setMembers(ids: readonly number[]): void {
    this.host.setMembers(ids);
  }

  close(): Promise<void> {
    return this.host.closeChannel(this.name);
  }
}
