// Strict JSON bodies (spec §7: an unknown field is 400) and the field checks handlers share. Front thread.
import { errors } from '../errors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as a JSON object whose fields are all in allowed; 400 otherwise. */
export function parseJsonObject(body: Uint8Array, allowed: readonly string[]): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(utf8.decode(body));
  } catch {
    throw errors.invalidJson();
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw errors.badRequest('body: must be a JSON object');
  for (const field of Object.keys(value)) {
    if (!allowed.includes(field)) throw errors.unknownField(field);
  }
  return value as Record<string, unknown>;
}

/** An optional integer field within [min, max]; undefined when absent. */
export function optionalInteger(body: Record<string, unknown>, field: string, min: number, max: number, rule?: string): number | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw errors.invalid(field, rule ?? `must be an integer from ${min} to ${max}`);
  }
  return value;
}

export function optionalString(body: Record<string, unknown>, field: string): string | undefined {
  const value = body[field];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw errors.invalid(field, 'must be a string');
  return value;
}
