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
