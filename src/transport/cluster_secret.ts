// The cluster secret that authenticates node-to-node connections (--cluster-secret-file): its loader and its
// one rule. Called at boot on the main thread (the loader) and by every PeerTransport (the check), on any thread.
import { open } from 'node:fs/promises';

/** HMAC-SHA256 gets its full strength from a key of 32 bytes or more; a shorter one is refused at start. */
export const clusterSecretBytesMin = 32;
/** A larger file is taken for a wrong path (a log, a binary) rather than read whole into memory. */
export const clusterSecretFileBytesMax = 4096;

/** Throws a clear Error when secret breaks the rule; source names where it came from (never its bytes). */
export function checkClusterSecret(secret: Uint8Array, source: string): void {
  if (!(secret instanceof Uint8Array)) throw new Error(`cluster secret (${source}): must be bytes`);
  if (secret.byteLength < clusterSecretBytesMin) {
    throw new Error(
      `cluster secret (${source}): must be at least ${clusterSecretBytesMin} bytes, got ${secret.byteLength}`,
    );
  }
}

/**
 * Reads the secret file. One trailing line ending ("\n" or "\r\n") is not part of the secret, because editors and
 * `echo` add one; every other byte is, so every node reading the same file gets the same key. Generate one with
 * `openssl rand -hex 32 > secret` (64 bytes of text).
 */
export async function readClusterSecretFile(path: string): Promise<Uint8Array> {
  let bytes: Buffer;
  try {
    const handle = await open(path, 'r');
    try {
      const { size } = await handle.stat();
      if (size > clusterSecretFileBytesMax) {
        throw new Error(
          `cluster secret file ${path}: must be at most ${clusterSecretFileBytesMax} bytes, got ${size}`,
        );
      }
      bytes = await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof Error && error.message.startsWith('cluster secret file')) throw error;
    throw new Error(`cluster secret file ${path}: cannot be read (${(error as Error).message})`);
  }
  let end = bytes.byteLength;
  if (end > 0 && bytes[end - 1] === 0x0a) {
    end -= 1;
    if (end > 0 && bytes[end - 1] === 0x0d) end -= 1;
  }
  // Its own buffer, not a view of a pooled one.
  const secret = new Uint8Array(bytes.subarray(0, end));
  checkClusterSecret(secret, `file ${path}`);
  return secret;
}
