import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ErrorObject } from 'ajv';
import Type from 'typebox';
import { summarizeAjvErrors } from '../../api/errors.js';
import { jsonShapeLimits, jsonShapeProblem } from '../../api/json-body.js';
import { findOversize, tooManyValues } from '../../api/size-guard.js';
import { compileValidator, stripIds } from '../../api/validation.js';

/** The parts that keep refusing a request linear in its size (docs/design.md, "Validation cost"). */

describe('JSON shape limits', () => {
  it('counts structure outside strings only, escapes included', () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    assert.equal(jsonShapeProblem(deep(jsonShapeLimits.depth)), null);
    assert.equal(
      jsonShapeProblem(deep(jsonShapeLimits.depth + 1)),
      `nests deeper than ${jsonShapeLimits.depth} levels`,
    );
    assert.equal(jsonShapeProblem(JSON.stringify({ text: deep(500) })), null, 'brackets inside a string are text');
    assert.equal(
      jsonShapeProblem(JSON.stringify({ text: `"\\${deep(500)}` })),
      null,
      'an escaped quote does not end the string',
    );
    assert.match(jsonShapeProblem(`["a\\\\", ${deep(100)}]`) ?? '', /nests deeper/, 'an escaped backslash does end it');
    const object = (n: number) => JSON.stringify(Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i])));
    assert.equal(jsonShapeProblem(object(jsonShapeLimits.keysPerObject)), null);
    assert.match(jsonShapeProblem(object(jsonShapeLimits.keysPerObject + 1)) ?? '', /more than 1000 fields/);
    assert.match(jsonShapeProblem(`[${'{},'.repeat(jsonShapeLimits.containers)}1]`) ?? '', /objects and arrays/);
    assert.match(jsonShapeProblem(`[${'1,'.repeat(jsonShapeLimits.values + 1)}1]`) ?? '', /values/);
  });

  it('scans megabytes of string in milliseconds, escapes or not', () => {
    for (const text of [JSON.stringify({ v: 'x'.repeat(8 << 20) }), JSON.stringify({ v: '"\\'.repeat(1 << 20) })]) {
      jsonShapeProblem(text); // flattens the string and warms the function
      const started = performance.now();
      assert.equal(jsonShapeProblem(text), null);
      const ms = performance.now() - started;
      assert.ok(ms < 250, `${text.length} characters took ${ms.toFixed(0)} ms`);
    }
  });
});

describe('size guard', () => {
  const schema = stripIds(
    Type.Object({
      grants: Type.Array(
        Type.Object({ tools: Type.Union([Type.Array(Type.String(), { maxItems: 3 }), Type.Null()]) }),
        { maxItems: 5 },
      ),
      env: Type.Optional(Type.Record(Type.String(), Type.String(), { maxProperties: 2 })),
    }),
  );

  it('reports the first container over its bound, with its path, before looking at items', () => {
    assert.deepEqual(findOversize(schema, { grants: Array.from({ length: 6 }, () => 1) }), {
      path: ['grants'],
      code: 'too_long',
      message: 'must have at most 5 items',
    });
    const inUnion = findOversize(schema, { grants: [{ tools: null }, { tools: ['a', 'b', 'c', 'd'] }] });
    assert.ok(inUnion && inUnion !== tooManyValues);
    assert.deepEqual(inUnion.path, ['grants', 1, 'tools'], 'the array branch of the union');
    const map = findOversize(schema, { grants: [], env: { a: '1', b: '2', c: '3' } });
    assert.ok(map && map !== tooManyValues);
    assert.equal(map.code, 'too_many_fields');
    assert.equal(findOversize(schema, { grants: [{ tools: ['a'] }], env: { a: '1' } }), null);
    assert.equal(
      findOversize(
        schema,
        { grants: Array.from({ length: 5 }, () => ({ tools: ['a', 'b', 'c'] })) },
        { nodes: 0, limit: 10 },
      ),
      tooManyValues,
    );
  });

  it('answers a failing part with at most 20 fields and the count of all, or the first field of a large part', () => {
    const validate = compileValidator(Type.Array(Type.Object({ n: Type.Integer() }), { maxItems: 1000 }), 'body');
    const many = validate(Array.from({ length: 50 }, () => ({ n: 'x' })));
    assert.ok(typeof many === 'object' && 'error' in many);
    assert.equal(many.error.summary.fields.length, 20);
    assert.equal(many.error.summary.count, 50);
    const large = validate(Array.from({ length: 1000 }, () => ({ n: 'x' })));
    assert.ok(typeof large === 'object' && 'error' in large);
    assert.deepEqual(large.error.summary, {
      fields: [{ field: '[0].n', code: 'invalid_type', message: 'must be integer' }],
      count: null,
    });
    assert.equal(validate([{ n: 1 }]), true);
  });
});

describe('field summary', () => {
  it('is linear in the number of errors and keeps union messages', () => {
    const errorsFor = (items: number) => {
      const errors: ErrorObject[] = [];
      for (let i = 0; i < items; i++) {
        const at = `/${i}/allowedTools`;
        errors.push(
          { instancePath: at, schemaPath: '#/anyOf/0/type', keyword: 'type', params: { type: 'array' } },
          { instancePath: at, schemaPath: '#/anyOf/1/type', keyword: 'type', params: { type: 'null' } },
          { instancePath: at, schemaPath: '#/anyOf', keyword: 'anyOf', params: {} },
          {
            instancePath: `/${i}`,
            schemaPath: '#/required',
            keyword: 'required',
            params: { missingProperty: 'serverId' },
          },
        );
      }
      return errors;
    };
    const time = (errors: ErrorObject[]) => {
      const started = performance.now();
      const summary = summarizeAjvErrors(errors, 20);
      return { ms: performance.now() - started, summary };
    };
    time(errorsFor(5_000)); // warm-up
    // The fastest of five of each, so a busy machine's pause in one measurement is not taken for the cost.
    const fastest = (items: number) => {
      const errors = errorsFor(items);
      const runs = Array.from({ length: 5 }, () => time(errors));
      return runs.reduce((a, b) => (b.ms < a.ms ? b : a));
    };
    const small = fastest(5_000);
    const large = fastest(40_000);
    // Eight times the errors: about eight times the time when linear, sixty-four when quadratic (as it was). Half of
    // sixty-four as the bound: a loaded machine measured 28 times once, with collections in the larger runs.
    assert.ok(
      large.ms < small.ms * 32 + 50,
      `20,000 errors: ${small.ms.toFixed(0)} ms; 160,000: ${large.ms.toFixed(0)} ms`,
    );
    const summary = large.summary;
    assert.equal(summary.count, 80_000);
    assert.equal(summary.fields.length, 20);
    assert.deepEqual(summary.fields.slice(0, 2), [
      { field: '[0].allowedTools', code: 'invalid', message: 'has an invalid value' },
      { field: '[0].serverId', code: 'required', message: 'is required' },
    ]);
    const literal = summarizeAjvErrors([
      { instancePath: '/mode', schemaPath: '#/anyOf/0/const', keyword: 'const', params: { allowedValue: 'a' } },
      { instancePath: '/mode', schemaPath: '#/anyOf/1/const', keyword: 'const', params: { allowedValue: 'b' } },
      { instancePath: '/mode', schemaPath: '#/anyOf', keyword: 'anyOf', params: {} },
    ]);
    assert.deepEqual(literal, {
      fields: [{ field: 'mode', code: 'invalid', message: 'must be one of "a", "b"' }],
      count: 1,
    });
  });
});
