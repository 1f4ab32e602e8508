// Goal: receipt handles (spec §2 Message, §3 Lease) are accepted exactly when they have the shape
// `partition:offset:nonce` with 1-9 decimal digits, 1-16 decimal digits (a safe integer) and 1-32 lowercase hex digits;
// anything else is not a handle (a 400 on the ack routes); formatReceiptHandle's output is accepted with its partition;
// joined lists split as they were joined. Method: named cases at every edge of the shape, then a differential check of
// the char-code scanner against the grammar written as a regex, over generated near-handles.
import t from 'tap';
import { forEachJoinedHandle, formatReceiptHandle, handleSeparator, receiptHandlePartition } from '../../src/protocol/receipt_handle.js';
import { Prng } from '../helpers/prng.js';

const grammar = /^(\d{1,9}):(\d{1,16}):([0-9a-f]{1,32})$/;

/** The grammar's answer: the partition, or -1 (the offset must also be a safe integer). */
function oracle(text: string): number {
  const match = grammar.exec(text);
  if (match === null || !Number.isSafeInteger(Number(match[2]))) return -1;
  return Number(match[1]);
}

t.test('named cases', async (t) => {
  t.equal(receiptHandlePartition('0:0:a'), 0);
  t.equal(receiptHandlePartition('12:345:0f9e'), 12);
  t.equal(receiptHandlePartition('007:0010:ff'), 7, 'leading zeros are digits');
  t.equal(receiptHandlePartition(`999999999:9007199254740991:${'f'.repeat(32)}`), 999999999, 'every part at its longest');
  t.equal(receiptHandlePartition(`1:${'0'.repeat(16)}:0`), 1, '16 zeros are a safe offset');
  for (const bad of ['', ':', '::', '1:2', '1:2:', ':2:a', '1::a', '1:2:A', '1:2:g', '1:2:a:', '1:2:a\n', ' 1:2:a', '1 :2:a',
    '1:+2:a', '1:-2:a', '1.0:2:a', '1:2:a,1:2:b', '1234567890:2:a', `1:12345678901234567:a`, `1:2:${'a'.repeat(33)}`,
    '1:9007199254740992:a', '1:9999999999999999:a', '١:2:a', '1:2:a ', '1:2:/', '1:2::', '1:2:`']) {
    t.equal(receiptHandlePartition(bad), -1, `not a handle: ${JSON.stringify(bad)}`);
  }
});

t.test('the scanner answers as the grammar does', async (t) => {
  const prng = new Prng(0x5eed);
  const alphabet = '0123456789abcdefABg:-+ ,/`';
  const pick = (from: string): string => from[prng.int(0, from.length - 1)]!;
  const run = (from: string, lengthMax: number): string => Array.from({ length: prng.int(0, lengthMax) }, () => pick(from)).join('');
  let accepted = 0;
  let rejected = 0;
  for (let i = 0; i < 20_000; i++) {
    // Mostly near-handles (three runs with colons, each run's length around its limit), some noise.
    const text = prng.chance(0.1)
      ? run(alphabet, 40)
      : `${run('0123456789', 11)}:${prng.chance(0.25) ? run(alphabet, 18) : run('0123456789', 18)}:${run(prng.chance(0.25) ? alphabet : '0123456789abcdef', 34)}`;
    const expected = oracle(text);
    const got = receiptHandlePartition(text);
    if (got !== expected) {
      t.fail(`${JSON.stringify(text)}: scanner ${got}, grammar ${expected}`);
      return;
    }
    if (expected >= 0) accepted++;
    else rejected++;
  }
  t.ok(accepted > 1_000, `the inputs held handles (${accepted})`);
  t.ok(rejected > 1_000, `the inputs held non-handles (${rejected})`);
});

t.test('format is accepted with its partition; a joined list splits into the handles joined', async (t) => {
  const handles = [formatReceiptHandle(0, 0, 'a1'), formatReceiptHandle(3, 9007199254740991, 'ff00ff'), formatReceiptHandle(12, 7, '0')];
  t.same(handles.map(receiptHandlePartition), [0, 3, 12]);
  const seen: [number, number, string][] = [];
  t.equal(forEachJoinedHandle(handles.join(handleSeparator), (p, o, n) => seen.push([p, o, n])), 3);
  t.same(seen, [[0, 0, 'a1'], [3, 9007199254740991, 'ff00ff'], [12, 7, '0']]);
  t.equal(forEachJoinedHandle('', () => t.fail('nothing to visit')), 0);
  const odd: number[] = [];
  forEachJoinedHandle('1:x2:ab', (p, o) => odd.push(p, o));
  t.same(odd, [1, NaN], 'a part that is not decimal reads as NaN, as Number() gives, and names no lease');
});
