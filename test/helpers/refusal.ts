// Test helper: an apply result as the client would get it. The state machine refuses with a catalog id
// (src/errors.ts); tests of its rules keep asserting the status and the text the API answers.
import { refusalError } from '../../src/errors.js';
import type { ApplyResult } from '../../src/metadata/state.js';

export type Answered = Exclude<ApplyResult, { ok: false }> | { ok: false; status: number; error: string };

export function answered(result: ApplyResult): Answered {
  if (result.ok) return result;
  const error = refusalError(result.refusal);
  return { ok: false, status: error.status, error: error.message };
}
