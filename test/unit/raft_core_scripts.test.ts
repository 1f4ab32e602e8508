// Goal: the Raft core behaves, message by message, as the checked-in scripts in test/unit/raft_scripts/*.txt say
// (etcd's interaction tests, datadriven style). Each script cites the Raft paper or thesis section it covers.
// Method: each command drives an in-memory Cluster of simulated shells (test/sim/raft/cluster.ts) and prints what
// happened: readies (soft and hard state, entries, committed, messages), deliveries, states. The printed output
// must equal the text after `----`; UPDATE_SCRIPTS=1 rewrites the files with the output produced instead.
//
// Script format: `# comment` and blank lines are kept; a command line, then `----`, then its output up to the
// next blank line ("ok" when it printed nothing). Commands (ids are node ids):
//   add-nodes <n> [voters=(1,2,3)] [prevote=false] [checkquorum=false] [max-entries=N] [election=N] [heartbeat=N]
//       n nodes with the next ids; with voters, each stores the bootstrap entries, else starts empty (joins later).
//       Options apply to every node of the script; randomized election timeouts are exactly `election` ticks.
//   campaign <id> | propose <id> <command> | add-learner <leader> <node> | add-voter <leader> <node>
//   remove-voter <leader> <node> | transfer-leadership from=<id> to=<id> | compact <id> <index>
//   tick <id> <n> | tick-election <id> | tick-heartbeat <id>   (node i's election timeout is always 10 + i - 1
//       ticks with election=10, so tick-election <id> makes exactly that node time out)
//   process-ready <id>... | deliver-msgs <id>... [drop=(<from ids>)]   (messages from drop ids are discarded)
//   duplicate-msgs <id>...   (every queued message to these nodes is queued a second time)
//   stabilize [<id>...]   (process readies and deliver until quiet; only these nodes when ids are given)
//   partition (<ids>) (<ids>)... | heal | crash <id> | restart <id>
//   raft-state | status <id> | raft-log <id> | applied <id>
import t from 'tap';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { LogEntry, Ready } from '../../src/raft/core/raft.js';
import { Cluster, type NodeOptions } from '../sim/raft/cluster.js';
import { fmtEntry, fmtMessage } from '../sim/raft/describe.js';

// Compiled to dist/test/unit; the scripts stay in the source tree.
const scriptDir = fileURLToPath(new URL('../../../test/unit/raft_scripts/', import.meta.url));
const update = process.env['UPDATE_SCRIPTS'] === '1';

type Item = { kind: 'text'; line: string } | { kind: 'command'; line: string; expected: string[] };

function parse(text: string): Item[] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const items: Item[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line.trim() === '' || line.startsWith('#')) {
      items.push({ kind: 'text', line });
      continue;
    }
    if (lines[i + 1] !== '----') throw new Error(`line ${i + 1}: command "${line}" is not followed by ----`);
    const expected: string[] = [];
    i += 2;
    while (i < lines.length && (lines[i] ?? '') !== '') expected.push(lines[i++] ?? '');
    items.push({ kind: 'command', line, expected });
    // The blank line ending the output is written back by format().
  }
  return items;
}

function format(items: Item[], outputs: string[][]): string {
  const out: string[] = [];
  let k = 0;
  for (const item of items) {
    if (item.kind === 'text') out.push(item.line);
    else out.push(item.line, '----', ...(outputs[k++] ?? []), '');
  }
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n').replace(/\n+$/, '')}\n`;
}

function ids(list: string): number[] {
  const m = /^\((.*)\)$/.exec(list);
  if (m === null) throw new Error(`expected (a,b,...), got ${list}`);
  return (m[1] ?? '').split(',').filter((s) => s.trim() !== '').map(Number);
}

function fmtReady(id: number, r: Ready<string>): string[] {
  const out = [`> ${id} handling Ready`];
  if (r.softState !== undefined) out.push(`  soft: ${r.softState.role}, leader ${r.softState.leader}`);
  if (r.hardState !== undefined) out.push(`  hard: term ${r.hardState.term} vote ${r.hardState.vote} commit ${r.hardState.commit}${r.mustSync ? '' : ' (no sync)'}`);
  if (r.snapshot !== undefined) out.push(`  snapshot: ${r.snapshot.index}@${r.snapshot.term} voters=(${r.snapshot.confState.voters.join(',')}) learners=(${r.snapshot.confState.learners.join(',')})`);
  if (r.entries.length > 0) out.push(`  entries: ${r.entries.map(fmtEntry).join(', ')}`);
  if (r.committed.length > 0) out.push(`  committed: ${r.committed.map(fmtEntry).join(', ')}`);
  for (const m of r.messages) out.push(`  send ${fmtMessage(m)}`);
  return out;
}

class Runner {
  private cluster: Cluster | null = null;
  private nextId = 1;

  private c(): Cluster {
    if (this.cluster === null) throw new Error('add-nodes first');
    return this.cluster;
  }

  run(line: string): string[] {
    const [command, ...args] = line.trim().split(/\s+/);
    const kv = new Map<string, string>();
    const positional: string[] = [];
    for (const a of args) {
      const eq = a.indexOf('=');
      if (eq > 0) kv.set(a.slice(0, eq), a.slice(eq + 1));
      else positional.push(a);
    }
    const num = (i: number): number => {
      const v = Number(positional[i]);
      if (!Number.isSafeInteger(v)) throw new Error(`${command}: argument ${i + 1} must be a number`);
      return v;
    };
    const out: string[] = [];
    switch (command) {
      case 'add-nodes': {
        if (this.cluster === null) {
          const options: NodeOptions = {};
          if (kv.has('prevote')) options.preVote = kv.get('prevote') === 'true';
          if (kv.has('checkquorum')) options.checkQuorum = kv.get('checkquorum') === 'true';
          if (kv.has('max-entries')) options.maxEntriesPerAppend = Number(kv.get('max-entries'));
          if (kv.has('election')) options.electionTicks = Number(kv.get('election'));
          if (kv.has('heartbeat')) options.heartbeatTicks = Number(kv.get('heartbeat'));
          this.cluster = new Cluster(options);
        }
        const voters = kv.has('voters') ? ids(kv.get('voters') ?? '') : null;
        const added = Array.from({ length: num(0) }, () => this.nextId++);
        this.c().add(added, voters);
        for (const id of added) out.push(this.stateLine(id));
        return out;
      }
      case 'campaign':
        this.c().shell(num(0)).node().campaign();
        return out;
      case 'propose': {
        const r = this.c().shell(num(0)).node().propose(positional[1] ?? '');
        out.push(r === null ? 'refused' : `index ${r.index} term ${r.term}`);
        return out;
      }
      case 'add-learner':
      case 'add-voter':
      case 'remove-voter': {
        const type = command === 'add-learner' ? 'addLearner' : command === 'add-voter' ? 'addVoter' : 'removeVoter';
        const r = this.c().shell(num(0)).node().proposeConfChange({ type, node: num(1) });
        out.push('refused' in r ? `refused: ${r.refused}` : `index ${r.index} term ${r.term}`);
        return out;
      }
      case 'transfer-leadership': {
        const ok = this.c().shell(Number(kv.get('from'))).node().transferLeadership(Number(kv.get('to')));
        out.push(ok ? 'started' : 'refused');
        return out;
      }
      case 'compact': {
        const s = this.c().shell(num(0)).compact(num(1));
        out.push(`snapshot ${s.index}@${s.term} voters=(${s.confState.voters.join(',')}) learners=(${s.confState.learners.join(',')})`);
        return out;
      }
      case 'tick':
        this.c().tick(num(0), num(1));
        return out;
      case 'tick-election':
        this.c().tick(num(0), this.c().electionTimeout(num(0)));
        return out;
      case 'tick-heartbeat':
        this.c().tick(num(0), this.c().options.heartbeatTicks);
        return out;
      case 'process-ready':
        for (const id of positional.map(Number)) {
          const r = this.c().processReady(id);
          out.push(...(r === null ? [`> ${id}: no Ready`] : fmtReady(id, r)));
        }
        return out;
      case 'deliver-msgs': {
        const drop = kv.has('drop') ? ids(kv.get('drop') ?? '') : [];
        for (const id of positional.map(Number)) out.push(...this.deliver(id, drop));
        return out;
      }
      case 'duplicate-msgs': {
        const c = this.c();
        const copies = c.queue.filter((m) => positional.map(Number).includes(m.to));
        c.queue.push(...copies);
        out.push(`${copies.length} duplicated`);
        return out;
      }
      case 'stabilize':
        return this.stabilize(positional.length > 0 ? positional.map(Number) : this.c().ids());
      case 'partition': {
        const groups = new Map<number, number>();
        positional.forEach((g, i) => ids(g).forEach((id) => groups.set(id, i)));
        this.c().groups = groups;
        return out;
      }
      case 'heal':
        this.c().groups = new Map();
        return out;
      case 'crash':
        this.c().shell(num(0)).crash();
        this.c().queue = this.c().queue.filter((m) => m.to !== num(0));
        return out;
      case 'restart':
        this.c().shell(num(0)).start();
        out.push(this.stateLine(num(0)));
        return out;
      case 'raft-state':
        for (const id of this.c().ids()) out.push(this.stateLine(id));
        return out;
      case 'status': {
        const s = this.c().shell(num(0)).node().status();
        out.push(`${s.id}: ${s.role} term ${s.term} leader ${s.leader} commit ${s.commit} applied ${s.applied} last ${s.lastIndex} snapshot ${s.snapshotIndex} voters=(${s.confState.voters.join(',')}) learners=(${s.confState.learners.join(',')}) sinceLeader ${s.ticksSinceLeaderContact}${s.transferee !== undefined ? ` transferee ${s.transferee}` : ''}`);
        for (const [id, p] of Object.entries(s.progress ?? {})) out.push(`  ${id}: match ${p.match} next ${p.next} ${p.state}${p.recentActive ? ' active' : ''}`);
        return out;
      }
      case 'raft-log': {
        const log = this.c().shell(num(0)).node().debugLog();
        if (log.snapshot !== null) out.push(`snapshot ${log.snapshot.index}@${log.snapshot.term}`);
        for (const e of log.entries) out.push(fmtEntry(e as LogEntry));
        if (out.length === 0) out.push('empty');
        return out;
      }
      case 'applied':
        out.push(this.c().shell(num(0)).applied.join(' ') || 'nothing');
        return out;
      default:
        throw new Error(`unknown command ${command}`);
    }
  }

  private stateLine(id: number): string {
    const shell = this.c().shell(id);
    if (!shell.up) return `${id}: down`;
    const s = shell.node().status();
    return `${id}: ${s.role} term ${s.term} leader ${s.leader} commit ${s.commit} last ${s.lastIndex} voters=(${s.confState.voters.join(',')}) learners=(${s.confState.learners.join(',')})`;
  }

  private deliver(id: number, drop: number[]): string[] {
    const c = this.c();
    const pending = c.queue.filter((m) => m.to === id);
    if (pending.length === 0) return [];
    const out = [`> ${id} receiving messages`];
    const [delivered, dropped] = c.deliver(id, (m) => drop.includes(m.from));
    for (const m of delivered) out.push(`  ${fmtMessage(m)}`);
    for (const m of dropped) out.push(`  dropped: ${fmtMessage(m)}`);
    return out;
  }

  private stabilize(nodes: number[]): string[] {
    const out: string[] = [];
    for (let round = 0; round < 100; round++) {
      let busy = false;
      for (const id of nodes) {
        const r = this.c().processReady(id);
        if (r !== null) {
          busy = true;
          out.push(...fmtReady(id, r));
        }
      }
      for (const id of nodes) {
        const lines = this.deliver(id, []);
        if (lines.length > 0) busy = true;
        out.push(...lines);
      }
      if (!busy) return out;
    }
    throw new Error('stabilize: still busy after 100 rounds');
  }
}

const files = readdirSync(scriptDir).filter((f) => f.endsWith('.txt')).sort();

t.test('every script cites the Raft paper or thesis', async (t) => {
  t.ok(files.length >= 10, `${files.length} scripts`);
  for (const file of files) t.match(readFileSync(scriptDir + file, 'utf8'), /^# .*(Raft paper|Raft thesis|thesis §|§\d)/m, file);
});

for (const file of files) {
  t.test(file, async (t) => {
    const text = readFileSync(scriptDir + file, 'utf8');
    const items = parse(text);
    const runner = new Runner();
    const outputs: string[][] = [];
    for (const item of items) {
      if (item.kind !== 'command') continue;
      let out: string[];
      try {
        out = runner.run(item.line);
      } catch (error) {
        out = [`error: ${error instanceof Error ? error.message : String(error)}`];
      }
      outputs.push(out.length === 0 ? ['ok'] : out);
    }
    const produced = format(items, outputs);
    if (update) {
      if (produced !== text) writeFileSync(scriptDir + file, produced);
      t.pass('rewritten');
      return;
    }
    let k = 0;
    for (const item of items) {
      if (item.kind !== 'command') continue;
      t.same(outputs[k++], item.expected, item.line);
    }
  });
}
