// Read-back of what a topic stores, for the tests of refused requests: a refusal stores nothing (spec §4 Produce,
// §8), which a test shows only by reading the topic once whatever the node might still commit is committed. A 202
// comes before the commit (spec §1.2), so an immediate read proves little; instead each partition gets a marker
// message pinned to it, and once every marker is readable the offset it got is the count of records stored before it
// in that partition (a single node stores a partition's records in the order it accepted them). Test process only;
// imports nothing from src/.

interface Node {
  url: string;
  auth: string;
}

const markerHeaders = (node: Node): Record<string, string> => ({ authorization: node.auth, 'content-type': 'application/json' });

async function getJson(node: Node, path: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${node.url}${path}`, { headers: { authorization: node.auth } });
  const text = await res.text();
  return { status: res.status, body: res.status === 200 ? JSON.parse(text) : text };
}

/** The offset of the marker in partition p once it is committed; undefined while it is not readable yet. */
async function markerOffset(node: Node, topic: string, p: number, marker: string): Promise<number | undefined> {
  const path = `/v1/topics/${encodeURIComponent(topic)}`;
  const stats = await getJson(node, path);
  const highWatermark = (stats.body?.partition_stats?.[p]?.high_watermark ?? 0) as number;
  if (highWatermark === 0) return undefined;
  const last = await getJson(node, `${path}/consume?partition=${p}&offset=${highWatermark - 1}`);
  return last.status === 200 && last.body?.payload?.stored_marker === marker ? (last.body.offset as number) : undefined;
}

/**
 * Records each partition of topic stored before a marker produced to it now; adds one marker per partition. Throws
 * when a marker is refused or not readable within timeoutMs.
 */
export async function storedCounts(node: Node, topic: string, timeoutMs = 15_000): Promise<number[]> {
  const path = `/v1/topics/${encodeURIComponent(topic)}`;
  const described = await getJson(node, path);
  if (described.status !== 200) throw new Error(`get ${topic}: ${described.status} ${String(described.body)}`);
  const partitions = (described.body.partition_stats as unknown[]).length;
  const marker = `${process.pid}-${Date.now()}-${Math.random()}`;
  for (let p = 0; p < partitions; p++) {
    const res = await fetch(`${node.url}${path}/produce?partition=${p}`, {
      method: 'POST', headers: markerHeaders(node), body: JSON.stringify({ stored_marker: marker }),
    });
    if (res.status !== 202) throw new Error(`marker produce to ${topic}/${p}: ${res.status} ${await res.text()}`);
  }
  const counts: number[] = [];
  const deadline = Date.now() + timeoutMs;
  for (let p = 0; p < partitions; p++) {
    let offset = await markerOffset(node, topic, p, marker);
    while (offset === undefined && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      offset = await markerOffset(node, topic, p, marker);
    }
    if (offset === undefined) throw new Error(`marker of ${topic}/${p} not readable within ${timeoutMs} ms`);
    counts.push(offset);
  }
  return counts;
}

/** The sum of storedCounts: records stored in the whole topic before the markers. */
export async function storedTotal(node: Node, topic: string, timeoutMs?: number): Promise<number> {
  return (await storedCounts(node, topic, timeoutMs)).reduce((sum, n) => sum + n, 0);
}

/**
 * The payloads partition p of topic stored before the markers (see storedCounts), in offset order: [] when the
 * requests under test stored nothing there.
 */
export async function storedPayloads(node: Node, topic: string, p = 0, timeoutMs?: number): Promise<unknown[]> {
  const count = (await storedCounts(node, topic, timeoutMs))[p];
  if (count === undefined) throw new Error(`${topic} has no partition ${p}`);
  const payloads: unknown[] = [];
  for (let offset = 0; offset < count; offset++) {
    const res = await getJson(node, `/v1/topics/${encodeURIComponent(topic)}/consume?partition=${p}&offset=${offset}`);
    if (res.status !== 200) throw new Error(`consume ${topic}/${p} at ${offset}: ${res.status} ${String(res.body)}`);
    payloads.push(res.body.payload);
  }
  return payloads;
}
