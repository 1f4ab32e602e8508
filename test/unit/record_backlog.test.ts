// Goal: the ingress backlog count (src/front/record_backlog.ts) drops exactly the groups a durable report covers,
// in seq order, and stays right across its compaction. Method: a model (a plain list) beside it, over many groups.
import t from 'tap';
import { RecordBacklog } from '../../src/front/record_backlog.js';

t.test('groups leave the count once a report reaches their last seq', async (t) => {
  const backlog = new RecordBacklog();
  backlog.add(3, 2);
  backlog.add(4, 0);
  backlog.add(9, 5);
  t.equal(backlog.records, 7);
  backlog.durableUpTo(2);
  t.equal(backlog.records, 7, 'below the first group: nothing');
  backlog.durableUpTo(8);
  t.equal(backlog.records, 5, 'the first group only');
  backlog.durableUpTo(9);
  t.equal(backlog.records, 0);
  backlog.add(10, 1);
  t.equal(backlog.records, 1, 'added again after it emptied');
});

t.test('matches a model over 10,000 groups with reports in between (compaction included)', async (t) => {
  const backlog = new RecordBacklog();
  const model: [number, number][] = [];
  let seq = 0;
  let durable = 0;
  let mismatches = 0;
  for (let i = 0; i < 10_000; i++) {
    seq += 1 + (i % 3);
    const records = 1 + (i % 7);
    backlog.add(seq, records);
    model.push([seq, records]);
    if (i % 5 === 4) {
      durable = seq - (i % 4);
      backlog.durableUpTo(durable);
      while (model.length > 0 && model[0]![0] <= durable) model.shift();
    }
    if (backlog.records !== model.reduce((sum, [, r]) => sum + r, 0)) mismatches += 1;
  }
  t.equal(mismatches, 0, 'the count equals the model after every step');
});
