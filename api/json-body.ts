import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.js';

/**
 * Limits on the shape of a JSON body, checked by one pass over its text before `JSON.parse` builds it. Within
 * the 1 MiB body limit, parsing a flat body costs a few milliseconds, but deep nesting, hundreds of thousands of
 * empty containers or one object with tens of thousands of keys cost V8 hundreds of milliseconds, during which
 * the whole server waits (docs/design.md, "Validation cost"). No route takes anything near these shapes.
 */
export const jsonShapeLimits = {
  depth: 64,
  containers: 20_000,
  /** Array items and object members together. */
  values: 100_000,
  keysPerObject: 1_000,
} as const;

const OPEN_OBJECT = 0x7b; // {
const CLOSE_OBJECT = 0x7d; // }
const OPEN_ARRAY = 0x5b; // [
const CLOSE_ARRAY = 0x5d; // ]
const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const COLON = 0x3a; // :
const COMMA = 0x2c; // ,

/**
 * Answers why `text` is over the shape limits, or null. Only structure outside strings counts; the text need
 * not be valid JSON (the parser says so afterwards).
 */
export function jsonShapeProblem(text: string): string | null {
  let depth = 0;
  let containers = 0;
  let values = 0;
  // Keys of the open object at each depth (arrays keep 0); the depth limit bounds this stack.
  const keys: number[] = [];
  let nextSlash = -2; // -2: not looked for yet; -1: none left
  for (let i = 0; i < text.length; i++) {
    switch (text.charCodeAt(i)) {
      case QUOTE: {
        // A string without escapes is skipped with indexOf, native and fast on megabytes of text; one with escapes
        // is walked character by character. The next backslash is remembered, so each search covers new text.
        const close = text.indexOf('"', i + 1);
        if (close < 0) return null; // unterminated: the parser says so
        if (nextSlash !== -1 && nextSlash <= i) nextSlash = text.indexOf('\\', i + 1);
        if (nextSlash === -1 || nextSlash > close) {
          i = close;
          break;
        }
        for (i++; i < text.length; i++) {
          const c = text.charCodeAt(i);
          if (c === BACKSLASH) i++;
          else if (c === QUOTE) break;
        }
        break;
      }
      case OPEN_OBJECT:
      case OPEN_ARRAY:
        if (++depth > jsonShapeLimits.depth) return `nests deeper than ${jsonShapeLimits.depth} levels`;
        if (++containers > jsonShapeLimits.containers)
          return `has more than ${jsonShapeLimits.containers} objects and arrays`;
        keys[depth] = 0;
        break;
      case CLOSE_OBJECT:
      case CLOSE_ARRAY:
        if (depth > 0) depth--;
        break;
      case COMMA:
        if (++values > jsonShapeLimits.values) return `has more than ${jsonShapeLimits.values} values`;
        break;
      case COLON:
        if (depth > 0 && ++keys[depth]! > jsonShapeLimits.keysPerObject)
          return `has an object with more than ${jsonShapeLimits.keysPerObject} fields`;
        break;
    }
  }
  return null;
}

export function tooComplex(problem: string): ApiError {
  return new ApiError(400, 'invalid_request_body', `The request body ${problem}`);
}

/**
 * Replaces the JSON parser with one that checks the shape first, then parses as Fastify's own does (refusing
 * `__proto__` and `constructor.prototype` keys).
 */
export function installJsonParser(app: FastifyInstance): void {
  // Run the scanner over a sample with every kind of token once, so the optimizing compiler has it before the
  // first large body arrives (unoptimized, a few megabytes of escapes cost hundreds of milliseconds once).
  jsonShapeProblem(`[${'{"k":"v\\\\\\"x","n":[1,2]},'.repeat(9_000)}1]`);
  // Fastify's own JSON parser is the callback kind: it answers through `done` and returns nothing to await.
  const parse = app.getDefaultJsonParser('error', 'error') as (
    request: FastifyRequest,
    body: string,
    done: (err: Error | null, body?: unknown) => void,
  ) => void;
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body: string, done) => {
    const problem = jsonShapeProblem(body);
    if (problem) {
      done(tooComplex(problem), undefined);
      return;
    }
    parse(request, body, done);
  });
}
