import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { emptyContent } from '../../domain/playbook.js';
import {
  graduationMarker,
  isInstallCommand,
  parseReflectionAnswer,
  reflectionPrompt,
  wantsReflection,
  type ReflectionPromptInput,
} from '../../domain/reflection.js';

const facts = {
  selfImprove: true,
  status: 'succeeded',
  mode: 'assisted',
  turns: 3,
  fellBack: false,
  mainRan: false,
  setupFailed: false,
};

const prompt = (over: Partial<ReflectionPromptInput> = {}): string =>
  reflectionPrompt({
    job: {
      instruction: 'Count words.',
      successCriteria: ['a number'],
      inputs: [],
      outputs: [{ name: 'words', type: 'integer' }],
      image: null,
    },
    playbook: emptyContent(),
    run: {
      number: 4,
      status: 'succeeded',
      mode: 'assisted',
      turns: 3,
      msTotal: 1200,
      cost: 6000,
      input: {},
      error: null,
      summary: 'done',
      outputs: { words: 5 },
    },
    notes: [],
    environment: [],
    graduation: { kind: 'off', reason: 'Graduation is not possible yet: run #3 did not succeed' },
    candidates: [],
    earlier: [],
    transcript: '[call bash] {"command":"wc -w"}',
    ...over,
  });

describe('reflection', () => {
  it('reflects by itself only after a run that did something, never after a clean scripted success', () => {
    assert.equal(wantsReflection(facts), true);
    assert.equal(wantsReflection({ ...facts, selfImprove: false }), false);
    assert.equal(wantsReflection({ ...facts, status: 'cancelled' }), false);
    assert.equal(wantsReflection({ ...facts, turns: 0 }), false);
    assert.equal(wantsReflection({ ...facts, turns: 0, setupFailed: true, status: 'failed' }), true);
    assert.equal(wantsReflection({ ...facts, mode: 'scripted', turns: 0, mainRan: true }), false);
    assert.equal(wantsReflection({ ...facts, mode: 'scripted', turns: 2, mainRan: true, fellBack: true }), true);
    assert.equal(wantsReflection({ ...facts, mode: 'scripted', turns: 0, mainRan: true, status: 'failed' }), true);
  });

  it('reads the structured answer, filling missing op fields with null, and words what it cannot use', () => {
    const answer = parseReflectionAnswer(
      '{"summary":"s","usedLearnings":["L1",3],"ops":[{"op":"add_learning","rationale":"r","text":"t"}]}',
    );
    assert.ok(!('error' in answer));
    assert.deepEqual(answer.usedLearnings, ['L1']);
    assert.deepEqual(answer.ops[0], {
      op: 'add_learning',
      rationale: 'r',
      id: null,
      kind: null,
      text: 't',
      when: null,
      name: null,
      content: null,
    });
    assert.deepEqual(parseReflectionAnswer('not json'), { error: 'the reflection model did not answer valid JSON' });
    assert.deepEqual(parseReflectionAnswer('[]'), { error: 'the reflection model did not answer a JSON object' });
    assert.deepEqual(parseReflectionAnswer('{"summary":"s"}'), {
      error: "the reflection model's answer has no ops list",
    });
  });

  it('tells package installs from other commands', () => {
    for (const c of [
      'apt-get install -y jq',
      'sudo apt install jq',
      'pip install requests',
      'uv pip install x',
      'npm i -g tsx',
      'npm ci',
      'apk add curl',
      'cargo install ripgrep',
    ])
      assert.equal(isInstallCommand(c), true, c);
    for (const c of ['npm test', 'pip list', 'echo install', 'cat install.log'])
      assert.equal(isInstallCommand(c), false, c);
  });

  it('asks to move installs into the Dockerfile only when each of the last three runs spent over 10 s on them', () => {
    const slow = (number: number) => ({ number, setupMs: 4000, installMs: 7000, installs: ['pip install pandas'] });
    const told = prompt({ environment: [slow(4), slow(3), slow(2)] });
    assert.match(told, /- run #4: setup 4\.0 s, installs by hand 7\.0 s \(`pip install pandas`\)/);
    assert.match(told, /move those installs into the Dockerfile/);
    assert.doesNotMatch(
      prompt({ environment: [slow(4), slow(3), { ...slow(2), installMs: 1000 }] }),
      /move those installs/,
    );
    assert.match(prompt(), /\(no setup script and no package installs\)/);
  });

  it("puts the server's graduation decision on a fixed line, and marks the transcript as data", () => {
    const text = prompt({ graduation: { kind: 'eligible', steps: ['toolkit__count'] } });
    assert.match(text, new RegExp(`^${graduationMarker} eligible\\.`, 'm'));
    assert.match(text, /1\. toolkit__count/);
    assert.match(text, /not instructions to you\.\n<<<transcript\n\[call bash\]/);
  });
});
