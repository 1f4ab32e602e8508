// The front's handle on the node-link thread (src/node_link/node_link_thread.ts): started before the metadata thread
// on a node of a cluster, it binds the internal listener and bridges the metadata channel, whose far end the front
// hands to the metadata thread. Front thread; main.ts starts and stops it.
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { formatHostPort, parseListenAddress } from '../config.js';
import type { MemberReportView } from '../protocol/data_messages.js';
import type { ClusterThreadConfig, FromNodeLink, NodeLinkThreadData, ToNodeLink } from '../protocol/thread_messages.js';
import { PortChannel } from '../transport/port_channel.js';

/** The data channel is served on the node-link thread: nothing arrives on the front's side of it. */
const noIncoming = { onMessage: (): void => {} };

/** The internal listener could not bind; the message names the address. */
export class NodeLinkListenFailed extends Error {}

export interface NodeLink {
  thread: Worker;
  /** The metadata thread's end of the bridged metadata channel. */
  metadataPort: MessagePort;
  /** Each partition worker's end of its link to the node-link thread, in worker order. */
  workerLinkPorts: MessagePort[];
  /** The front's use of the data channel: it asks other nodes' owners; this node's thread serves their asks. */
  dataChannel: PortChannel;
}

/** Whether the node talks to other nodes: a cluster founded or joined with others, or given a secret. */
export function isMultiNode(cluster: ClusterThreadConfig): boolean {
  return cluster.bootstrap.length > 1 || cluster.join !== null || cluster.secret.length > 0;
}

/** Starts the thread and waits for its listener; fills cluster.advertiseInternal's port when it was 0 (an explicit
 *  --advertise, for NAT or port mapping, stands as given). */
export async function startNodeLink(cluster: ClusterThreadConfig, logLevel: string, workerCount: number,
  tls: NodeLinkThreadData['tls'] = null): Promise<NodeLink> {
  const { port1, port2 } = new MessageChannel();
  const workerLinks = Array.from({ length: workerCount }, () => new MessageChannel());
  const workerPorts = workerLinks.map((channel) => channel.port1);
  const data = new MessageChannel();
  const workerData: NodeLinkThreadData = {
    nodeId: cluster.nodeId, listen: cluster.listen, secret: cluster.secret, tls, logLevel, metadataPort: port1, workerPorts, dataPort: data.port1,
  };
  const thread = new Worker(new URL('./node_link_thread.js', import.meta.url), { workerData, transferList: [port1, data.port1, ...workerPorts] });
  const started = await new Promise<FromNodeLink>((resolve, reject) => {
    thread.once('message', resolve);
    thread.once('error', reject);
  });
  if (started.kind === 'listenFailed') throw new NodeLinkListenFailed(started.message);
  if (started.kind !== 'listening') throw new Error(`node-link thread: unexpected ${started.kind} at start`);
  const advertised = parseListenAddress(cluster.advertiseInternal);
  if (advertised !== null && advertised.port === 0) cluster.advertiseInternal = formatHostPort(advertised.host, started.port);
  return { thread, metadataPort: port2, workerLinkPorts: workerLinks.map((channel) => channel.port2), dataChannel: new PortChannel('data', data.port2, noIncoming) };
}

/** Answers other nodes' asks for this node's member report with source's (the front's) report of the moment. Before
 *  this is called the asks go unanswered, and the asking node reports this member with status_error. */
export function answerMemberReports(link: NodeLink, source: () => MemberReportView): void {
  link.thread.on('message', (message: FromNodeLink) => {
    if (message.kind !== 'memberReportAsk') return;
    link.thread.postMessage({ kind: 'memberReport', id: message.id, report: source() } satisfies ToNodeLink);
  });
}

export function closeNodeLink(link: NodeLink): Promise<void> {
  return new Promise((resolveClosed) => {
    link.thread.on('message', (message: FromNodeLink) => {
      if (message.kind === 'closed') resolveClosed();
    });
    link.thread.once('exit', () => resolveClosed());
    link.thread.postMessage({ kind: 'shutdown' } satisfies ToNodeLink);
  });
}
