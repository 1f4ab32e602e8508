// The route table of spec §4 as data: for each route its method, pattern (also the metrics' route label), handler,
// body rule (cap and oversize status), whether the content-type rule of spec §5.6 applies, and the grant it needs.
// server.ts matches requests against it (route_table.ts) and runs the checks these fields name, in the order of
// docs/decisions.md "Check order", before the handler. Front thread; the arrays are built once at module load.
import { limits } from '../../config.js';
import * as children from '../handlers/children.js';
import * as cluster from '../handlers/cluster.js';
import * as consoleFiles from '../handlers/console.js';
import * as consume from '../handlers/consume.js';
import * as health from '../handlers/health.js';
import * as later from '../handlers/later.js';
import * as moves from '../handlers/moves.js';
import * as openapi from '../handlers/openapi.js';
import * as produce from '../handlers/produce.js';
import * as topics from '../handlers/topics.js';
import * as users from '../handlers/users.js';
import type { BodyRule, Handler, Method, RouteEntry, RouteGrant } from '../route_types.js';

const body1MiB: BodyRule = { bytesMax: limits.request_body_bytes_max, oversizeStatus: 413 };
/** Spec §8: user and attach-child routes answer an oversized body with 400. */
const body1MiBAs400: BodyRule = { bytesMax: limits.request_body_bytes_max, oversizeStatus: 400 };
const bodyBatchAck: BodyRule = { bytesMax: limits.batch_ack_body_bytes_max, oversizeStatus: 413 };
const bodyRemotes: BodyRule = { bytesMax: limits.remotes_body_bytes_max, oversizeStatus: 413 };
const bodyBatchProduce: BodyRule = { bytesMax: limits.batch_produce_body_bytes_max, oversizeStatus: 413, usesBatchBudget: true };

type Row = [Method, string, Handler, RouteGrant, BodyRule?];

/** Health answers HEAD as GET without a body (RFC 9110 §9.3.2), for load balancers that check with HEAD; no other
 *  route does, since HEAD of a consume would lease messages (docs/decisions.md "HEAD"). */
const healthRows: Row[] = [
  ['GET', '/healthz', health.onHealthz, 'public'],
  ['HEAD', '/healthz', health.onHealthz, 'public'],
  ['GET', '/readyz', health.onReadyz, 'public'],
  ['HEAD', '/readyz', health.onReadyz, 'public'],
];

/** Rows in the order of spec §4; a row is [method, pattern, handler, grant, body rule]. */
const apiRows: Row[] = [
  ['POST', '/v1/topics', topics.onCreateTopic, 'topic.create', body1MiB],
  ['GET', '/v1/topics', topics.onListTopics, 'authenticated'],
  ['GET', '/v1/topics/{topic}', topics.onGetTopic, 'topic.read'],
  ['PATCH', '/v1/topics/{topic}', topics.onPatchTopic, 'topic.manage', body1MiB],
  ['DELETE', '/v1/topics/{topic}', topics.onDeleteTopic, 'topic.manage'],
  ['GET', '/v1/topics/{topic}/schema', topics.onGetSchema, 'topic.read'],
  ['POST', '/v1/topics/{topic}/produce', produce.onProduce, 'topic.produce', body1MiB],
  ['POST', '/v1/topics/{topic}/produce/batch', produce.onProduceBatch, 'topic.produce', bodyBatchProduce],
  ['GET', '/v1/topics/{topic}/consume', consume.onConsume, 'topic.consume'],
  ['POST', '/v1/topics/{topic}/ack', consume.onAck, 'topic.consume', bodyBatchAck],
  ['POST', '/v1/topics/{parent}/children', children.onAttach, 'topic.manage', body1MiBAs400],
  ['GET', '/v1/topics/{parent}/children', children.onListChildren, 'topic.read'],
  ['DELETE', '/v1/topics/{parent}/children/{child}', children.onDetach, 'topic.manage'],
  ['POST', '/v1/topics/{parent}/children/{child}/pause', later.onRemote, 'remote', body1MiB],
  ['POST', '/v1/topics/{parent}/children/{child}/resume', later.onRemote, 'remote', body1MiB],
  ['POST', '/v1/topics/{parent}/children/{child}/skip', later.onRemote, 'remote', body1MiB],
  ['POST', '/v1/users', users.onCreateUser, 'admin', body1MiBAs400],
  ['GET', '/v1/users', users.onListUsers, 'admin'],
  ['GET', '/v1/users/{username}', users.onGetUser, 'admin'],
  ['DELETE', '/v1/users/{username}', users.onDeleteUser, 'admin'],
  ['PUT', '/v1/users/{username}/grants', users.onPutGrants, 'admin', body1MiBAs400],
  ['PUT', '/v1/users/{username}/password', users.onPutPassword, 'password', body1MiBAs400],
  ['GET', '/v1/cluster/members', cluster.onListMembers, 'admin'],
  ['POST', '/v1/cluster/members/{id}/forget', cluster.onForget, 'admin', body1MiB],
  ['POST', '/v1/cluster/members/{id}/decommission', cluster.onDecommission, 'admin', body1MiB],
  ['POST', '/v1/cluster/members/{id}/decommission/cancel', cluster.onDecommissionCancel, 'admin', body1MiB],
  ['POST', '/v1/cluster/rebalance', cluster.onRebalance, 'admin', body1MiB],
  ['GET', '/v1/cluster/moves', moves.onListMoves, 'admin'],
  ['POST', '/v1/cluster/moves', moves.onStartMove, 'admin', body1MiB],
  ['POST', '/v1/cluster/moves/{topic}/{partition}/abort', moves.onAbortMove, 'admin', body1MiB],
  ['POST', '/v1/cluster/reencrypt-remotes', later.onRemote, 'remote', bodyRemotes],
  ['POST', '/v1/remotes', later.onRemote, 'remote', bodyRemotes],
  ['GET', '/v1/remotes', later.onRemote, 'remote'],
  ['GET', '/v1/remotes/{name}', later.onRemote, 'remote'],
  ['PATCH', '/v1/remotes/{name}', later.onRemote, 'remote', bodyRemotes],
  ['DELETE', '/v1/remotes/{name}', later.onRemote, 'remote'],
  ['POST', '/v1/remotes/{name}/test', later.onRemote, 'remote', bodyRemotes],
  ...healthRows,
  // The web console's static files: public like /healthz (they hold no secret; the console logs in over the API).
  ['GET', '/console', consoleFiles.onConsoleIndex, 'public'],
  ['GET', '/console/{file}', consoleFiles.onConsoleFile, 'public'],
  // Answers 404 when http.metrics_addr serves the metrics instead (health.onApiMetrics).
  ['GET', '/metrics', health.onApiMetrics, 'metrics'],
  ['GET', '/openapi.json', openapi.onOpenApi, 'public'],
];

/** The routes of http.metrics_addr, when set: health and metrics, no credentials. */
const metricsRows: Row[] = [
  ...healthRows,
  ['GET', '/metrics', health.onMetrics, 'public'],
];

function entry([method, pattern, handler, grant, body]: Row): RouteEntry {
  const contentTypeChecked = method === 'POST' || method === 'PUT' || method === 'PATCH';
  return body === undefined ? { method, pattern, handler, grant, contentTypeChecked } : { method, pattern, handler, grant, body, contentTypeChecked };
}

export const apiRoutes: readonly RouteEntry[] = apiRows.map(entry);
export const metricsRoutes: readonly RouteEntry[] = metricsRows.map(entry);
