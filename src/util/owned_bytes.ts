// Bytes about to cross to another thread. A view may share its ArrayBuffer with other data (the slabs small bodies
// are carved from, a grown read buffer with an uninitialised tail): a port or a pool clones, or transfers, the whole
// ArrayBuffer, which would hand other requests' bytes to the other side. Buffers that are to cross whole come from
// unzeroedOwnBytes. Shared by every thread.

/** bytes itself when it spans its whole ArrayBuffer, else an exactly sized copy that does. */
export function ownedBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}

/** `bytes` bytes over an ArrayBuffer of their own (never a view of Node's shared pool, so they can be transferred
 *  whole), not zeroed: for buffers written before they are read, where zeroing megabytes costs page clears. */
export function unzeroedOwnBytes(bytes: number): Uint8Array<ArrayBuffer> {
  // allocUnsafeSlow never hands out a SharedArrayBuffer.
  return new Uint8Array(Buffer.allocUnsafeSlow(bytes).buffer as ArrayBuffer, 0, bytes);
}

/** An unzeroedOwnBytes of `capacity` bytes that starts with buffer's first `used` bytes. */
export function grownOwnBytes(buffer: Uint8Array, used: number, capacity: number): Uint8Array<ArrayBuffer> {
  const grown = unzeroedOwnBytes(capacity);
  grown.set(buffer.subarray(0, used));
  return grown;
}
