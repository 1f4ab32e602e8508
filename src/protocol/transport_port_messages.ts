// The messages a transport channel's bridge and its PortChannel exchange over a MessagePort (src/transport/
// port_channel.ts): the one channel of the node-to-node transport used from a thread other than the transport's own.
// Plain data only; payloads are structured-cloned. Shared by the transport's thread and its user's thread.

/** "host:port" of a peer's internal listener, split. */
export interface PeerAddress {
  host: string;
  port: number;
}

/** Why a transport request failed (src/transport/peer_transport.ts TransportError says each). */
export type TransportErrorCode = 'unreachable' | 'timeout' | 'remote_error' | 'closed';

/** The user's thread -> the transport's thread. Only plain data crosses: payloads are structured-cloned. */
export type ToTransportThread =
  /** A one-way message for a peer; lost like any other one-way message when the transport cannot send it. */
  | { t: 'send'; to: number; message: unknown }
  /** A request to a peer; always answered with 'settled' or 'failed' carrying the same id. */
  | { t: 'request'; id: number; to: number; body: unknown; timeoutMs: number }
  | { t: 'requestAt'; id: number; address: PeerAddress; body: unknown; timeoutMs: number }
  /** The answer to an incoming 'request' of the same ref; never sent means the requester's timeout answers it. */
  | { t: 'reply'; ref: number; ok: boolean; value: unknown }
  | { t: 'setPeer'; id: number; address: PeerAddress }
  | { t: 'removePeer'; id: number }
  | { t: 'setMembers'; ids: number[] }
  /** The user is done: the channel closes on the transport (and the transport with its last channel). */
  | { t: 'close' };

/** The transport's thread -> the user's thread. */
export type FromTransportThread =
  | { t: 'message'; from: number; message: unknown }
  /** A peer's request on this channel; answered with 'reply' of the same ref. */
  | { t: 'request'; ref: number; from: number; body: unknown }
  | { t: 'settled'; id: number; from: number; reply: unknown }
  /** 'range': the request was refused before sending (bad timeout, body too large), as a RangeError. */
  | { t: 'failed'; id: number; code: TransportErrorCode | 'range'; message: string };
