// Goal: the durability proof of spec 1.2: every message answered 202 survives a SIGKILL of the node and is stored
// exactly once after the restart; a message never answered 202 may be absent but is never stored twice.
// Method: 3 trials of test/helpers/crash_scenario.ts (32 concurrent producers, half single and half batch produce,
// for a random 300-1500 ms on a 6-partition topic; SIGKILL; restart on the same data dir; read every partition back
// by replay until 204 and count each unique id). scripts/crash_loop.ts runs the same scenario many times.
import t from 'tap';
import { describeTrial, runCrashTrial } from '../helpers/crash_scenario.js';

const trials = 3;

for (let index = 1; index <= trials; index++) {
  t.test(`crash trial ${index}`, async (t) => {
    // idsMax bounds the read-back (replay reads one offset per request) so the file stays well under a minute.
    const result = await runCrashTrial({ readBackTimeoutMs: 12_000, idsMax: 30_000, log: (line) => t.comment(line) });
    t.comment(describeTrial(index, result));
    t.equal(result.error, undefined, 'the trial ran to the end');
    t.ok(result.ackedIds > 0, 'some messages were acknowledged before the kill');
    t.same(result.statusesBeforeKill, {}, 'no refusal before the kill');
    t.same(result.missing.slice(0, 20), [], `no acknowledged id missing (${result.missing.length} missing)`);
    t.same(result.duplicates.slice(0, 20), [], `no id stored twice (${result.duplicates.length} duplicated)`);
    t.same(result.unknown.slice(0, 20), [], 'no id that was never sent');
    if (!result.ok && result.nodeOutputTail) t.comment(result.nodeOutputTail);
  });
}
