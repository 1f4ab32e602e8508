// The Cluster page (admin): the members with liveness, Raft role, partitions owned and moving off, decommission state
// and what blocks it; per member, decommission (a dry run's plan is shown first and nothing changes until it is
// confirmed), cancel and forget; and the partition moves under way with an abort each. A dead member's decommission
// can accept data loss (its partitions go to live members empty): a checkbox that says so, shown for dead members only.
import { api, ApiError } from './api.js';
import { h, message, show, table } from './dom.js';
import { errorBox, reasonList, stillCurrent } from './page.js';

const memberPath = (id, rest) => `/v1/cluster/members/${encodeURIComponent(id)}${rest}`;

/** notice: what the last action did, shown above the table after the page is drawn again. */
export async function renderCluster(el, token, notice = null) {
  show(el, h('h1', null, 'Cluster members'), h('p', { className: 'muted' }, 'Loading…'));
  try {
    const { data } = await api('GET', '/v1/cluster/members');
    if (!stillCurrent(token)) return;
    const page = {
      reload: (next) => renderCluster(el, token, next ?? null),
      status: h('div', { id: 'member-action' }, notice),
      preview: h('section', { className: 'panel', id: 'decommission', hidden: true }),
    };
    const moves = h('section', { className: 'panel', id: 'moves-panel' }, h('h2', null, 'Partition moves'), h('p', { className: 'muted' }, 'Loading…'));
    const leader = data.members.find((m) => m.raft_leader);
    show(el, h('h1', null, 'Cluster members ', h('button', { className: 'plain', type: 'button', onclick: () => page.reload() }, 'Refresh')),
      leader ? h('p', null, `Raft leader: node ${leader.id} (${leader.api_address})`) : message('error', 'No Raft leader known to this node.'),
      table(['ID', 'API address', 'Liveness', 'Raft', '#Partitions owned', '#Moving off', '#Seconds since heartbeat', 'Decommissioning',
        'Decommission blocked by', 'Actions'], data.members.map((m) => memberRow(m, page)), { id: 'members' }),
      page.status, page.preview, moves);
    await drawMoves(moves, token, page);
  } catch (error) {
    if (stillCurrent(token)) show(el, h('h1', null, 'Cluster members'), errorBox(error));
  }
}

function memberRow(m, page) {
  const blocked = (m.decommission_blocked_reasons ?? []).map((r, i) => [i > 0 ? ', ' : '', h('span', { title: r.message }, r.code)]);
  return [m.id, m.api_address, h('span', { className: m.liveness }, m.liveness),
    m.raft_leader ? 'leader' : m.raft_voter ? 'voter' : m.raft_learner ? 'learner' : '', m.partitions_owned,
    m.partitions_moving_off, m.seconds_since_heartbeat ?? '', m.decommissioning ? 'yes' : 'no', blocked, memberActions(m, page)];
}

function memberActions(m, page) {
  const button = (action, text, onclick, className) => h('button', { type: 'button', className, dataset: { action, member: m.id }, onclick }, text);
  return h('div', { className: 'actions' },
    m.decommissioning ? button('cancel', 'Cancel decommission', () => cancel(m, page), 'plain')
      : button('decommission', 'Decommission…', () => previewDecommission(m, page)),
    m.liveness === 'dead' || m.decommissioning ? button('forget', 'Forget…', () => confirmForget(m, page), 'plain') : null);
}

async function cancel(m, page) {
  try {
    await api('POST', memberPath(m.id, '/decommission/cancel'), {});
    page.reload(message('ok', `Decommission of member ${m.id} cancelled; moves not yet flipped go back.`));
  } catch (error) {
    show(page.status, errorBox(error));
  }
}

/** Forget cannot be undone: a second button, next to what it does, confirms it. */
function confirmForget(m, page) {
  const forget = async () => {
    try {
      await api('POST', memberPath(m.id, '/forget'), {});
      page.reload(message('ok', `Member ${m.id} forgotten.`));
    } catch (error) {
      show(page.status, errorBox(error));
    }
  };
  show(page.status, h('div', { className: 'panel confirm' },
    h('p', null, `Forget member ${m.id}: its member record and Raft seat are removed for good.`),
    h('button', { type: 'button', id: 'forget-confirm', onclick: forget }, `Forget member ${m.id}`),
    h('button', { type: 'button', className: 'plain', onclick: () => show(page.status) }, 'Keep it')));
}

/** The dry run's plan and reasons first (dry_run=true changes nothing); the decommission starts only on the button. */
async function previewDecommission(m, page) {
  const dead = m.liveness === 'dead';
  const accept = h('input', { type: 'checkbox', name: 'accept-data-loss' });
  const plan = h('div', { id: 'decommission-plan' });
  const result = h('div', { id: 'decommission-result' });
  const body = (dryRun) => ({ dry_run: dryRun, accept_data_loss: dead && accept.checked });
  const dryRun = async () => {
    show(plan, h('p', { className: 'muted' }, 'Planning…'));
    try {
      show(plan, planView(m, (await api('POST', memberPath(m.id, '/decommission'), body(true))).data));
    } catch (error) {
      show(plan, errorBox(error));
    }
  };
  const start = async () => {
    try {
      const { data } = await api('POST', memberPath(m.id, '/decommission'), body(false));
      page.reload([message('ok', `Decommission of member ${m.id} started.`), lossNotice(m, data.records_only_on_member, 'are')]);
    } catch (error) {
      show(result, errorBox(error));
    }
  };
  accept.addEventListener('change', dryRun);
  page.preview.hidden = false;
  show(page.preview, h('h2', null, `Decommission member ${m.id}: dry run`),
    h('p', { className: 'muted' }, 'Nothing has changed yet. Once started, the member takes no new produce, its partitions are '
      + 'copied to live members, and when it holds nothing it can be forgotten.'),
    dead ? h('label', { className: 'check data-loss' }, accept, `Accept data loss: member ${m.id} is dead, so its partitions cannot be `
      + 'copied. Give them to live members empty; the records only this member held are lost.') : null,
    plan,
    h('div', { className: 'actions' }, h('button', { type: 'button', id: 'decommission-start', onclick: start }, `Decommission member ${m.id}`),
      h('button', { type: 'button', className: 'plain', onclick: () => (page.preview.hidden = true) }, 'Close')),
    result);
  await dryRun();
}

function planView(m, data) {
  const moves = data.moves.map((x) => [x.topic, x.partition, x.source, x.destination, x.copy === false ? 'no: given away empty' : 'yes']);
  return h('div', null,
    h('h3', null, 'Planned moves'),
    moves.length === 0 ? h('p', { className: 'muted', id: 'decommission-no-moves' }, 'No partitions to move.')
      : table(['Topic', '#Partition', 'From', 'To', 'Copied'], moves, { id: 'decommission-moves' }),
    h('h3', null, 'Blocked by'),
    data.reasons.length === 0 ? h('p', { id: 'decommission-reasons' }, 'Nothing blocks it now.')
      : h('div', { id: 'decommission-reasons' }, reasonList(data.reasons),
        h('p', { className: 'muted' }, 'below_min_voters, no_healthy_majority and no_receivers refuse it (409); the others hold it up while it runs.')),
    lossNotice(m, data.records_only_on_member, 'would be'));
}

function lossNotice(m, records, verb) {
  if (records === undefined) return null;
  return message('error', `Data loss accepted: ${records} records only member ${m.id} held ${verb} lost.`);
}

async function drawMoves(panel, token, page) {
  try {
    const { data } = await api('GET', '/v1/cluster/moves');
    if (!stillCurrent(token)) return;
    const rows = data.moves.map((x) => [x.topic, x.partition, x.source, x.destination,
      x.stuck_reason ? h('span', { className: 'bad' }, `${x.worker_state} (${x.stuck_reason})`) : x.worker_state,
      x.attempts, x.bytes_fetched, x.started_at, x.last_error, abortButton(x, page)]);
    show(panel, h('h2', null, 'Partition moves'), rows.length === 0 ? h('p', { className: 'muted', id: 'no-moves' }, 'No partition moves under way.')
      : table(['Topic', '#Partition', 'From', 'To', 'State', '#Attempts', '#Bytes fetched', 'Started', 'Last error', 'Abort'], rows, { id: 'moves' }));
  } catch (error) {
    if (!stillCurrent(token)) return;
    // A node of a release before partition moves has no such route.
    show(panel, h('h2', null, 'Partition moves'), error instanceof ApiError && error.status === 404
      ? h('p', { className: 'muted', id: 'moves-unavailable' }, 'Partition moves not available: this node answers 404 (a release before them).')
      : errorBox(error));
  }
}

function abortButton(move, page) {
  const path = `/v1/cluster/moves/${encodeURIComponent(move.topic)}/${move.partition}/abort`;
  return h('button', { type: 'button', className: 'plain', dataset: { action: 'abort-move' }, onclick: async () => {
    try {
      await api('POST', path, {});
      page.reload(message('ok', `Move of ${move.topic} partition ${move.partition} aborted: it stays with member ${move.source}.`));
    } catch (error) {
      show(page.status, errorBox(error));
    }
  } }, 'Abort');
}
