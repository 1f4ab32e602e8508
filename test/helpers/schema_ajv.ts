// ajv as the tests' oracle for schema versions: 2020-12 documents through Ajv2020, draft-07 documents (by $schema)
// through ajv's draft-07 class, both in ajv's default strict mode (unknown keywords and formats refuse to compile;
// type and tuple strictness only log, silenced here) and with ownProperties, which the broker's validators need too:
// without it ajv reads Object.prototype members as present properties ({} has a `toString`), and a closed object
// gaining an optional `toString` property would refuse {"a": 1}. Used by the schema compatibility tests.
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvModule from 'ajv';

const Ajv2020 = Ajv2020Module.default;
const AjvDraft07 = AjvModule.default;

/** A stand-in for the email format: ajv ships none, and strict mode refuses unknown formats. */
const emailFormat = /^[^@\s]+@[^@\s]+$/;

function makeValidators(): { modern: InstanceType<typeof Ajv2020>; draft07: InstanceType<typeof AjvDraft07> } {
  const options = { strict: true, strictTypes: 'log', strictTuples: 'log', strictRequired: false, ownProperties: true, logger: false } as const;
  const modern = new Ajv2020(options);
  const draft07 = new AjvDraft07(options);
  modern.addFormat('email', emailFormat);
  draft07.addFormat('email', emailFormat);
  return { modern, draft07 };
}

let shared: ReturnType<typeof makeValidators> | null = null;

/** A validator for one schema document (without $id, so documents never clash inside the shared instances). */
export function compileSchema(schema: unknown): (document: unknown) => boolean {
  shared ??= makeValidators();
  const { modern, draft07 } = shared;
  const isDraft07 = typeof schema === 'object' && schema !== null && /draft-07/.test(String((schema as Record<string, unknown>).$schema ?? ''));
  const validate = isDraft07 ? draft07.compile(schema as object) : modern.compile(schema as object | boolean);
  return (document) => validate(document) === true;
}
