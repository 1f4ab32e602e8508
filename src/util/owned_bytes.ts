// Bytes about to cross to another thread. A view may share its ArrayBuffer with other data (the slabs small bodies
// are carved from, a grown read buffer with an uninitialised tail): a port or a pool clones, or transfers, the whole
// ArrayBuffer, which would hand other requests' bytes to the other side. Shared by every thread.

/** bytes itself when it spans its whole ArrayBuffer, else an exactly sized copy that does. */
export function ownedBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}
