// A piscina task of the work pool: checks a schema document a topic create or PATCH asks to register
// (src/schema/registration.ts). Runs on a pool thread; the front thread (src/front/topic_schema.ts) proposes what
// it answers.
import { prepareSchema, type PreparedSchema, type SchemaCandidate } from '../schema/registration.js';

export default function runSchemaPrepareTask(candidate: SchemaCandidate): PreparedSchema {
  return prepareSchema(candidate);
}
