// Goal: the web console's files under GET /console (issue 32 point 4): served without credentials on a secured
// node (they hold no secret; the console logs in over the API), each with its content type, a strict
// Content-Security-Policy and no-cache; an unknown file is the plain-text 404 of an unknown route; the API itself
// still asks for credentials. Method: black box against one secured node.
import t, { type Test } from 'tap';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, assertError, assertPlainText } from '../helpers/http.js';

let node: StartedNode;
let anon: Client;

t.before(async () => {
  node = await startNodeFor(t);
  anon = new Client(node.url, null);
});

function checkHeaders(t: Test, headers: Record<string, unknown>, what: string): void {
  const csp = String(headers['content-security-policy'] ?? '');
  t.match(csp, /(^|;\s*)default-src 'self'(;|$)/, `${what}: CSP default-src 'self'`);
  t.match(csp, /frame-ancestors 'none'/, `${what}: CSP forbids framing`);
  t.notMatch(csp, /unsafe-inline|unsafe-eval|\*/, `${what}: CSP allows no inline code, eval or wildcard source`);
  t.equal(headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  t.equal(headers['cache-control'], 'no-cache', `${what}: revalidated, so an upgrade never mixes old and new files`);
}

t.test('GET /console: 200 text/html without credentials, with CSP', async (t) => {
  const res = await anon.get('/console');
  t.equal(res.status, 200);
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8');
  t.match(res.text, /<script type="module" src="\/console\/app.js"><\/script>/, 'loads the app as an ES module from /console');
  t.notMatch(res.text, /https?:\/\//, 'no outside URL: nothing from a CDN');
  t.notMatch(res.text, /<script>|<style>|\sstyle=|\son[a-z]+=/, 'no inline script or style the CSP would block');
  checkHeaders(t, res.headers, '/console');
  t.notOk('www-authenticate' in res.headers, 'no credentials asked');
});

t.test('assets: each with its content type and CSP; index.html by name too', async (t) => {
  const cases: Array<[string, string]> = [
    ['/console/app.js', 'text/javascript; charset=utf-8'],
    ['/console/api.js', 'text/javascript; charset=utf-8'],
    ['/console/dom.js', 'text/javascript; charset=utf-8'],
    ['/console/topic.js', 'text/javascript; charset=utf-8'],
    ['/console/admin.js', 'text/javascript; charset=utf-8'],
    ['/console/page.js', 'text/javascript; charset=utf-8'],
    ['/console/style.css', 'text/css; charset=utf-8'],
    ['/console/index.html', 'text/html; charset=utf-8'],
  ];
  for (const [path, type] of cases) {
    const res = await anon.get(path);
    t.equal(res.status, 200, `${path}: 200`);
    t.equal(res.headers['content-type'], type, `${path}: ${type}`);
    t.ok(res.body.length > 0, `${path}: has a body`);
    checkHeaders(t, res.headers, path);
  }
  const app = await anon.get('/console/app.js');
  t.notMatch(app.text, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/, 'app.js writes no HTML from strings');
});

t.test('unknown console paths: the plain-text 404 of an unknown route; other methods 405', async (t) => {
  for (const path of ['/console/x', '/console/nope.js', '/console/', '/console/a/b', '/console/..%2Fpackage.json', '/console/%2e%2e']) {
    const res = await anon.get(path);
    t.equal(res.status, 404, `${path}: 404`);
    assertPlainText(t, res, 404, path);
  }
  const post = await anon.post('/console', 'x', { contentType: 'text/plain' });
  t.equal(post.status, 405, 'POST /console: 405');
  t.equal(post.headers['allow'], 'GET');
});

t.test('the API behind the console still needs credentials', async (t) => {
  const res = await anon.get('/v1/topics');
  assertError(t, res, 401);
  const withAuth = await anon.get('/v1/topics', { auth: node.auth });
  t.equal(withAuth.status, 200);
});
