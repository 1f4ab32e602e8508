// The node-link thread's entry (a worker_threads Worker the front starts before the metadata thread on a node of a
// cluster): it owns the node-to-node transport, the listener on cluster.internal_port and every connection to the
// other nodes, so sockets, frame reassembly and handshakes run on neither the front's uWS loop nor the metadata
// thread's Raft loop (docs/architecture.md "The cluster today"). The metadata thread uses its channel through a
// PortChannel; the data plane's channel (issue 29) opens here. Ends on 'shutdown' from the front, answered 'closed'.
import assert from 'node:assert/strict';
import { parentPort, workerData } from 'node:worker_threads';
import type { FromNodeLink, NodeLinkThreadData, ToNodeLink } from '../protocol/thread_messages.js';
import type { DataMessage, DataRequest } from '../protocol/data_messages.js';
import { bridgeChannel } from '../transport/port_channel.js';
import { PeerTransport } from '../transport/peer_transport.js';
import { createLogger } from '../util/log.js';
import { DataServer } from './data_server.js';
import { FrontAsks } from './front_asks.js';
import { WorkerLinks } from './worker_links.js';

async function start(): Promise<void> {
  const front = parentPort;
  assert.ok(front !== null, 'node_link_thread.ts runs only as a worker thread');
  const data = workerData as NodeLinkThreadData;
  const logger = createLogger(data.logLevel).child({ component: 'node-link', node: data.nodeId });
  const post = (message: FromNodeLink): void => front.postMessage(message);
  let transport: PeerTransport;
  try {
    transport = await PeerTransport.listen({ nodeId: data.nodeId, clusterSecret: data.secret, listen: data.listen, log: logger, tls: data.tls });
  } catch (error) {
    post({ kind: 'listenFailed', message: error instanceof Error ? error.message : String(error) });
    front.close();
    return;
  }
  // The metadata thread serves its channel: its messages and requests cross the port to it.
  bridgeChannel(transport, 'metadata', data.metadataPort);
  // The data channel is served here, by the owning workers; the front only asks through its port.
  const workers = new WorkerLinks(data.workerPorts);
  const frontAsks = new FrontAsks(post);
  const server = new DataServer(workers, frontAsks);
  // Served to members only: the metadata thread names them over its channel (setMembers), as the metadata says.
  bridgeChannel(transport, 'data', data.dataPort, {
    onMessage: (from, message) => server.onMessage(from, message as DataMessage),
    onRequest: (from, body) => server.onRequest(from, body as DataRequest),
    membersOnly: true,
  });
  logger.info({ port: transport.port, tls: data.tls !== null }, 'node-link: node-to-node listener open');
  // Said once, at start: Raft and forwarded messages cross this port readable by anyone on the path.
  if (data.tls === null) logger.warn({ port: transport.port }, 'node-link: the node-to-node port is unencrypted (HMAC-authenticated only); give cluster.tls_cert_file, tls_key_file and tls_ca_file to encrypt it');
  post({ kind: 'listening', port: transport.port });
  front.on('message', (message: ToNodeLink) => {
    if (message.kind === 'memberReport') return frontAsks.onAnswer(message);
    frontAsks.close();
    workers.close();
    transport.close().then(
      () => post({ kind: 'closed' }),
      (error: unknown) => {
        logger.error({ err: error }, 'node-link: closing the transport failed');
        post({ kind: 'closed' });
      },
    ).finally(() => front.close());
  });
}

await start();
