// Goal: the text GET /metrics answers (issue 39 point 8, spec §4 Health and metrics): prom-client's nodejs_* series
// come out as svc_nodejs_* (names, HELP and TYPE lines, histogram buckets), process_* stay as they are, and
// non-finite values are spelled as the Prometheus text format spells them: NaN, +Inf, -Inf.
// Method: a prom-client registry with the default series and gauges set to NaN and the infinities, its text passed
// through servedExposition; a help text and a label value that hold "Nan" and "nodejs_" are left alone.
import t from 'tap';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { servedExposition } from '../../src/front/metrics.js';

const registry = new Registry();
collectDefaultMetrics({ register: registry });
const gauge = new Gauge({ name: 'svc_probe', help: 'A probe, its help ending Nan', labelNames: ['kind'], registers: [registry] });
gauge.labels('nan').set(NaN);
gauge.labels('up').set(Infinity);
gauge.labels('down').set(-Infinity);
gauge.labels('nodejs_x Nan').set(1);
const text = servedExposition(await registry.metrics());
const lines = text.split('\n');

t.test('non-finite values are NaN, +Inf and -Inf', async (t) => {
  t.ok(lines.includes('svc_probe{kind="nan"} NaN'), 'NaN');
  t.ok(lines.includes('svc_probe{kind="up"} +Inf'), '+Inf');
  t.ok(lines.includes('svc_probe{kind="down"} -Inf'), '-Inf');
  t.ok(lines.includes('svc_probe{kind="nodejs_x Nan"} 1'), 'a label value is left alone');
  t.ok(lines.includes('# HELP svc_probe A probe, its help ending Nan'), 'a help text is left alone');
  t.same(lines.filter((l) => !l.startsWith('#') && / Nan$/.test(l)), [], 'no sample value written Nan');
});

t.test('the runtime series are svc_nodejs_*, the process series keep their standard names', async (t) => {
  const names = new Set(lines.filter((l) => l !== '').map((l) => (/^# (?:HELP|TYPE) (\S+)/.exec(l) ?? /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(l))![l.startsWith('#') ? 1 : 0]!));
  t.same([...names].filter((name) => !/^(?:svc|process|go)_/.test(name)), [], 'every name starts svc_, process_ or go_');
  t.ok(names.has('svc_nodejs_heap_size_used_bytes'), 'a runtime gauge');
  t.ok(names.has('svc_nodejs_gc_duration_seconds'), 'a runtime histogram, HELP and TYPE');
  t.ok(lines.includes('# TYPE svc_nodejs_gc_duration_seconds histogram'));
  t.ok(names.has('process_cpu_seconds_total') && names.has('process_resident_memory_bytes'), 'process_* unchanged');
});
