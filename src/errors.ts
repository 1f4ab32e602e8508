// Every operating error the API answers, declared once with its status (STYLE §5). The status is decided
// where the error is made, never guessed by a catch-all: anything that is not a BrokerError becomes a 500.
// Shared by every thread; errors cross ports as {status, error}, never as Error objects.

export class BrokerError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

export const errors = {
  /** 400: a body, query or path value breaks a rule; the message names the field and the rule. */
  invalid: (field: string, rule: string) => new BrokerError(400, `${field}: ${rule}`),
  /** 400: the request as a whole is malformed (no field to name). */
  badRequest: (message: string) => new BrokerError(400, message),
  /** 400: the body is not one JSON text. */
  invalidJson: () => new BrokerError(400, 'body: invalid JSON'),
  /** 400: a body field the route does not know (spec §7: bodies are strict). */
  unknownField: (field: string) => new BrokerError(400, `${field}: unknown field`),
  /** 400: a query parameter given more than once (NOTES 5). */
  givenTwice: (name: string) => new BrokerError(400, `${name}: given more than once`),
  /** 401: missing or wrong credentials (spec §5.1). */
  unauthorized: () => new BrokerError(401, 'missing or wrong credentials', { 'WWW-Authenticate': 'Basic realm="svc"' }),
  /** 404: no such topic. */
  topicNotFound: (name: string) => new BrokerError(404, `topic ${name} not found`),
  /** A refusal decided by applying a metadata command (409 exists, 404 gone, 400 rule): its status and text. */
  metadataRefused: (status: number, message: string) => new BrokerError(status, message),
  /** 410: replay of an offset below the oldest kept one (spec §4 Consume). */
  offsetAgedOut: (offset: number) => new BrokerError(410, `offset ${offset} aged out by retention`),
  /** 413: body over the route's cap (spec §8). */
  bodyTooLarge: (bytesMax: number) => new BrokerError(413, `body: larger than ${bytesMax} bytes`),
  /** 400 instead of 413 on user and attach-child routes (spec §8). */
  bodyTooLargeAs400: (bytesMax: number) => new BrokerError(400, `body: larger than ${bytesMax} bytes`),
  /** 415: spec §5.6, no accepted content type and no X-Svc-Client. */
  unsupportedContentType: () =>
    new BrokerError(415, 'Content-Type must be application/json or application/octet-stream, or send X-Svc-Client'),
  /** 415: Content-Encoding other than gzip or zstd on a batch produce (v3.2.0). */
  unsupportedContentEncoding: (encoding: string) =>
    new BrokerError(415, `Content-Encoding ${encoding} is not supported (use gzip or zstd)`),
  /** 429: the per-identity produce cap (spec §8, v3.1.0). */
  tooManyProduces: () =>
    new BrokerError(429, 'too many in-flight produce requests for this identity', { 'Retry-After': '1' }),
  /** 500: ingress log write failed; latched until restart (spec §7). */
  ingressFailed: () => new BrokerError(500, 'produce failed: ingress log unavailable'),
  /** 499: the client went away (recorded, never sent; spec §7). */
  clientGone: () => new BrokerError(499, 'client went away'),
  /** 500: the node could not do what was asked. */
  internal: (message = 'internal error') => new BrokerError(500, message),
  /** 501: a route whose work comes in a later release of this codebase. */
  notImplemented: () => new BrokerError(501, 'not implemented'),
  /** 503: the batch body budget is spent (spec §8, v3.2.0). */
  batchBudgetFull: () =>
    new BrokerError(503, 'batch body budget full, retry', { 'Retry-After': '1' }),
  /** 503: graceful shutdown under way. */
  shuttingDown: () => new BrokerError(503, 'node shutting down', { 'Retry-After': '1' }),
  /** 503: metadata could not be written (no leader, log unavailable). */
  metadataUnavailable: (message: string) => new BrokerError(503, message, { 'Retry-After': '1' }),
  /** 503: the bcrypt verification slots are gone (pool failure). */
  authenticationUnavailable: () => new BrokerError(500, 'authentication unavailable'),
} as const;
