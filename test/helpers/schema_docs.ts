// A small schema-guided document generator for the compatibility property tests: from a schema document it builds a
// fast-check arbitrary whose values mostly satisfy the schema (const, enum, types, bounds, patterns, tuples,
// properties, combinators, local $ref), mixed with free values drawn from a pool of names and values taken from
// both versions, so documents also probe what the new version adds (an old open object carrying a property the new
// version types). Nothing here is trusted: the tests keep only documents ajv accepts under the old version.
import fc from 'fast-check';

type Json = Record<string, unknown>;

export interface Pool {
  readonly names: string[];
  readonly values: unknown[];
}

const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Property names and values found anywhere in the schemas, plus edge values around every numeric bound. */
export function poolOf(...schemas: unknown[]): Pool {
  const names = new Set<string>(['a', 'b', 'z', 'kind']);
  const values: unknown[] = [null, true, false, 0, 1, -1, 1.5, '', 'a', 'abcdef', 'A', 'x y', 'nope', 'a@b', [], {}, [1, 1]];
  const walk = (node: unknown, depth: number): void => {
    if (depth > 40) return;
    if (Array.isArray(node)) { node.forEach((n) => walk(n, depth + 1)); return; }
    if (!isObj(node)) return;
    for (const [key, value] of Object.entries(node)) {
      if (['properties', 'dependentRequired', 'dependentSchemas', 'dependencies'].includes(key) && isObj(value)) Object.keys(value).forEach((n) => names.add(n));
      if (key === 'required' && Array.isArray(value)) value.forEach((n) => typeof n === 'string' && names.add(n));
      if (key === 'const') values.push(value);
      if (key === 'enum' && Array.isArray(value)) values.push(...value);
      if (typeof value === 'number' && /imum|multipleOf/.test(key)) values.push(value, value - 1, value + 1, value - 0.5, value + 0.5, value * 3, 9.9e21);
      walk(value, depth + 1);
    }
  };
  schemas.forEach((s) => walk(s, 0));
  return { names: [...names], values };
}

/** Resolves local references only, as the checker does. */
function resolve(root: unknown, ref: unknown): unknown {
  if (typeof ref !== 'string' || !ref.startsWith('#')) return true;
  let at: unknown = root;
  for (const token of ref.slice(1).split('/').filter((t) => t !== '')) {
    const key = decodeURIComponent(token).replace(/~1/g, '/').replace(/~0/g, '~');
    at = Array.isArray(at) ? at[Number(key)] : isObj(at) ? at[key] : undefined;
  }
  return at ?? true;
}

/** The schema with its allOf branches and $ref target folded in (a guide, not a faithful merge). */
function folded(root: unknown, schema: unknown, depth: number): unknown {
  if (!isObj(schema) || depth > 8) return schema;
  let out: Json = { ...schema };
  delete out.allOf;
  delete out.$ref;
  const parts: unknown[] = [...(Array.isArray(schema.allOf) ? schema.allOf : [])];
  if (schema.$ref !== undefined) parts.push(resolve(root, schema.$ref));
  for (const part of parts) {
    const sub = folded(root, part, depth + 1);
    if (sub === false) return false;
    if (isObj(sub)) out = { ...sub, ...out };
  }
  return out;
}

export class DocumentGenerator {
  private readonly draft07: boolean;

  constructor(private readonly root: unknown, private readonly pool: Pool) {
    this.draft07 = isObj(root) && /draft-07/.test(String(root.$schema ?? ''));
  }

  arbitrary(): fc.Arbitrary<unknown> {
    return this.of(this.root, 0);
  }

  /** Any JSON value, mostly from the pool. */
  free(depth: number): fc.Arbitrary<unknown> {
    const leaf = fc.oneof(fc.constantFrom(...this.pool.values), fc.integer({ min: -50, max: 50 }), fc.string({ maxLength: 6 }), fc.boolean(), fc.constant(null));
    if (depth > 3) return leaf;
    return fc.oneof({ weight: 4, arbitrary: leaf },
      { weight: 1, arbitrary: fc.array(this.free(depth + 1), { maxLength: 3 }) },
      { weight: 1, arbitrary: fc.dictionary(fc.constantFrom(...this.pool.names), this.free(depth + 1), { maxKeys: 3, noNullPrototype: true }) });
  }

  of(schema: unknown, depth: number): fc.Arbitrary<unknown> {
    const effective = folded(this.root, schema, 0);
    if (!isObj(effective) || depth > 6) return this.free(depth);
    return fc.oneof({ weight: 5, arbitrary: this.guided(effective, depth) }, { weight: 1, arbitrary: this.free(depth) });
  }

  private guided(s: Json, depth: number): fc.Arbitrary<unknown> {
    const rest = (drop: string[]): Json => Object.fromEntries(Object.entries(s).filter(([k]) => !drop.includes(k)));
    for (const name of ['anyOf', 'oneOf']) {
      const list = s[name];
      if (Array.isArray(list) && list.length > 0) {
        return fc.oneof(...list.map((branch) => this.of({ ...rest([name]), ...(isObj(folded(this.root, branch, 0)) ? folded(this.root, branch, 0) as Json : {}) }, depth + 1)));
      }
    }
    if (s.if !== undefined) {
      const pick = (part: unknown): Json => (isObj(folded(this.root, part, 0)) ? folded(this.root, part, 0) as Json : {});
      const base = rest(['if', 'then', 'else']);
      return fc.oneof(this.of({ ...base, ...pick(s.if), ...pick(s.then) }, depth + 1), this.of({ ...base, ...pick(s.else) }, depth + 1));
    }
    if (Object.hasOwn(s, 'const')) return fc.constant(s.const);
    if (Array.isArray(s.enum) && s.enum.length > 0) return fc.constantFrom(...(s.enum as unknown[]));
    const types = typeof s.type === 'string' ? [s.type] : Array.isArray(s.type) ? s.type as string[] : this.impliedTypes(s);
    if (types.length === 0) return this.free(depth);
    return fc.oneof(...types.map((t) => this.ofType(t, s, depth)));
  }

  private impliedTypes(s: Json): string[] {
    const out: string[] = [];
    if (['properties', 'required', 'additionalProperties', 'patternProperties', 'propertyNames', 'minProperties', 'maxProperties', 'dependentRequired', 'dependentSchemas', 'dependencies', 'unevaluatedProperties'].some((k) => k in s)) out.push('object');
    if (['items', 'prefixItems', 'contains', 'minItems', 'maxItems', 'uniqueItems', 'additionalItems', 'unevaluatedItems'].some((k) => k in s)) out.push('array');
    if (['minLength', 'maxLength', 'pattern', 'format'].some((k) => k in s)) out.push('string');
    if (['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'].some((k) => k in s)) out.push('number');
    return out;
  }

  private ofType(type: string, s: Json, depth: number): fc.Arbitrary<unknown> {
    switch (type) {
      case 'null': return fc.constant(null);
      case 'boolean': return fc.boolean();
      case 'integer': return this.number(s, true);
      case 'number': return fc.oneof(this.number(s, true), this.number(s, false));
      case 'string': return this.string(s);
      case 'array': return this.array(s, depth);
      case 'object': return this.object(s, depth);
      default: return this.free(depth);
    }
  }

  private number(s: Json, integral: boolean): fc.Arbitrary<unknown> {
    const num = (k: string): number | undefined => (typeof s[k] === 'number' ? s[k] as number : undefined);
    const low = Math.max(num('minimum') ?? -1e6, (num('exclusiveMinimum') ?? -1e6 - 1) + (integral ? 1 : 1e-6));
    const high = Math.min(num('maximum') ?? 1e6, (num('exclusiveMaximum') ?? 1e6 + 1) - (integral ? 1 : 1e-6));
    const step = num('multipleOf');
    if (step !== undefined && step > 0) {
      const from = Math.ceil(low / step);
      const to = Math.floor(high / step);
      if (from > to) return fc.constant(from * step);
      return fc.integer({ min: Math.max(from, -1e6), max: Math.min(to, 1e6) }).map((k) => k * step);
    }
    if (low > high) return fc.constant(low);
    if (integral) return fc.integer({ min: Math.ceil(low), max: Math.floor(high) });
    return fc.double({ min: low, max: high, noNaN: true, noDefaultInfinity: true });
  }

  private string(s: Json): fc.Arbitrary<unknown> {
    const minLength = typeof s.minLength === 'number' ? s.minLength : 0;
    const maxLength = typeof s.maxLength === 'number' ? s.maxLength : Math.max(minLength + 6, 6);
    if (typeof s.pattern === 'string') {
      try {
        return fc.stringMatching(new RegExp(s.pattern, 'u'));
      } catch {
        return fc.string({ minLength, maxLength });
      }
    }
    if (s.format === 'email') return fc.emailAddress();
    return fc.string({ minLength, maxLength: Math.max(minLength, maxLength) });
  }

  private prefix(s: Json): unknown[] {
    if (this.draft07) return Array.isArray(s.items) ? s.items : [];
    return Array.isArray(s.prefixItems) ? s.prefixItems : [];
  }

  private restItems(s: Json): unknown {
    if (this.draft07) return Array.isArray(s.items) ? s.additionalItems : s.items;
    return s.items ?? s.unevaluatedItems;
  }

  private array(s: Json, depth: number): fc.Arbitrary<unknown> {
    const prefix = this.prefix(s);
    const rest = this.restItems(s);
    const minItems = typeof s.minItems === 'number' ? s.minItems : 0;
    const cap = rest === false ? prefix.length : prefix.length + 3;
    const maxItems = Math.min(typeof s.maxItems === 'number' ? s.maxItems : cap, cap, minItems + 4);
    const at = (i: number): fc.Arbitrary<unknown> => {
      const own = i < prefix.length ? prefix[i] : rest;
      const contains = s.contains !== undefined ? [this.of(s.contains, depth + 1)] : [];
      return own === undefined ? fc.oneof(this.free(depth + 1), ...contains) : fc.oneof(this.of(own, depth + 1), ...contains);
    };
    return fc.integer({ min: Math.min(minItems, Math.max(0, maxItems)), max: Math.max(0, maxItems) })
      .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => at(i))));
  }

  private object(s: Json, depth: number): fc.Arbitrary<unknown> {
    const properties = isObj(s.properties) ? s.properties : {};
    const required = Array.isArray(s.required) ? s.required.filter((n): n is string => typeof n === 'string') : [];
    const patterns = isObj(s.patternProperties) ? Object.entries(s.patternProperties) : [];
    const optional = [...new Set([...Object.keys(properties), ...this.pool.names])].filter((n) => !required.includes(n));
    const valueFor = (name: string): fc.Arbitrary<unknown> => {
      if (Object.hasOwn(properties, name)) return this.of(properties[name], depth + 1);
      const hit = patterns.find(([p]) => { try { return new RegExp(p, 'u').test(name); } catch { return false; } });
      if (hit) return this.of(hit[1], depth + 1);
      const other = s.additionalProperties ?? s.unevaluatedProperties;
      return other === undefined ? this.free(depth + 1) : this.of(other, depth + 1);
    };
    const patternNames = patterns.map(([p]) => { try { return fc.stringMatching(new RegExp(p, 'u')); } catch { return fc.constant('x'); } });
    const names = fc.tuple(fc.subarray(optional, { maxLength: Math.min(4, optional.length) }), patternNames.length > 0 ? fc.array(fc.oneof(...patternNames), { maxLength: 2 }) : fc.constant([]))
      .map(([picked, extra]) => [...new Set([...required, ...picked, ...extra])]);
    return names.chain((list) => fc.tuple(...list.map(valueFor)).map((values) => Object.fromEntries(list.map((n, i) => [n, values[i]]))));
  }
}
