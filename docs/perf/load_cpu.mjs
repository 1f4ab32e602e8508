// Closed-loop single or batch produce against a running node (bench/load.ts's raw client), printing req/s, latency and
// the server's CPU time per request or message, per thread, from /proc/<pid>/task/*/stat: a figure that moves far
// less than req/s on a shared machine. The node must run with security on and user admin / password benchpass-123
// (or PASSWORD). TREE: the built checkout whose bench/ to use (default: this one). TOPIC: an existing topic (default:
// create one with PARTS partitions, default 6).
// Usage: node docs/perf/load_cpu.mjs single|batch PORT PID [connections] [seconds]
import { fileURLToPath } from 'node:url';
// usage: node load.mjs single|batch PORT PID [conns] [seconds]
import { readFileSync, readdirSync } from 'node:fs';
const [mode, port, pid, connsArg, secArg] = process.argv.slice(2);
const tree = process.env.TREE ?? fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const { runLoad } = await import(`${tree}/dist/bench/load.js`);
const { makePayload, makeBatchBody, basicAuth } = await import(`${tree}/dist/bench/common.js`);
const url = `http://127.0.0.1:${port}`;
const auth = basicAuth('admin', process.env.PASSWORD ?? 'benchpass-123');
const topic = process.env.TOPIC ?? `t${Date.now()}`;
if (!process.env.TOPIC) {
  const r = await fetch(`${url}/v1/topics`, { method: 'POST', headers: { authorization: auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: topic, partitions: Number(process.env.PARTS ?? 6) }) });
  if (r.status !== 201) throw new Error(`create ${r.status} ${await r.text()}`);
}
const payload = makePayload(100);
const batch = mode === 'batch';
const body = batch ? makeBatchBody(payload, 1000) : payload;
const conns = Number(connsArg ?? (batch ? 16 : 256));
const secs = Number(secArg ?? 10);
const hz = 100;
function threads() {
  const out = new Map();
  for (const t of readdirSync(`/proc/${pid}/task`)) {
    const s = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    out.set(t, (Number(f[11]) + Number(f[12])) * 1000 / hz);
  }
  return out;
}
let t0, c0, w0;
const res = await runLoad({
  label: mode, url, connections: conns, warmupMs: 2000, durationMs: secs * 1000, client: 'net', expectedStatus: 202,
  request: { method: 'POST', path: `/v1/topics/${topic}/produce${batch ? '/batch' : ''}`, headers: { authorization: auth, 'content-type': 'application/json' }, body },
  onWindowStart: () => { t0 = threads(); c0 = process.cpuUsage(); w0 = performance.now(); },
  onWindowEnd: () => {
    const t1 = threads(); const c1 = process.cpuUsage(c0); const ms = performance.now() - w0;
    const per = [...t1].map(([t, v]) => [t, v - (t0.get(t) ?? 0)]).sort((a, b) => b[1] - a[1]);
    const total = per.reduce((s, [, v]) => s + v, 0);
    globalThis.cpu = { total, per, ms, client: (c1.user + c1.system) / 1000 };
  },
});
const { total, per, ms, client } = globalThis.cpu;
const n = res.okResponses; const msgs = n * (batch ? 1000 : 1);
const unit = batch ? 'msg' : 'req';
console.log(`${mode}: ${(n / ms * 1000).toFixed(0)} req/s ${(msgs / ms * 1000).toFixed(0)} msg/s p50 ${res.latencyMs.p50.toFixed(2)} p99 ${res.latencyMs.p99.toFixed(2)} errors ${JSON.stringify(res.errorCounts ?? res.errors ?? {})}`);
console.log(`server CPU ${(100*total/ms).toFixed(0)}% = ${(total*1000/msgs).toFixed(2)} us/${unit}; threads: ${per.slice(0,5).map(([t,v]) => `${t}:${(v*1000/msgs).toFixed(2)}`).join(' ')} us/${unit}; client ${(client*1000/msgs).toFixed(2)} us/${unit} (${(100*client/ms).toFixed(0)}%)`);
