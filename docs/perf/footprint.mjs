// Footprint of a running node (security on, user admin, password benchpass-123 or PASSWORD): creates `topics` topics
// of 3 partitions, with FILL=1 produces one message to each partition, then holds `polls` connections each in
// consume?wait=10s (polling again after every answer) and prints the node's VmRSS / VmHWM every 2 s. Start the node
// with SVC_HTTP_MAX_CONNECTIONS and SVC_HTTP_MAX_CONSUME_IN_FLIGHT_PER_IDENTITY above `polls`.
// Usage: node docs/perf/footprint.mjs PORT PID [topics=1000] [polls=10000]
import net from 'node:net';
import { readFileSync } from 'node:fs';
const [port, pid, topicsArg, pollsArg] = process.argv.slice(2);
const topics = Number(topicsArg ?? 1000), polls = Number(pollsArg ?? 10000);
const auth = 'Basic ' + Buffer.from('admin:' + (process.env.PASSWORD ?? 'benchpass-123')).toString('base64');
const rss = () => { const s = readFileSync(`/proc/${pid}/status`, 'utf8'); const g = (k) => Number(s.match(new RegExp(`${k}:\\s+(\\d+)`))[1]) / 1024; return `RSS ${g('VmRSS').toFixed(0)} MiB (peak ${g('VmHWM').toFixed(0)} MiB)`; };
console.log('start', rss());
const prefix = `fp${Date.now()}`;
let next = 0; const t0 = Date.now();
await Promise.all(Array.from({ length: 16 }, async () => {
  for (let i = next++; i < topics; i = next++) {
    const r = await fetch(`http://127.0.0.1:${port}/v1/topics`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: `${prefix}-${i}`, partitions: 3 }) });
    if (r.status !== 201) throw new Error(`create ${r.status} ${await r.text()}`);
  }
}));
if (process.env.FILL) {
  let k = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    for (let i = k++; i < topics * 3; i = k++) {
      const r = await fetch(`http://127.0.0.1:${port}/v1/topics/${prefix}-${Math.floor(i / 3)}/produce?partition=${i % 3}`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: '{"d":"hello"}' });
      if (r.status !== 202) throw new Error(`produce ${r.status} ${await r.text()}`);
    }
  }));
}
console.log(`${topics} topics x 3 partitions in ${((Date.now() - t0) / 1000).toFixed(1)} s`, rss());
let open = 0, answered = 0; const statuses = {};
for (let i = 0; i < polls; i++) {
  const sock = net.connect(Number(port), '127.0.0.1');
  const req = Buffer.from(`GET /v1/topics/${prefix}-${i % topics}/consume?wait=10s HTTP/1.1\r\nhost: x\r\nauthorization: ${auth}\r\n\r\n`);
  sock.on('connect', () => { open++; sock.write(req); });
  sock.on('data', (d) => { answered++; const st = d.toString('latin1', 9, 12); statuses[st] = (statuses[st] ?? 0) + 1; sock.write(req); });
  sock.on('error', (e) => { statuses[e.code] = (statuses[e.code] ?? 0) + 1; });
  if (i % 500 === 499) await new Promise((r) => setTimeout(r, 20));
}
for (let s = 0; s < 4; s++) { await new Promise((r) => setTimeout(r, 2000)); console.log(`${open} connections open, ${answered} answers ${JSON.stringify(statuses)}`, rss()); }
process.exit(0);
