// The console's one way to the HTTP API: Basic credentials built in the browser and kept only in this page's memory
// (never in sessionStorage or any other storage a script or a disk could read back: a reload or a closed tab logs
// out), JSON in and out, and an ApiError carrying the status and the API's error text. A 401 anywhere clears the
// credentials and sends the user back to the login form.

/** The Authorization value and its user while logged in, else null. */
let session = null;

/** An answer other than 2xx: its status, the API's error text and, for a JSON error, the parsed body (a 409 to a
 *  decommission lists its reasons there). */
export class ApiError extends Error {
  constructor(status, text, body = null) {
    super(text || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

let onUnauthorized = () => {};

export function whenUnauthorized(listener) {
  onUnauthorized = listener;
}

export function login(username, password) {
  // Basic credentials are base64 of the UTF-8 bytes of user:password (RFC 7617); btoa takes only Latin-1.
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  session = { authorization: `Basic ${btoa(binary)}`, username };
}

export function logout() {
  session = null;
}

export function currentUser() {
  return session === null ? null : session.username;
}

/** One API call. body: an object sent as JSON, or { raw, contentType } sent as is. Resolves to { status, data }. */
export async function api(method, path, body) {
  const headers = { 'X-Svc-Client': 'svc-console' };
  if (session !== null) headers.Authorization = session.authorization;
  let payload;
  if (body !== undefined && body.raw !== undefined) {
    payload = body.raw;
    headers['Content-Type'] = body.contentType;
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  // credentials 'omit': the browser never shows its own Basic prompt on a 401 nor sends stored credentials.
  const res = await fetch(path, { method, headers, body: payload, credentials: 'omit', cache: 'no-store' });
  const text = await res.text();
  if (res.status === 401) {
    logout();
    onUnauthorized();
  }
  if (!res.ok) throw errorOf(res.status, text);
  let data = null;
  if (text !== '' && (res.headers.get('content-type') ?? '').startsWith('application/json')) data = JSON.parse(text);
  return { status: res.status, data, headers: res.headers };
}

function errorOf(status, text) {
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed.error === 'string') return new ApiError(status, parsed.error, parsed);
  } catch {
    // A plain-text error (404 unknown route, 405, 502): shown as it came.
  }
  return new ApiError(status, text.slice(0, 500));
}

export function topicPath(name, rest = '') {
  return `/v1/topics/${encodeURIComponent(name)}${rest}`;
}
