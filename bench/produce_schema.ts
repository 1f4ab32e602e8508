// `npm run bench -- produce --schema` (issue 28): single and batch produce of the same 10-property payload to a topic
// without a schema and to one whose schema checks every property, one run each on one node, and the ratios of the
// two (targets: single >= 0.9x, batch >= 0.7x the no-schema figure). Bench process main thread; runProduce calls it.
import { createTopic, errorText, makeBatchBody, reportedOptions, sleep, startBroker } from './common.js';
import type { BenchOptions } from './options.js';
import { measure, produceRatios, type ProduceReport, type RunSpec } from './produce.js';
import type { ThroughputFigures } from './common.js';

const schema = {
  type: 'object',
  properties: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`p${i}`, i < 5 ? { type: 'integer', minimum: 0 } : { type: 'string', maxLength: 1000 }])),
  required: Array.from({ length: 10 }, (_, i) => `p${i}`),
  additionalProperties: false,
};

/** Ten properties (five integers, five strings), the last string padded to `bytes` in all when it can be. */
function schemaPayload(bytes: number): Buffer {
  const fields = Array.from({ length: 10 }, (_, i) => (i < 5 ? `"p${i}":${i * 1000}` : `"p${i}":"${String.fromCharCode(97 + i)}"`));
  const base = `{${fields.join(',')}}`;
  const pad = Math.max(0, bytes - base.length);
  return Buffer.from(`${base.slice(0, -2)}${'x'.repeat(pad)}"}`);
}

export async function runProduceSchema(options: BenchOptions): Promise<ProduceReport> {
  const startedAt = new Date().toISOString();
  const topic = `bench-${Date.now()}`;
  const payload = schemaPayload(options.messageBytes);
  const batchBody = makeBatchBody(payload, options.batch);
  const runs: ThroughputFigures[] = [];
  const failures: string[] = [];
  const target = await startBroker(options);
  try {
    await createTopic(target, topic, options.partitions);
    await createTopic(target, `${topic}-schema`, options.partitions, { schema });
    const base = { url: target.url, serverPid: target.serverPid, server: target.server };
    const kinds = [[false, options.connections, payload], [true, options.batchConnections, batchBody]] as const;
    for (const [batch, connections, body] of kinds) {
      if (options.scenario === (batch ? 'produce-single' : 'produce-batch')) continue;
      for (const withSchema of [false, true]) {
        const name = `${batch ? `batch produce (${options.batch}, ` : 'single produce ('}${withSchema ? 'schema)' : 'no schema)'}`;
        const path = `/v1/topics/${withSchema ? `${topic}-schema` : topic}/produce${batch ? '/batch' : ''}`;
        const headers: Record<string, string> = { 'content-type': 'application/json' };
        if (target.authorization !== null) headers['authorization'] = target.authorization;
        const spec: RunSpec = { ...base, name, connections, messagesPerRequest: batch ? options.batch : 1,
          request: { method: 'POST', path, headers, body } };
        runs.push(await measure(options, spec));
        await sleep(1000);
      }
    }
  } catch (error) {
    failures.push(errorText(error));
  } finally {
    await target.server?.stop();
  }
  const ratio = (batch: boolean): number | null => {
    const rows = runs.filter((run) => run.name.startsWith(batch ? 'batch' : 'single'));
    return rows.length === 2 && rows[0]!.msgsPerSec > 0 ? rows[1]!.msgsPerSec / rows[0]!.msgsPerSec : null;
  };
  return { scenario: options.scenario, startedAt, topic, target: target.url, options: reportedOptions(options, []), runs,
    ratios: produceRatios(runs), missingPeers: [], redisVersion: null, failures, schemaRatios: { single: ratio(false), batch: ratio(true) } };
}
