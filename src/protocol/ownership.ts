// Which partition worker owns a partition: a stable hash of (topic id, partition), so the front thread
// and every worker agree without a table. Shared by the front thread and the workers.

/** FNV-1a 32-bit; stable across releases because placement on disk is keyed by it. */
export function fnv1a32(bytes: Uint8Array | string, seed = 0x811c9dc5): number {
  let hash = seed >>> 0;
  if (typeof bytes === 'string') {
    for (let i = 0; i < bytes.length; i++) {
      hash ^= bytes.charCodeAt(i);
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
  } else {
    for (let i = 0; i < bytes.length; i++) {
      hash ^= bytes[i]!;
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
  }
  return hash >>> 0;
}

export function workerForPartition(topicId: string, partition: number, workerCount: number): number {
  return fnv1a32(`${topicId}/${partition}`) % workerCount;
}

/** Items grouped by key, keeping their order within each group and the order in which keys first appear. */
export function groupBy<T, K>(items: readonly T[], keyOf: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [item]);
    else group.push(item);
  }
  return groups;
}

/** Items grouped by the worker owning partitionOf(item) (groupBy's order); one message per worker then carries its
 *  group. A batch ack names few partitions many times: each partition's owner is hashed once. */
export function groupByWorker<T>(topicId: string, workerCount: number, items: readonly T[], partitionOf: (item: T) => number): Map<number, T[]> {
  const ownerByPartition = new Map<number, number>();
  return groupBy(items, (item) => {
    const partition = partitionOf(item);
    let owner = ownerByPartition.get(partition);
    if (owner === undefined) ownerByPartition.set(partition, (owner = workerForPartition(topicId, partition, workerCount)));
    return owner;
  });
}
