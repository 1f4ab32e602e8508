// A preload for node processes under test (NODE_OPTIONS=--import=<this file's URL>): shifts Date.now on the main
// (front) thread by BROKER_TEST_FRONT_CLOCK_SHIFT_MS, leaving every worker thread's clock alone. The front stamps each
// produced message's timestamp, the partition workers judge retention by their own clock: a negative shift makes
// fresh messages look old to retention, which is how a test shows records the parent's retention deleted before
// they were copied (svc_fanout_child_dropped_messages) without waiting an hour.
import { isMainThread } from 'node:worker_threads';

const shiftMs = Number(process.env.BROKER_TEST_FRONT_CLOCK_SHIFT_MS ?? '0');
if (isMainThread && Number.isFinite(shiftMs) && shiftMs !== 0) {
  const realNow = Date.now.bind(Date);
  Date.now = () => realNow() + shiftMs;
}
