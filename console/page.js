// What every console page shares: the render token that drops a late answer of a page the user already left, and
// the box that shows an API error with its status.
import { ApiError } from './api.js';
import { h, message } from './dom.js';

let renderToken = 0;

export function nextPage() {
  return ++renderToken;
}

export function stillCurrent(token) {
  return token === renderToken;
}

/** The API's error with its status; the reasons a 409 lists (code: explanation) each on a line of their own. */
export function errorBox(error) {
  if (!(error instanceof ApiError)) return message('error', String(error?.message ?? error));
  const box = message('error', `${error.status}: ${error.message}`);
  const reasons = Array.isArray(error.body?.reasons) ? error.body.reasons : [];
  if (reasons.length > 0) box.append(reasonList(reasons));
  return box;
}

export function reasonList(reasons) {
  return h('ul', { className: 'reasons' }, reasons.map((r) => h('li', null, h('code', null, String(r.code)), `: ${r.message}`)));
}
