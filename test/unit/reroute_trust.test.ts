// Goal: the reroute (issue 41 point 5) moves records away from an owner only when its hand-offs failed for 3 s or the
// leader's liveness view marks it dead; a view in which the leader itself is dead (a node just restarted, before the
// leader's first view, where every other member looks dead) moves nothing.
// Method: a Reroute over stand-ins for the hand-off and the metadata copy; which owners it asks for owed frames.
import t from 'tap';
import type { Handoff } from '../../src/front/ingress/handoff.js';
import type { IngressLog } from '../../src/front/ingress/ingress_log.js';
import { Reroute } from '../../src/front/ingress/reroute.js';
import type { MetadataState } from '../../src/protocol/metadata_types.js';
import { createLogger } from '../../src/util/log.js';

/** The owners a Reroute over this view asks for what they are owed within a few of its checks. */
async function ownersAsked(status: { deadMembers: number[]; leader: number }, failing: number[] = []): Promise<number[]> {
  const asked = new Set<number>();
  const handoff = {
    reroutable: () => [2, 3],
    failingLong: (owner: number) => failing.includes(owner),
    owedPastMark: (owner: number) => {
      asked.add(owner);
      return null;
    },
  } as unknown as Handoff;
  const replica = { state: { topics: new Map() } as unknown as MetadataState, appliedIndex: 0, clusterStatus: status };
  const reroute = new Reroute({
    nodeId: 1, placement: { partition: () => null }, replica, handoff, ingress: { failed: false } as IngressLog, log: createLogger('silent'),
  });
  reroute.start();
  await new Promise((resolve) => setTimeout(resolve, 600));
  await reroute.close();
  return [...asked].sort();
}

t.test('a dead mark counts only in the leader\'s view', async (t) => {
  t.same(await ownersAsked({ deadMembers: [3], leader: 2 }), [3], 'the leader\'s view marks 3 dead');
  t.same(await ownersAsked({ deadMembers: [3], leader: 1 }), [3], 'this node leads');
  t.same(await ownersAsked({ deadMembers: [2, 3], leader: 2 }), [], 'the leader itself dead: this node\'s own guess');
  t.same(await ownersAsked({ deadMembers: [2, 3], leader: 0 }), [], 'no leader known');
  t.same(await ownersAsked({ deadMembers: [2, 3], leader: 0 }, [3]), [3], 'failing hand-offs count anyway');
  t.same(await ownersAsked({ deadMembers: [], leader: 2 }), [], 'nobody dead, nobody failing');
});
