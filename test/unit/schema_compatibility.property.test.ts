// Goal: nothing the compatibility checker calls compatible is incompatible (issue 28 point 2: "nothing incompatible
// is ever accepted"). Method: for every table pair it accepts, for random one-step edits of the table's schemas and
// for random schemas with one or two edits (both directions) that it accepts, draw documents with the schema-guided generator, keep those ajv accepts under
// the old version, and assert ajv accepts each under the new one. Seeded and bounded; the generator's reach is
// checked too (most accepted pairs must see valid documents), so the test cannot pass by drawing nothing.
import fc from 'fast-check';
import t from 'tap';
import { checkCompatible } from '../../src/schema/compatibility.js';
import { compileSchema } from '../helpers/schema_ajv.js';
import { DocumentGenerator, poolOf } from '../helpers/schema_docs.js';
import { mutate, randomSchema } from '../helpers/schema_mutations.js';
import { schemaPairs } from '../helpers/schema_pairs.js';
import { Prng } from '../helpers/prng.js';

const seed = 20_261_128;

/** A validator that counts a throw as a refusal, as the broker answers a validation that throws (ajv recurses
 *  without end on reference loops, and its deep-equal throws on objects with a `valueOf` member). */
function refusingThrows(schema: unknown): (document: unknown) => boolean {
  const validate = compileSchema(schema);
  return (document) => {
    try {
      return validate(document);
    } catch {
      return false;
    }
  };
}

/** Draws documents from `old`, keeps those ajv accepts under it, returns them with any the new version refuses. */
function probe(oldSchema: unknown, newSchema: unknown, runs: number, runSeed: number): { valid: number; refused: unknown[] } {
  const validOld = refusingThrows(oldSchema);
  const validNew = refusingThrows(newSchema);
  const generator = new DocumentGenerator(oldSchema, poolOf(oldSchema, newSchema));
  let valid = 0;
  const refused: unknown[] = [];
  for (const document of fc.sample(generator.arbitrary(), { seed: runSeed, numRuns: runs })) {
    if (!validOld(document)) continue;
    valid += 1;
    if (!validNew(document)) refused.push(document);
  }
  return { valid, refused };
}

t.test('every table pair the checker accepts: the new version accepts what the old one does', async (t) => {
  const accepted = schemaPairs.filter((p) => !p.skipAjv && checkCompatible(p.old, p.new).compatible);
  let reached = 0;
  for (const [i, pair] of accepted.entries()) {
    const { valid, refused } = probe(pair.old, pair.new, 150, seed + i);
    t.same(refused, [], `${pair.name}: ${valid} valid documents, none refused`);
    if (valid > 0) reached += 1;
  }
  const reachable = accepted.filter((p) => p.old !== false).length;
  t.ok(reached >= reachable * 0.95, `documents reached ${reached} of ${reachable} accepted pairs`);
});

t.test('the generator reaches the refusals too (witness search)', async (t) => {
  // Sanity of the method: on refused pairs with a witness, drawn documents find a counterexample in most.
  const refusedPairs = schemaPairs.filter((p) => 'witness' in p);
  let found = 0;
  for (const [i, pair] of refusedPairs.entries()) if (probe(pair.old, pair.new, 150, seed + 1000 + i).refused.length > 0) found += 1;
  t.ok(found >= refusedPairs.length * 0.7, `counterexamples drawn for ${found} of ${refusedPairs.length} incompatible pairs`);
});

t.test('random one-step edits: whatever the checker accepts holds on drawn documents', async (t) => {
  const bases = schemaPairs.filter((p) => !p.skipAjv).flatMap((p) => [p.old, p.new]).filter((s) => typeof s === 'object');
  let accepted = 0;
  let refused = 0;
  fc.assert(fc.property(fc.nat({ max: bases.length - 1 }), fc.nat(), fc.boolean(), (pick, editSeed, forward) => {
    const base = bases[pick];
    const edited = mutate(base, new Prng(editSeed), poolOf(base).names);
    try {
      compileSchema(edited);
    } catch {
      return true; // ajv would not register it
    }
    const [oldSchema, newSchema] = forward ? [base, edited] : [edited, base];
    if (!checkCompatible(oldSchema, newSchema).compatible) {
      refused += 1;
      return true;
    }
    accepted += 1;
    const { refused: counterexamples } = probe(oldSchema, newSchema, 30, editSeed);
    if (counterexamples.length > 0) t.fail(`accepted ${JSON.stringify(oldSchema)} -> ${JSON.stringify(newSchema)}, refuses ${JSON.stringify(counterexamples[0])}`);
    return counterexamples.length === 0;
  }), { seed, numRuns: 300 });
  t.ok(accepted >= 30 && refused >= 30, `${accepted} edits accepted and probed, ${refused} refused`);
});

t.test('random schemas and their edits: whatever the checker accepts holds on drawn documents', async (t) => {
  const names = ['a', 'b', 'kind', 'x_1'];
  let accepted = 0;
  let refused = 0;
  fc.assert(fc.property(fc.nat(), fc.boolean(), fc.boolean(), (schemaSeed, twice, forward) => {
    const prng = new Prng(schemaSeed);
    const base = randomSchema(prng, names);
    const once = mutate(base, prng, names);
    const edited = twice ? mutate(once, prng, names) : once;
    try {
      compileSchema(base);
      compileSchema(edited);
    } catch {
      return true;
    }
    const [oldSchema, newSchema] = forward ? [base, edited] : [edited, base];
    if (!checkCompatible(oldSchema, newSchema).compatible) {
      refused += 1;
      return true;
    }
    accepted += 1;
    const { refused: counterexamples } = probe(oldSchema, newSchema, 30, schemaSeed);
    if (counterexamples.length > 0) t.fail(`accepted ${JSON.stringify(oldSchema)} -> ${JSON.stringify(newSchema)}, refuses ${JSON.stringify(counterexamples[0])}`);
    return counterexamples.length === 0;
  }), { seed: seed + 1, numRuns: 300 });
  t.ok(accepted >= 30 && refused >= 30, `${accepted} accepted and probed, ${refused} refused`);
});
