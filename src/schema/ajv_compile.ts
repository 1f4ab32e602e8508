// The one way a schema document becomes an ajv validator (NOTES 1): JSON Schema 2020-12 with ajv's Ajv2020, draft-07
// when `$schema` names it; ajv's strict mode as it ships (unknown keywords and formats, ignored keywords and
// non-JSON numbers refused) without its type, tuple and required checks, which refuse valid everyday schemas
// (docs/decisions.md "Schemas"); allErrors and $data off; formats from ajv-formats. Each compile gets a
// fresh ajv instance, so two topics' documents with the same `$id` never clash and nothing accumulates in a shared
// cache. Called by registration (a pool thread) and by the validators of produce.
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvModule, { type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { dialectOf } from './schema_node.js';

// CommonJS packages: under Node's ESM the default import is module.exports, whose `default` is the class.
type AjvConstructor = new (options: Record<string, unknown>) => { compile(schema: unknown): ValidateFunction };
const Ajv2020 = (Ajv2020Module as unknown as { default: AjvConstructor }).default;
const AjvDraft07 = (AjvModule as unknown as { default: AjvConstructor }).default;
const addFormats = (addFormatsModule as unknown as { default: (ajv: unknown) => void }).default;
const standaloneCode = standaloneModule.default;

const options = {
  strictSchema: true, strictNumbers: true, strictTypes: false, strictTuples: false, strictRequired: false,
  allErrors: false, $data: false, logger: false,
  // Without it ajv takes Object.prototype's members for present properties, which the compatibility proof does not.
  ownProperties: true,
};

/** A validator for the document; throws an Error with ajv's message when ajv cannot compile it. */
export function compileSchema(document: unknown): ValidateFunction {
  return compiledBy(document, options).validate;
}

/** compileSchema keeping ajv's generated code: source() is the validator as a CommonJS module's text (ajv's
 *  standalone code), which the front thread runs instead of compiling (src/schema/validators.ts). */
export function compileSchemaWithSource(document: unknown): { validate: ValidateFunction; source: () => string } {
  const { ajv, validate } = compiledBy(document, { ...options, code: { source: true } });
  return { validate, source: () => standaloneCode(ajv as unknown as Parameters<typeof standaloneCode>[0], validate) };
}

function compiledBy(document: unknown, withOptions: Record<string, unknown>): { ajv: InstanceType<AjvConstructor>; validate: ValidateFunction } {
  const dialect = dialectOf(document);
  if (dialect === null) throw new Error('$schema names neither JSON Schema 2020-12 nor draft-07');
  const ajv = dialect === 'draft-07' ? new AjvDraft07(withOptions) : new Ajv2020(withOptions);
  addFormats(ajv);
  return { ajv, validate: ajv.compile(document) };
}
