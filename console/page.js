// What every console page shares: the render token that drops a late answer of a page the user already left, and
// the box that shows an API error with its status.
import { ApiError } from './api.js';
import { message } from './dom.js';

let renderToken = 0;

export function nextPage() {
  return ++renderToken;
}

export function stillCurrent(token) {
  return token === renderToken;
}

export function errorBox(error) {
  if (error instanceof ApiError) return message('error', `${error.status}: ${error.message}`);
  return message('error', String(error?.message ?? error));
}
