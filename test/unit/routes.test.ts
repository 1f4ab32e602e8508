// Goal: the route table answers found / 405 with the allowed methods / 404 as spec §4 and §7 need.
// Method: a small table like the node's; pure, no server.
import t from 'tap';
import { RouteTable } from '../../src/front/route_table.js';

const table = new RouteTable<{ method: string; pattern: string; handler: string }>([
  { method: 'POST', pattern: '/v1/topics', handler: 'create' },
  { method: 'GET', pattern: '/v1/topics', handler: 'list' },
  { method: 'GET', pattern: '/v1/topics/{topic}', handler: 'get' },
  { method: 'DELETE', pattern: '/v1/topics/{topic}', handler: 'delete' },
  { method: 'POST', pattern: '/v1/topics/{topic}/produce', handler: 'produce' },
  { method: 'DELETE', pattern: '/v1/topics/{parent}/children/{child}', handler: 'detach' },
]);

t.test('matches and extracts params', async (t) => {
  const found = table.match('GET', '/v1/topics/orders');
  t.same(found.kind === 'found' && [found.entry.handler, found.params], ['get', ['orders']]);
  const detach = table.match('DELETE', '/v1/topics/a/children/b');
  t.same(detach.kind === 'found' && detach.params, ['a', 'b']);
  const encoded = table.match('GET', '/v1/topics/a%2Eb');
  t.same(encoded.kind === 'found' && encoded.params, ['a.b'], 'path segments are percent-decoded');
});

t.test('405 lists the methods of the path', async (t) => {
  t.same(table.match('PUT', '/v1/topics'), { kind: 'method_not_allowed', allow: 'POST, GET' });
  t.same(table.match('PATCH', '/v1/topics/x'), { kind: 'method_not_allowed', allow: 'GET, DELETE' });
});

t.test('404 for unknown paths, empty params and trailing slashes', async (t) => {
  t.same(table.match('GET', '/v2/topics'), { kind: 'not_found' });
  t.same(table.match('GET', '/v1/topics/'), { kind: 'not_found' });
  t.same(table.match('GET', '/v1/topics/x/'), { kind: 'not_found' });
  t.same(table.match('GET', '/v1/topics/%zz'), { kind: 'not_found' });
});

t.test('the same path under another method, and a path matched before, still match as they should', async (t) => {
  const handlerOf = (method: string, path: string): string => {
    const match = table.match(method, path);
    return match.kind === 'found' ? `${match.entry.handler} ${match.params.join(',')}` : match.kind;
  };
  const steps: Array<[string, string, string]> = [
    ['GET', '/v1/topics/a', 'get a'],
    ['GET', '/v1/topics/a', 'get a'],
    ['DELETE', '/v1/topics/a', 'delete a'],
    ['GET', '/v1/topics/a', 'get a'],
    ['GET', '/v1/topics/b', 'get b'],
    ['PUT', '/v1/topics/b', 'method_not_allowed'],
    ['PUT', '/v1/topics/b', 'method_not_allowed'],
    ['POST', '/v1/topics/b/produce', 'produce b'],
    ['POST', '/v1/topics/b/produce/', 'not_found'],
    ['POST', '/v1/topics/b/produce', 'produce b'],
    ['GET', '/v1/topics/a', 'get a'],
  ];
  for (const [method, path, expected] of steps) t.equal(handlerOf(method, path), expected, `${method} ${path}`);
});

t.test('the route table as data: one row per method and pattern, body rules and checks as spec §4, §5, §8 say', async (t) => {
  const { apiRoutes, metricsRoutes } = await import('../../src/front/server/routes.js');
  const keys = apiRoutes.map((r) => `${r.method} ${r.pattern}`);
  t.equal(new Set(keys).size, keys.length, 'no route twice');
  for (const route of apiRoutes) {
    const writes = route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH';
    t.equal(route.contentTypeChecked, writes, `${route.method} ${route.pattern}: content-type rule on writes only (spec §5.6)`);
    if (route.body !== undefined) t.ok(writes, `${route.method} ${route.pattern}: a body only on writes`);
  }
  const byKey = new Map(apiRoutes.map((r) => [`${r.method} ${r.pattern}`, r]));
  for (const key of ['POST /v1/users', 'PUT /v1/users/{username}/grants', 'PUT /v1/users/{username}/password', 'POST /v1/topics/{parent}/children']) {
    t.equal(byKey.get(key)?.body?.oversizeStatus, 400, `${key}: oversized body is 400 (spec §8)`);
  }
  t.equal(byKey.get('POST /v1/topics/{topic}/ack')?.body?.bytesMax, 64 * 1024, 'batch ack body cap 64 KiB');
  t.equal(byKey.get('POST /v1/remotes')?.body?.bytesMax, 128 * 1024, 'remotes body cap 128 KiB');
  t.equal(byKey.get('POST /v1/topics/{topic}/produce/batch')?.body?.usesBatchBudget, true);
  t.equal(byKey.get('POST /v1/topics/{topic}/produce')?.grant, 'topic.produce');
  t.equal(byKey.get('GET /v1/topics/{topic}/consume')?.grant, 'topic.consume');
  for (const key of ['GET /v1/users', 'GET /v1/cluster/members', 'POST /v1/cluster/members/{id}/forget']) t.equal(byKey.get(key)?.grant, 'admin', key);
  t.same(apiRoutes.filter((r) => r.grant === 'public').map((r) => `${r.method} ${r.pattern}`),
    ['GET /healthz', 'HEAD /healthz', 'GET /readyz', 'HEAD /readyz', 'GET /console', 'GET /console/{file}', 'GET /openapi.json'],
    'only health (spec §5.3, GET and HEAD), the API document and the web console\'s static files (outside /v1) are public');
  t.ok(metricsRoutes.every((r) => r.grant === 'public' && (r.method === 'GET' || r.method === 'HEAD')),
    'the metrics listener needs no credentials');
  t.same(apiRoutes.filter((r) => r.method === 'HEAD').map((r) => r.pattern), ['/healthz', '/readyz'], 'HEAD only on health');
});
