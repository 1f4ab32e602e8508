// Goal: a page of another origin cannot make a browser that logged in to the node lease messages (issue 40 point 1):
// the browser keeps Basic credentials it once gave the node and sends them with the page's `<img>` requests to the
// consume route; the node refuses those (403, from the browser's Sec-Fetch-Site mark) and leases nothing.
// Method: Debian's chromium (scripts/install-browser.sh) headless through puppeteer-core, one secured node with two
// messages in partition 0, and a second loopback HTTP server (another port: same site, another origin) serving a
// page with two `<img src=".../v1/topics/victim/consume">`. The browser logs in by opening an API URL and answering
// the 401's Basic challenge (page.authenticate), as a person would in the password prompt; challenges are then left
// unanswered, so only the credentials the browser cached can reach the node. Afterwards both messages are still
// there for an ordinary consume.
import t from 'tap';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser } from 'puppeteer-core';
import { Client, pollUntil } from '../helpers/http.js';
import { adminPassword, startNodeFor, type StartedNode } from '../helpers/node.js';

const chromium = '/usr/bin/chromium';
const topic = 'victim';

let node: StartedNode;
let admin: Client;
let browser: Browser;
let attacker: Server;
let attackerUrl: string;

t.before(async () => {
  node = await startNodeFor(t);
  admin = new Client(node.url, node.auth);
  const ready = await pollUntil(async () => ((await admin.get('/readyz')).status === 200 ? true : undefined), 30_000, 100);
  if (!ready) throw new Error(`node not ready within 30 s:\n${node.output()}`);
  if ((await admin.post('/v1/topics', { name: topic, partitions: 3 })).status !== 201) throw new Error('topic not created');
  for (const n of [1, 2]) {
    if ((await admin.post(`/v1/topics/${topic}/produce?partition=0`, { n })).status !== 202) throw new Error('produce failed');
  }
  // Replays take no lease: once both are readable, a consume of the page would lease them at once.
  const stored = await pollUntil(async () => ((await admin.get(`/v1/topics/${topic}/consume?partition=0&offset=1`)).status === 200 ? true : undefined), 10_000);
  if (!stored) throw new Error('the messages never became readable');
  const page = `<!doctype html><title>elsewhere</title>
<img src="${node.url}/v1/topics/${topic}/consume"><img src="${node.url}/v1/topics/${topic}/consume?x=2">`;
  attacker = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(page));
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => attacker.close(() => resolve())));
  attackerUrl = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`;
  browser = await puppeteer.launch({ executablePath: chromium, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'] });
  t.teardown(() => browser.close());
});

/** How many consumes the node answered with status so far (svc_http_requests_total, docs/metrics.md). */
async function consumeAnswers(status: number): Promise<number> {
  const text = (await admin.get('/metrics')).text;
  let count = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('svc_http_requests_total{') || !line.includes('route="/v1/topics/{topic}/consume"')) continue;
    if (line.includes(`status="${status}"`)) count += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return count;
}

t.test('a page on another port cannot lease through the credentials the browser cached', async (t) => {
  const page = await browser.newPage();
  await page.authenticate({ username: 'admin', password: adminPassword });
  const loggedIn = await page.goto(`${node.url}/v1/topics`, { waitUntil: 'load' });
  t.equal(loggedIn?.status(), 200, 'the browser logged in to the API');
  await page.authenticate(null);

  // The browser blocks the JSON answers from the page (ORB), so the node's own count tells how they were answered.
  const [refusedBefore, servedBefore] = [await consumeAnswers(403), await consumeAnswers(200)];
  await page.goto(attackerUrl, { waitUntil: 'load' });
  const refused = await pollUntil(async () => ((await consumeAnswers(403)) - refusedBefore >= 2 ? true : undefined), 10_000);
  t.ok(refused, 'both <img> requests reached the node and were answered 403');
  t.equal(await consumeAnswers(200), servedBefore, 'none was answered with a message');

  for (const n of [1, 2]) {
    const consumed = await admin.get(`/v1/topics/${topic}/consume?partition=0&wait=2s`);
    t.equal(consumed.status, 200, `message ${n} was still there to lease`);
  }
  t.equal((await admin.get(`/v1/topics/${topic}/consume?partition=0`)).status, 204, 'and there were only the two');
});
