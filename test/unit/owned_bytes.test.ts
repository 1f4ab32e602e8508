// Goal: bytes handed to another thread never carry the rest of a shared ArrayBuffer (Node's pooled small buffers,
// a grown read buffer). Method: ownedBytes on a whole buffer, a pooled Buffer view and a view into a larger buffer.
import t from 'tap';
import { grownOwnBytes, ownedBytes, unzeroedOwnBytes } from '../../src/util/owned_bytes.js';

t.test('a whole buffer is kept; a view is copied to exactly its own bytes', async (t) => {
  const whole = new Uint8Array([1, 2, 3]);
  t.equal(ownedBytes(whole), whole, 'no copy when the view spans its ArrayBuffer');
  const pooled = Buffer.from('a small body');
  t.ok(pooled.buffer.byteLength > pooled.byteLength, 'the Buffer shares Node\'s pool');
  const owned = ownedBytes(new Uint8Array(pooled.buffer, pooled.byteOffset, pooled.byteLength));
  t.equal(owned.buffer.byteLength, pooled.byteLength, 'the copy owns exactly the body\'s bytes');
  t.equal(owned.byteOffset, 0);
  t.same([...owned], [...pooled]);
  const tail = new Uint8Array(64).fill(7).subarray(8, 16);
  t.equal(ownedBytes(tail).buffer.byteLength, 8, 'a view into a larger buffer is copied');
});

t.test('own buffers span their ArrayBuffer whole, apart from each other; grown ones keep what was used', async (t) => {
  // Small sizes are where Node's shared pool would otherwise hand out views of one ArrayBuffer.
  const a = unzeroedOwnBytes(16);
  const b = unzeroedOwnBytes(16);
  for (const bytes of [a, b]) {
    t.equal(bytes.byteLength, 16);
    t.equal(ownedBytes(bytes), bytes, 'spans its ArrayBuffer: ownedBytes keeps it, a transfer takes nothing else');
  }
  t.not(a.buffer, b.buffer, 'two buffers share no memory');
  a.set([1, 2, 3, 4, 5]);
  const grown = grownOwnBytes(a, 3, 40);
  t.equal(grown.byteLength, 40);
  t.equal(ownedBytes(grown), grown);
  t.same([...grown.subarray(0, 3)], [1, 2, 3], 'the used bytes are carried over');
  t.not(grown.buffer, a.buffer);
});
