// The console's entry: hash routes (#/topics, #/topic/NAME, #/users, #/cluster), the login form, and the topics
// list with its create form. Pages render into <main>; a failed call shows the API's error text in place.
import { api, ApiError, currentUser, login, logout, topicPath, whenUnauthorized } from './api.js';
import { field, h, message, show, table } from './dom.js';
import { renderTopic } from './topic.js';
import { renderUsers } from './admin.js';
import { renderCluster } from './cluster.js';
import { errorBox, nextPage, stillCurrent } from './page.js';

const main = document.getElementById('main');
const nav = document.getElementById('nav');

function route() {
  const token = nextPage();
  if (currentUser() === null) return renderLogin();
  nav.hidden = false;
  show(document.getElementById('who'), `signed in as ${currentUser()}`);
  const hash = location.hash || '#/topics';
  for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', hash.startsWith(a.getAttribute('href')));
  const topicMatch = /^#\/topic\/(.+)$/.exec(hash);
  if (topicMatch) return renderTopic(main, safeDecode(topicMatch[1]), token);
  if (hash === '#/users') return renderUsers(main, token);
  if (hash === '#/cluster') return renderCluster(main, token);
  return renderTopics(main, token);
}

/** A hand-typed hash with a stray % must not break the page: it is then taken as written. */
function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

function renderLogin(problem) {
  nav.hidden = true;
  const user = h('input', { name: 'username', autocomplete: 'username', required: true });
  const password = h('input', { name: 'password', type: 'password', autocomplete: 'current-password' });
  const form = h('form', { className: 'stack', id: 'login', onsubmit: (e) => submitLogin(e, user.value, password.value) },
    field('User', user), field('Password', password), h('button', { type: 'submit' }, 'Log in'));
  show(main, h('h1', null, 'Log in'), problem ? message('error', problem) : null, form);
  user.focus();
}

async function submitLogin(event, username, password) {
  event.preventDefault();
  login(username, password);
  try {
    // Any authenticated route checks the credentials; the topic list is the first page shown anyway.
    await api('GET', '/v1/topics?limit=1');
    route();
  } catch (error) {
    logout();
    renderLogin(error instanceof ApiError && error.status === 401 ? 'Wrong user or password.' : errorBox(error).textContent);
  }
}

/** Reads a topic's details for the statistics columns; a topic that fails shows its status instead. */
async function topicDetails(name) {
  try {
    return (await api('GET', topicPath(name))).data;
  } catch (error) {
    return { error };
  }
}

/** A placeholder of an unavailable owner (status owner_unavailable) is never added to totals (spec). */
function sum(stats, key) {
  return (stats ?? []).filter((p) => p.status === 'ok').reduce((total, p) => total + (p[key] ?? 0), 0);
}

function topicRow(topic, detail) {
  const stats = detail.partition_stats;
  const link = h('a', { href: `#/topic/${encodeURIComponent(topic.name)}` }, topic.name);
  const related = topic.role === 'parent' ? `children: ${(topic.children ?? []).join(', ')}` : topic.role === 'child' ? `parent: ${topic.parent}` : '';
  if (detail.error) return [link, topic.role, topic.partitions, '', '', '', related, `${detail.error.status ?? ''} ${detail.error.message}`];
  return [link, topic.role, topic.partitions, sum(stats, 'high_watermark') - sum(stats, 'oldest_offset'),
    sum(stats, 'next_offset'), sum(stats, 'size_bytes'), related, detail.partial ? 'partial: some owners down' : 'ok'];
}

const topicsPerPage = 50;

async function renderTopics(el, token, pageToken = '') {
  // The create form is drawn once: what the user types while the list loads is kept.
  const list = h('div', null, h('p', { className: 'muted' }, 'Loading…'));
  show(el, h('h1', null, 'Topics'), createTopicForm(), list);
  await drawTopicList(list, token, pageToken);
}

async function drawTopicList(list, token, pageToken) {
  try {
    const query = `?limit=${topicsPerPage}${pageToken ? `&page_token=${encodeURIComponent(pageToken)}` : ''}`;
    const { data } = await api('GET', `/v1/topics${query}`);
    const details = await Promise.all(data.topics.map((t) => topicDetails(t.name)));
    if (!stillCurrent(token)) return;
    const rows = data.topics.map((t, i) => topicRow(t, details[i]));
    show(list,
      rows.length === 0 ? h('p', { className: 'muted' }, 'No topics you can read.') : table(
        ['Name', 'Role', '#Partitions', '#Messages held', '#Next offsets (sum)', '#Bytes', 'Fan-out', 'Status'], rows, { id: 'topics' }),
      data.next_page_token ? h('button', { className: 'plain', onclick: () => drawTopicList(list, token, data.next_page_token) }, 'Next page') : null);
  } catch (error) {
    if (stillCurrent(token)) show(list, errorBox(error));
  }
}

function createTopicForm() {
  const name = h('input', { name: 'name', required: true, pattern: '[A-Za-z0-9._\\-]{1,200}', placeholder: 'orders' });
  const partitions = h('input', { name: 'partitions', type: 'number', min: 3, placeholder: '3' });
  const parent = h('input', { name: 'parent', placeholder: '(none)' });
  const delay = h('input', { name: 'fanout-delay', type: 'number', min: 0, placeholder: '(with parent)' });
  const status = h('div');
  const form = h('form', { id: 'create-topic', onsubmit: async (e) => {
    e.preventDefault();
    const body = { name: name.value };
    if (partitions.value !== '') body.partitions = Number(partitions.value);
    if (parent.value !== '') body.parent = parent.value;
    if (delay.value !== '') body.fanout_delay_ms = Number(delay.value);
    try {
      await api('POST', '/v1/topics', body);
      location.hash = `#/topic/${encodeURIComponent(body.name)}`;
    } catch (error) {
      show(status, errorBox(error));
    }
  } }, field('New topic', name), field('Partitions', partitions), field('Fan-out parent', parent),
  field('Fan-out delay ms', delay), h('button', { type: 'submit' }, 'Create'));
  return h('div', null, form, status);
}

whenUnauthorized(() => renderLogin('Your session ended or the credentials were refused: log in again.'));
document.getElementById('logout').addEventListener('click', () => {
  logout();
  renderLogin();
});
window.addEventListener('hashchange', route);
route();
