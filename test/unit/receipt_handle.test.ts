// Goal: receipt handles (spec §2 Message, §3 Lease) parse exactly when they have the shape `partition:offset:nonce`
// with 1-9 decimal digits, 1-16 decimal digits (a safe integer) and 1-32 lowercase hex digits; anything else is not
// a handle (a 400 on the ack routes); formatReceiptHandle's output parses back; joined lists split as they were
// joined. Method: named cases at every edge of the shape.
import t from 'tap';
import { forEachJoinedHandle, formatReceiptHandle, handleSeparator, parseReceiptHandle } from '../../src/protocol/receipt_handle.js';

t.test('named cases', async (t) => {
  t.same(parseReceiptHandle('0:0:a'), { partition: 0, offset: 0, nonce: 'a' });
  t.same(parseReceiptHandle('12:345:0f9e'), { partition: 12, offset: 345, nonce: '0f9e' });
  t.same(parseReceiptHandle('007:0010:ff'), { partition: 7, offset: 10, nonce: 'ff' }, 'leading zeros are digits');
  t.same(parseReceiptHandle(`999999999:9007199254740991:${'f'.repeat(32)}`), { partition: 999999999, offset: 9007199254740991, nonce: 'f'.repeat(32) });
  for (const bad of ['', ':', '::', '1:2', '1:2:', ':2:a', '1::a', '1:2:A', '1:2:g', '1:2:a:', '1:2:a\n', ' 1:2:a', '1 :2:a',
    '1:+2:a', '1:-2:a', '1.0:2:a', '1:2:a,1:2:b', '1234567890:2:a', `1:12345678901234567:a`, `1:2:${'a'.repeat(33)}`,
    '1:9007199254740992:a', '١:2:a']) {
    t.equal(parseReceiptHandle(bad), null, `not a handle: ${JSON.stringify(bad)}`);
  }
});

t.test('format parses back; a joined list splits into the handles joined', async (t) => {
  const handles = [formatReceiptHandle(0, 0, 'a1'), formatReceiptHandle(3, 9007199254740991, 'ff00ff'), formatReceiptHandle(12, 7, '0')];
  t.same(handles.map(parseReceiptHandle), [{ partition: 0, offset: 0, nonce: 'a1' }, { partition: 3, offset: 9007199254740991, nonce: 'ff00ff' },
    { partition: 12, offset: 7, nonce: '0' }]);
  const seen: [number, number, string][] = [];
  t.equal(forEachJoinedHandle(handles.join(handleSeparator), (p, o, n) => seen.push([p, o, n])), 3);
  t.same(seen, [[0, 0, 'a1'], [3, 9007199254740991, 'ff00ff'], [12, 7, '0']]);
  t.equal(forEachJoinedHandle('', () => t.fail('nothing to visit')), 0);
});
