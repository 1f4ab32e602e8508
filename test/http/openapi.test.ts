// Goal: docs/openapi.yaml (issue 32 point 1) lints clean with @redocly/cli, names exactly the node's route table, lists
// the cross-origin 403 on every route that is not public (issue 39 point 3), is served as JSON at GET /openapi.json
// without credentials, and tells the truth: a valid request for each operation, sent to a real node, gets a status
// the document lists for it and a JSON body its schema accepts.
// Method: lint runs the local redocly binary with redocly.yaml; the route table is imported from the build; the
// black-box part resolves the document's response $refs by hand and compiles the body schemas with ajv (2020-12, the
// dialect of OpenAPI 3.1), then checks every operation of the document was exercised.
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import Ajv2020Module from 'ajv/dist/2020.js';
import { apiRoutes } from '../../src/front/server/routes.js';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { pollUntil } from '../helpers/http.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const methods = ['get', 'head', 'post', 'put', 'patch', 'delete'] as const;

type Json = Record<string, any>;
const doc: Json = parse(await readFile(`${root}/docs/openapi.yaml`, 'utf8'));

function operationKeys(): string[] {
  const keys: string[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const method of methods) if (item[method]) keys.push(`${method.toUpperCase()} ${path}`);
  }
  return keys.sort();
}

t.test('redocly lint passes with redocly.yaml', async (t) => {
  const run = promisify(execFile);
  const { stdout, stderr } = await run(`${root}/node_modules/.bin/redocly`,
    ['lint', 'docs/openapi.yaml', '--config', 'redocly.yaml', '--format', 'stylish'], { cwd: root, timeout: 90_000 });
  t.match(stdout + stderr, /valid/, 'redocly says the document is valid');
  t.notMatch(stdout + stderr, /^\s*\d+:\d+\s+(error|warning)\b/m, 'no problem listed, not even a warning');
});

t.test("the document's paths and methods equal the route table", async (t) => {
  // The web console's static files are pages for a browser, not API operations.
  const table = apiRoutes.filter((r) => !r.pattern.startsWith('/console')).map((r) => `${r.method} ${r.pattern}`).sort();
  t.same(operationKeys(), table);
  for (const key of operationKeys()) {
    const [method, path] = key.split(' ') as [string, string];
    const op = doc.paths[path][method.toLowerCase()];
    const route = apiRoutes.find((r) => r.method === method && r.pattern === path)!;
    if (route.grant === 'public') t.same(op.security, [], `${key} needs no credentials`);
    else t.notOk('security' in op, `${key} takes the document's Basic security`);
    if (route.grant === 'remote') t.ok(op['x-svc-not-implemented'] && op.responses['501'], `${key} is marked 501`);
  }
  t.same(doc.components.securitySchemes.basic, { ...doc.components.securitySchemes.basic, type: 'http', scheme: 'basic' });
  t.same(doc.components.schemas.Error.required, ['error']);
  t.ok(doc.components.responses.BadGateway.content['text/plain'], '502 is plain text');
});

t.test('every route that is not public lists the cross-origin 403; the public ones list no 403', async (t) => {
  // docs/decisions.md "Cross-origin requests": server.ts refuses a browser's cross-origin request on every route whose
  // grant is not public, before credentials; a public route never answers 403.
  for (const key of operationKeys()) {
    const [method, path] = key.split(' ') as [string, string];
    const route = apiRoutes.find((r) => r.method === method && r.pattern === path)!;
    const forbidden = documented(method.toLowerCase(), path, 403);
    if (route.grant === 'public') t.equal(forbidden, undefined, `${key} (public) lists no 403`);
    else t.match(forbidden?.response.description ?? '', /another origin/, `${key} lists a 403 that names the cross-origin refusal`);
  }
});

let node: StartedNode;
const Ajv2020 = Ajv2020Module.default;
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(doc, 'doc');
const exercised = new Set<string>();

/** The response object the document gives for a status, its $ref followed, with the JSON pointer of its place. */
function documented(method: string, path: string, status: number): { response: Json; pointer: string } | undefined {
  const escape = (s: string): string => s.replaceAll('~', '~0').replaceAll('/', '~1');
  const response = doc.paths[path][method].responses[String(status)];
  if (!response) return undefined;
  if (typeof response.$ref === 'string') {
    const name = response.$ref.split('/').pop()!;
    return { response: doc.components.responses[name], pointer: `#/components/responses/${name}` };
  }
  return { response, pointer: `#/paths/${escape(path)}/${method}/responses/${status}` };
}

interface Sent { status: number; body: any; text: string }

/** Sends one request for the operation (method, path template) and checks its answer against the document. */
async function call(tt: Test, method: string, path: string, options: { params?: Record<string, string>; query?: string;
  body?: unknown; auth?: boolean; headers?: Record<string, string> } = {}): Promise<Sent> {
  const url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.params?.[name] ?? ''));
  // X-Svc-Client stands in for a content type on POSTs without a body (spec §5.6).
  const headers: Record<string, string> = { 'x-svc-client': 'openapi-test', ...options.headers };
  if (options.auth !== false) headers.authorization = node.auth;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(node.url + url + (options.query ? `?${options.query}` : ''), {
    method: method.toUpperCase(), headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  const text = await res.text();
  const key = `${method.toUpperCase()} ${path}`;
  exercised.add(key);
  const found = documented(method, path, res.status);
  tt.ok(found, `${key} answered ${res.status}, which the document lists`);
  const type = res.headers.get('content-type') ?? '';
  let body: unknown;
  if (found) {
    const content = found.response.content as Json | undefined;
    if (!content) tt.equal(text, '', `${key} ${res.status}: no body documented, none sent`);
    else if (type.startsWith('application/json')) {
      tt.ok(content['application/json'], `${key} ${res.status}: JSON documented`);
      body = JSON.parse(text);
      const validate = ajv.compile({ $ref: `doc${found.pointer}/content/application~1json/schema` });
      tt.ok(validate(body), `${key} ${res.status}: body matches the schema ${JSON.stringify(validate.errors ?? [])}`);
    } else tt.ok(content[type.split(';')[0]!], `${key} ${res.status}: ${type} documented`);
  }
  return { status: res.status, body, text };
}



t.test('every operation answers as documented', async (tt) => {
  node = await startNodeFor(t);
  const ready = await pollUntil(async () => ((await fetch(`${node.url}/readyz`)).status === 200 ? true : undefined), 15_000, 100);
  tt.ok(ready, 'node ready');
  const served = await call(tt, 'get', '/openapi.json', { auth: false });
  tt.same(served.body, JSON.parse(JSON.stringify(doc)), 'GET /openapi.json serves the YAML document as JSON');
  const topic = { topic: 'orders' };
  const p = { topic: 'orders' };
  tt.equal((await call(tt, 'post', '/v1/topics', { body: { name: 'orders', schema: { type: 'object' } } })).status, 201);
  tt.equal((await call(tt, 'post', '/v1/topics', { body: { name: 'audit' } })).status, 201);
  tt.equal((await call(tt, 'post', '/v1/topics', { body: { name: 'bad name' } })).status, 400, 'an error answer is documented too');
  tt.equal((await call(tt, 'get', '/v1/topics', { query: 'limit=10' })).status, 200);
  tt.equal((await call(tt, 'get', '/v1/topics', { auth: false })).status, 401);
  tt.equal((await call(tt, 'get', '/v1/topics', { headers: { 'sec-fetch-site': 'cross-site' } })).status, 403, 'cross-origin');
  tt.equal((await call(tt, 'get', '/metrics', { headers: { origin: 'http://elsewhere.example' } })).status, 403, 'cross-origin');
  tt.equal((await call(tt, 'get', '/v1/topics/{topic}', { params: topic })).status, 200);
  tt.equal((await call(tt, 'get', '/v1/topics/{topic}', { params: { topic: 'nope' } })).status, 404);
  tt.equal((await call(tt, 'patch', '/v1/topics/{topic}', { params: topic, body: { retention_ms: 0 } })).status, 200);
  tt.equal((await call(tt, 'get', '/v1/topics/{topic}/schema', { params: topic })).status, 200);
  tt.equal((await call(tt, 'post', '/v1/topics/{topic}/produce', { params: p, body: { n: 1 } })).status, 202);
  tt.equal((await call(tt, 'post', '/v1/topics/{topic}/produce', { params: p, body: [1] })).status, 400, 'schema refusal');
  tt.equal((await call(tt, 'post', '/v1/topics/{topic}/produce/batch', { params: p,
    body: { messages: [{ payload: { n: 2 }, key: 'k' }, { payload: { n: 3 } }] } })).status, 202);
  const one = await call(tt, 'get', '/v1/topics/{topic}/consume', { params: p, query: 'wait=1s' });
  tt.equal(one.status, 200);
  const many = await call(tt, 'get', '/v1/topics/{topic}/consume', { params: p, query: 'max=5&wait=1s', headers: { 'x-svc-client': 'openapi-test' } });
  tt.equal(many.status, 200);
  tt.equal((await call(tt, 'get', '/v1/topics/{topic}/consume', { params: p, query: `partition=${one.body.partition}&offset=${one.body.offset}` })).status, 200, 'replay');
  tt.equal((await call(tt, 'get', '/v1/topics/{topic}/consume', { params: p, query: 'partition=0&offset=99' })).status, 204, 'past the end');
  tt.equal((await call(tt, 'post', '/v1/topics/{topic}/ack', { params: p, query: `receipt_handle=${encodeURIComponent(one.body.receipt_handle)}` })).status, 204);
  tt.equal((await call(tt, 'post', '/v1/topics/{topic}/ack', { params: p, query: `receipt_handle=${encodeURIComponent(one.body.receipt_handle)}` })).status, 410);
  const handles = (many.body.messages as Json[]).map((m) => m.receipt_handle);
  tt.equal((await call(tt, 'post', '/v1/topics/{topic}/ack', { params: p, body: { receipt_handles: [...handles, 'x'] } })).status, 200);
  await childrenAndRemotes(tt);
  await usersAndCluster(tt);
  tt.equal((await call(tt, 'delete', '/v1/topics/{topic}', { params: { topic: 'audit' } })).status, 204);
  tt.equal((await call(tt, 'get', '/healthz', { auth: false })).status, 200);
  tt.equal((await call(tt, 'head', '/healthz', { auth: false })).status, 200);
  tt.equal((await call(tt, 'get', '/readyz', { auth: false })).status, 200);
  tt.equal((await call(tt, 'head', '/readyz', { auth: false })).status, 200);
  tt.equal((await call(tt, 'get', '/metrics')).status, 200);
  tt.same([...exercised].sort(), operationKeys(), 'every documented operation was exercised');
});

async function childrenAndRemotes(tt: Test): Promise<void> {
  const pc = { parent: 'orders', child: 'audit' };
  tt.equal((await call(tt, 'post', '/v1/topics', { body: { name: 'orders-copy', parent: 'orders' } })).status, 201, 'create as child');
  tt.equal((await call(tt, 'post', '/v1/topics/{parent}/children', { params: pc, body: { child: 'audit' } })).status, 200, 'attach');
  tt.equal((await call(tt, 'post', '/v1/topics/{parent}/children', { params: pc, body: { child: 'nope' } })).status, 404);
  tt.equal((await call(tt, 'get', '/v1/topics/{parent}/children', { params: pc })).status, 200);
  tt.equal((await call(tt, 'delete', '/v1/topics/{parent}/children/{child}', { params: pc })).status, 204);
  tt.equal((await call(tt, 'delete', '/v1/topics/{parent}/children/{child}', { params: pc })).status, 404, 'not linked');
  for (const action of ['pause', 'resume', 'skip']) {
    tt.equal((await call(tt, 'post', `/v1/topics/{parent}/children/{child}/${action}`, { params: pc, body: {} })).status, 501);
  }
  const r = { name: 'east' };
  tt.equal((await call(tt, 'post', '/v1/remotes', { body: {} })).status, 501);
  tt.equal((await call(tt, 'get', '/v1/remotes')).status, 501);
  tt.equal((await call(tt, 'get', '/v1/remotes/{name}', { params: r })).status, 501);
  tt.equal((await call(tt, 'patch', '/v1/remotes/{name}', { params: r, body: {} })).status, 501);
  tt.equal((await call(tt, 'delete', '/v1/remotes/{name}', { params: r })).status, 501);
  tt.equal((await call(tt, 'post', '/v1/remotes/{name}/test', { params: r, body: {} })).status, 501);
  tt.equal((await call(tt, 'post', '/v1/cluster/reencrypt-remotes', { body: {} })).status, 501);
}

async function usersAndCluster(tt: Test): Promise<void> {
  const bob = { username: 'bob' };
  const grants = [{ action: 'produce', patterns: ['orders*'] }];
  tt.equal((await call(tt, 'post', '/v1/users', { body: { username: 'bob', password: 'bob-password', grants } })).status, 201);
  tt.equal((await call(tt, 'post', '/v1/users', { body: { username: 'bob', password: 'bob-password' } })).status, 409);
  tt.equal((await call(tt, 'get', '/v1/users')).status, 200);
  tt.equal((await call(tt, 'get', '/v1/users/{username}', { params: bob })).status, 200);
  tt.equal((await call(tt, 'put', '/v1/users/{username}/grants', { params: bob, body: { grants: [] } })).status, 200);
  tt.equal((await call(tt, 'put', '/v1/users/{username}/password', { params: bob, body: { new_password: 'other-password' } })).status, 204);
  tt.equal((await call(tt, 'delete', '/v1/users/{username}', { params: bob })).status, 204);
  tt.equal((await call(tt, 'get', '/v1/users/{username}', { params: bob })).status, 404);
  tt.equal((await call(tt, 'get', '/v1/cluster/members')).status, 200);
  tt.equal((await call(tt, 'get', '/v1/cluster/members', { query: 'detail=true' })).status, 200);
  tt.equal((await call(tt, 'post', '/v1/cluster/members/{id}/forget', { params: { id: '9' }, body: {} })).status, 404);
  const self = { id: String((await call(tt, 'get', '/v1/cluster/members')).body.members[0].id) };
  tt.equal((await call(tt, 'post', '/v1/cluster/members/{id}/decommission', { params: self, body: { dry_run: true } })).status, 200);
  tt.equal((await call(tt, 'post', '/v1/cluster/members/{id}/decommission', { params: self, body: {} })).status, 409, 'a lone node cannot drain');
  tt.equal((await call(tt, 'post', '/v1/cluster/members/{id}/decommission/cancel', { params: self, body: {} })).status, 409);
  tt.equal((await call(tt, 'post', '/v1/cluster/rebalance', { body: { dry_run: true } })).status, 200);
  tt.equal((await call(tt, 'post', '/v1/cluster/rebalance', { body: {} })).status, 202);
  tt.same((await call(tt, 'get', '/v1/cluster/moves')).body, { moves: [] });
  tt.equal((await call(tt, 'post', '/v1/cluster/moves', { body: { topic: 'no-such-topic', partition: 0, destination: '1' } })).status, 404);
  tt.equal((await call(tt, 'post', '/v1/cluster/moves', { body: { topic: 'no-such-topic', partition: 0 } })).status, 400);
  tt.equal((await call(tt, 'post', '/v1/cluster/moves/{topic}/{partition}/abort', { params: { topic: 'no-such-topic', partition: '0' } })).status, 409);
}
