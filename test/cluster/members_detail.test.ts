// Goal: GET /v1/cluster/members?detail=true (spec §2 Cluster member, §4; issue 29 point 6): through any node, every
// member carries its own report (draining mark, produce requests admitted and not yet answered, ingress messages not
// yet handed to owners, set-aside copies, moves as destination) read from that member, not from the answering node;
// a member that cannot answer gets status_error instead of a report, whether it is stopped (holds its connections,
// answers nothing: the 2 s budget runs out) or SIGKILLed, and the others still report; a message held for a stopped
// owner shows in the holder's report until the owner takes it.
// Method: black box on 3 real node processes on loopback. A produce whose body is half sent is admitted and not
// answered, so the member that took it reports 1 while the others report 0.
import { connect, type Socket } from 'node:net';
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';

type Member = Record<string, unknown>;

const reportFields = ['draining', 'produce_requests_in_flight', 'ingress_messages_not_handed_off', 'set_aside_copies', 'moves_as_destination'];

async function detailed(cluster: TestCluster, via: number): Promise<Member[]> {
  const res = await cluster.client(via).get('/v1/cluster/members?detail=true', { timeoutMs: 10_000 });
  if (res.status !== 200) throw new Error(`members detail through node ${via}: ${res.status} ${res.text}`);
  return (res.json() as { members: Member[] }).members;
}

/**
 * Asks for the detail until only the member `down` ('none': no member) lacks a report, up to 30 s. The 2 s budget is for every member's
 * answer together (spec §4): on a busy machine a live member may miss it too and rightly get status_error, which
 * says nothing about the member under test, so that answer is asked again rather than failed.
 */
async function detailedWithOnlyDown(cluster: TestCluster, via: number, down: string): Promise<Member[]> {
  let members = await detailed(cluster, via);
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; members = await detailed(cluster, via)) {
    if (members.every((m) => (m.id === down) === (m.status_error !== undefined))) break;
  }
  return members;
}

/** A produce whose headers and half of its body are sent, held open until the socket is destroyed. */
function halfSentProduce(port: number, auth: string, path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\n` +
        'Content-Length: 20\r\n\r\n{"half":');
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

t.test('every member reports itself through any node; a stopped or killed member gets status_error', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.ok(await cluster.membersAlive(leader));
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'md', partitions: 3 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/md', 10_000));

  for (const via of [1, 2, 3]) {
    const members = await detailedWithOnlyDown(cluster, via, 'none');
    t.same(members.map((m) => m.id), ['1', '2', '3'], `node ${via}: every member`);
    for (const member of members) {
      t.equal(member.status_error, undefined, `node ${via}: member ${member.id} reported`);
      t.same(reportFields.filter((field) => member[field] === undefined), [], `node ${via}: member ${member.id} has every report field`);
      t.equal(member.draining, false);
      t.equal(member.produce_requests_in_flight, 0);
      t.equal(member.ingress_messages_not_handed_off, 0);
      t.same(member.set_aside_copies, { count: 0, total_size_bytes: 0, copies: [] });
      t.same(member.moves_as_destination, []);
    }
  }

  // The report is the member's own: node 3's admitted, unanswered produce shows on member 3 through node 1.
  const held = await halfSentProduce(cluster.nodes.get(3)!.port, cluster.auth, '/v1/topics/md/produce');
  try {
    const seen = await eventually(async () => {
      const members = await detailed(cluster, 1);
      return members.map((m) => m.produce_requests_in_flight).join() === '0,0,1';
    }, 20_000);
    t.ok(seen, 'member 3 reports the produce it holds; members 1 and 2 report none');
  } finally {
    held.destroy();
  }
  t.ok(await eventually(async () => (await detailed(cluster, 1)).every((m) => m.produce_requests_in_flight === 0), 5_000),
    'the count goes back to 0 once the client left');

  // Stopped: connections stay open and nothing answers, so only the 2 s budget ends the wait. A produce node 1 took
  // for node 2's partition meanwhile waits in node 1's ingress log for its owner.
  const owners = ((await cluster.client(1).get('/v1/topics/md')).json() as { partition_stats: { owner_node: string }[] })
    .partition_stats.map((p) => Number(p.owner_node));
  const stopped = cluster.nodes.get(2)!.process;
  stopped.kill('SIGSTOP');
  let whileStopped: Member[];
  let heldProduce: number;
  try {
    heldProduce = (await cluster.client(1).post(`/v1/topics/md/produce?partition=${owners.indexOf(2)}`, { held: true })).status;
    whileStopped = await detailedWithOnlyDown(cluster, 1, '2');
  } finally {
    stopped.kill('SIGCONT');
  }
  t.equal(heldProduce, 202, 'a produce for the stopped owner\'s partition is taken (before membership marks it dead)');
  t.equal(whileStopped.find((m) => m.id === '1')?.ingress_messages_not_handed_off, 1, 'member 1 reports the message it holds for node 2');
  t.ok(await eventually(async () => (await detailed(cluster, 1)).every((m) => m.ingress_messages_not_handed_off === 0), 15_000),
    'handed off once the owner runs again: every member reports 0');
  t.match(whileStopped.find((m) => m.id === '2')?.status_error, /could not be read/, 'a stopped member: status_error');
  t.equal(whileStopped.find((m) => m.id === '2')?.draining, undefined, 'and no report fields');
  t.same(whileStopped.filter((m) => m.id !== '2').map((m) => [m.id, m.status_error, m.draining]), [['1', undefined, false], ['3', undefined, false]],
    'the others still report');

  await cluster.kill(3);
  const afterKill = await detailedWithOnlyDown(cluster, 2, '3');
  t.same(afterKill.map((m) => m.id), ['1', '2', '3'], 'a killed member is still listed');
  t.match(afterKill.find((m) => m.id === '3')?.status_error, /could not be read/, 'a SIGKILLed member: status_error');
  t.same(afterKill.filter((m) => m.id !== '3').map((m) => [m.id, m.status_error, m.draining]), [['1', undefined, false], ['2', undefined, false]],
    'the live members still report');
});
