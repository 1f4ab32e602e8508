// Goal: every delivery's nonce (workers/partition_read_path.ts nextNonce) is 12 lowercase hex digits, as receipt
// handles need (spec §2 Message: partition:offset:nonce; receipt_handle.ts accepts 1-32 digits), and none repeats, also
// where one block of random bytes ends and the next begins (512 nonces a block).
// Method: draw 5,000 nonces in a row, across nine blocks.
import t from 'tap';
import { nextNonce } from '../../workers/partition_read_path.js';

t.test('nonces are 12 lowercase hex digits and never repeat across blocks', async (t) => {
  const nonces = Array.from({ length: 5_000 }, () => nextNonce());
  t.same(nonces.filter((nonce) => !/^[0-9a-f]{12}$/.test(nonce)), [], 'every nonce is 12 lowercase hex digits');
  t.equal(new Set(nonces).size, nonces.length, 'no nonce repeats');
  t.not(nonces[511], nonces[512], 'the first of a new block differs from the last of the one before');
});
