// The Users page (admin): users with their grants (list, create, replace grants); the Cluster page is cluster.js.
// Grants are edited as text, one per line: `action pattern, pattern` (admin takes no pattern).
import { api } from './api.js';
import { field, h, show, table } from './dom.js';
import { errorBox, stillCurrent } from './page.js';

export function grantsToText(grants) {
  return (grants ?? []).map((g) => (g.patterns?.length ? `${g.action} ${g.patterns.join(', ')}` : g.action)).join('\n');
}

export function textToGrants(text) {
  return text.split('\n').map((line) => line.trim()).filter((line) => line !== '').map((line) => {
    const [action, ...rest] = line.split(/\s+/);
    const patterns = rest.join(' ').split(',').map((p) => p.trim()).filter((p) => p !== '');
    return patterns.length > 0 ? { action, patterns } : { action };
  });
}

export async function renderUsers(el, token) {
  show(el, h('h1', null, 'Users'), h('p', { className: 'muted' }, 'Loading…'));
  try {
    const { data } = await api('GET', '/v1/users');
    if (!stillCurrent(token)) return;
    const rows = data.map((u) => [u.username, u.root ? 'root admin' : '', grantsCell(u, () => renderUsers(el, token))]);
    show(el, h('h1', null, 'Users'), createUserForm(() => renderUsers(el, token)),
      table(['User', 'Account', 'Grants (one per line: action pattern, pattern)'], rows, { id: 'users' }));
  } catch (error) {
    if (stillCurrent(token)) show(el, h('h1', null, 'Users'), errorBox(error));
  }
}

function grantsCell(user, reload) {
  if (user.root) return h('code', null, grantsToText(user.grants));
  const text = h('textarea', { name: `grants-${user.username}`, value: grantsToText(user.grants) });
  const status = h('div');
  const form = h('form', { onsubmit: async (e) => {
    e.preventDefault();
    try {
      await api('PUT', `/v1/users/${encodeURIComponent(user.username)}/grants`, { grants: textToGrants(text.value) });
      reload();
    } catch (error) {
      show(status, errorBox(error));
    }
  } }, text, h('button', { type: 'submit' }, 'Save grants'));
  return h('div', null, form, status);
}

function createUserForm(reload) {
  const username = h('input', { name: 'username', required: true });
  const password = h('input', { name: 'new-password', type: 'password', required: true, autocomplete: 'new-password' });
  const grants = h('textarea', { name: 'grants', placeholder: 'produce orders.*\nconsume orders.*' });
  const status = h('div');
  const form = h('form', { id: 'create-user', onsubmit: async (e) => {
    e.preventDefault();
    try {
      await api('POST', '/v1/users', { username: username.value, password: password.value, grants: textToGrants(grants.value) });
      reload();
    } catch (error) {
      show(status, errorBox(error));
    }
  } }, field('New user', username), field('Password', password), field('Grants', grants), h('button', { type: 'submit' }, 'Create user'));
  return h('section', { className: 'panel' }, h('h2', null, 'Create a user'), form, status);
}
