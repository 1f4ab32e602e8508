// Reads a whole partition back by replay (consume with partition and offset) through one node, for cluster tests:
// every record from offset 0 until the first 204, in offset order. Any other status is an error naming it.
import type { Client } from './http.js';

/** The Message JSON of every record of the partition (at most limit), in offset order. */
export async function replayPartition(client: Client, topic: string, partition: number, limit: number): Promise<Record<string, unknown>[]> {
  const records: Record<string, unknown>[] = [];
  for (let offset = 0; offset < limit; offset++) {
    const res = await client.get(`/v1/topics/${topic}/consume?partition=${partition}&offset=${offset}`);
    if (res.status === 204) return records;
    if (res.status !== 200) throw new Error(`replay ${partition}/${offset}: ${res.status} ${res.text}`);
    records.push(res.json() as Record<string, unknown>);
  }
  return records;
}

/** The payloads of every record of the partition (at most limit), in offset order. */
export async function partitionPayloads(client: Client, topic: string, partition: number, limit: number): Promise<unknown[]> {
  return (await replayPartition(client, topic, partition, limit)).map((record) => record.payload);
}
