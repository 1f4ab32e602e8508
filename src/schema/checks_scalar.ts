// The new version's scalar keywords (type, enum, const, number and string constraints), each proved from the
// old version's facts at the same place. A keyword that only applies to a type the old version never allows there
// holds for free. Pure; called by compatibility.ts.
import { jsonEqual } from './annotations.js';
import { refusal, type Refusal, shown } from './checker.js';
import { finiteValues, type Flat, lowerCount, type TypeToken, typeTokens, typesOf, upperCount } from './facts.js';
import { boundImplies, numberBound } from './shape.js';
import { isObject, keyword, type SchemaNode } from './schema_node.js';

export function checkType(flat: Flat, node: SchemaNode): Refusal | null {
  const declared = typeTokens(keyword(node, 'type'));
  if (declared === null) return keyword(node, 'type') === undefined ? null : refusal('type', node, 'the type keyword is malformed');
  const missing = [...typesOf(flat)].filter((t) => !declared.has(t));
  if (missing.length === 0) return null;
  const names = missing.map((t) => (t === 'fraction' ? 'non-integer numbers' : t));
  return refusal('type', node, `the old version allows ${names.join(', ')} here and the new one does not`);
}

export function checkValues(flat: Flat, node: SchemaNode): Refusal | null {
  const values = finiteValues(flat);
  if (isObject(node.schema) && Object.hasOwn(node.schema, 'const')) {
    const constValue = node.schema.const;
    if (values === null) return refusal('const', node, 'the old version allows values other than the new const');
    const other = values.find((v) => !jsonEqual(v, constValue));
    if (other !== undefined) return refusal('const', node, `the old version allows ${shown(other)}, which the new const refuses`);
  }
  const list = keyword(node, 'enum');
  if (Array.isArray(list)) {
    if (values === null) return refusal('enum', node, 'the old version allows values outside the new enum');
    const other = values.find((v) => !list.some((x) => jsonEqual(v, x)));
    if (other !== undefined) return refusal('enum', node, `the new enum leaves out ${shown(other)}, which the old version allows`);
  }
  return null;
}

const numberTypes: readonly TypeToken[] = ['integer', 'fraction'];

export function checkNumbers(flat: Flat, node: SchemaNode): Refusal | null {
  const types = typesOf(flat);
  if (!numberTypes.some((t) => types.has(t))) return null;
  for (const name of ['minimum', 'exclusiveMinimum', 'maximum', 'exclusiveMaximum']) {
    const limit = keyword(node, name);
    if (typeof limit !== 'number') continue;
    const bound = numberBound(flat, name.toLowerCase().includes('min') ? 'min' : 'max');
    if (!boundImplies(bound, name, limit)) return refusal(name, node, `the old version allows numbers beyond ${name} ${limit}`);
  }
  const step = keyword(node, 'multipleOf');
  if (typeof step !== 'number' || flat.nodes.some((n) => keyword(n, 'multipleOf') === step)) return null;
  if (step === 1 && exactDivisionRange(flat)) return null;
  const divides = flat.nodes.some((n) => {
    const old = keyword(n, 'multipleOf');
    return typeof old === 'number' && Number.isInteger(old) && Number.isInteger(step) && old % step === 0;
  });
  if (divides && exactDivisionRange(flat)) return null;
  return refusal('multipleOf', node, divides
    ? 'a divisor of the old multipleOf is only proved for integers the old version keeps within -2^50..2^50 (beyond, floating-point division can refuse a multiple)'
    : `the old version allows numbers that are not multiples of ${step}`);
}

/** Integers within 2^50: there ajv's `x / step` is exact enough that a multiple of m is a multiple of m's divisors. */
function exactDivisionRange(flat: Flat): boolean {
  const types = typesOf(flat);
  if (types.has('fraction')) return false;
  const low = numberBound(flat, 'min');
  const high = numberBound(flat, 'max');
  return low !== null && high !== null && low.value >= -(2 ** 50) && high.value <= 2 ** 50;
}

export function checkStrings(flat: Flat, node: SchemaNode): Refusal | null {
  const types = typesOf(flat);
  const format = keyword(node, 'format');
  if (format !== undefined && (types.has('string') || types.has('integer') || types.has('fraction'))) {
    if (!flat.nodes.some((n) => jsonEqual(keyword(n, 'format'), format))) {
      return refusal('format', node, `the old version allows values that format ${shown(format)} may refuse`);
    }
  }
  if (!types.has('string')) return null;
  const minLength = keyword(node, 'minLength');
  if (typeof minLength === 'number' && lowerCount(flat, 'minLength') < minLength) {
    return refusal('minLength', node, `the old version allows strings shorter than ${minLength}`);
  }
  const maxLength = keyword(node, 'maxLength');
  if (typeof maxLength === 'number' && upperCount(flat, 'maxLength') > maxLength) {
    return refusal('maxLength', node, `the old version allows strings longer than ${maxLength}`);
  }
  const pattern = keyword(node, 'pattern');
  if (pattern !== undefined && !flat.nodes.some((n) => keyword(n, 'pattern') === pattern)) {
    return refusal('pattern', node, 'the old version allows strings this pattern may refuse (only an unchanged pattern is proved)');
  }
  return null;
}
