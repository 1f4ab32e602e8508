// Helpers of the fan-out copy tests (issue 30): read every message of a topic by replay, wait for a parent's children
// to catch up, read the fan-out metrics. Black box: HTTP only.
import { Client, pollUntil } from './http.js';

export interface ReadMessage {
  partition: number;
  offset: number;
  key: string | null;
  payload: unknown;
  timestamp: number;
}

export async function topicOf(api: Client, name: string): Promise<Record<string, any>> {
  const res = await api.get(`/v1/topics/${name}`);
  if (res.status !== 200) throw new Error(`GET ${name}: ${res.status} ${res.text}`);
  return res.json();
}

/** Every message a topic holds, partition by partition, by replay of each offset below the high watermark. */
export async function readAll(api: Client, name: string): Promise<ReadMessage[]> {
  const topic = await topicOf(api, name);
  const all: ReadMessage[] = [];
  for (const stats of topic.partition_stats as { index: number; oldest_offset: number; high_watermark: number }[]) {
    for (let offset = stats.oldest_offset; offset < stats.high_watermark; offset++) {
      const res = await api.get(`/v1/topics/${name}/consume?partition=${stats.index}&offset=${offset}`);
      if (res.status !== 200) throw new Error(`replay ${name}/${stats.index}/${offset}: ${res.status} ${res.text}`);
      const m = res.json();
      all.push({ partition: m.partition, offset: m.offset, key: m.key ?? null, payload: m.payload, timestamp: m.timestamp });
    }
  }
  return all;
}

export async function childrenOf(api: Client, parent: string): Promise<{ name: string; delay_ms: number; lag_messages: number; lag_complete: boolean }[]> {
  const res = await api.get(`/v1/topics/${parent}/children`);
  if (res.status !== 200) throw new Error(`GET children of ${parent}: ${res.status} ${res.text}`);
  return res.json().children;
}

/** Waits until every child of parent lists lag_messages 0 (complete); false when timeoutMs passed first. */
export async function waitCaughtUp(api: Client, parent: string, timeoutMs: number): Promise<boolean> {
  const done = await pollUntil(async () => {
    const children = await childrenOf(api, parent);
    return children.every((c) => c.lag_messages === 0 && c.lag_complete) ? true : undefined;
  }, timeoutMs, 100);
  return done === true;
}

/** Waits until the topic's high watermarks add up to at least n; the sum seen last. */
export async function waitTotal(api: Client, name: string, n: number, timeoutMs: number): Promise<number> {
  let seen = 0;
  await pollUntil(async () => {
    const topic = await topicOf(api, name);
    seen = (topic.partition_stats as { high_watermark: number }[]).reduce((sum, s) => sum + s.high_watermark, 0);
    return seen >= n ? true : undefined;
  }, timeoutMs, 100);
  return seen;
}

/** The value of one series of /metrics (0 when absent), labels in any order. */
export async function metricValue(api: Client, name: string, labels: Record<string, string>): Promise<number> {
  const text = (await api.get('/metrics')).text;
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const matches = Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`));
    if (matches) total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}
