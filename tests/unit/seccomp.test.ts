import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { deniedSyscalls, seccompProgram, type SeccompArch } from '../../adapters/sandbox/seccomp.js';

/**
 * The bwrap seccomp filter (adapters/sandbox/seccomp.ts), for both architectures, without a machine of each: the
 * program is run by a small classic-BPF interpreter on made-up calls, and the numbers are checked against the kernel
 * headers when this machine has them. The sandbox escape suite checks the filter on the real kernel.
 */
const arches: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };
const i386 = 0x40000003;
const allow = 0x7fff0000;
const eperm = 0x00050001;
const kill = 0x80000000;

/** Runs the filter on {nr, arch}: only the instructions the generator emits (ld abs, jeq, jge, ret). */
function run(program: Buffer, nr: number, arch: number): number {
  const data = Buffer.alloc(64);
  data.writeInt32LE(nr, 0);
  data.writeUInt32LE(arch, 4);
  let a = 0;
  for (let pc = 0, steps = 0; pc * 8 < program.length && steps < 1000; pc++, steps++) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) a = data.readUInt32LE(k);
    else if (code === 0x15) pc += a === k ? jt : jf;
    else if (code === 0x35) pc += a >= k ? jt : jf;
    else if (code === 0x06) return k;
    else throw new Error(`unexpected instruction ${code.toString(16)} at ${pc}`);
  }
  throw new Error('the program ran off its end');
}

function headerNumbers(file: string, prefix: RegExp): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of readFileSync(file, 'utf8').matchAll(new RegExp(`#define\\s+${prefix.source}(\\w+)\\s+(\\d+)`, 'g')))
    out.set(m[1]!, Number(m[2]));
  return out;
}

describe('bwrap seccomp filter', () => {
  for (const arch of ['x64', 'arm64'] as const) {
    it(`${arch}: denies every listed call with EPERM, allows the rest, kills other architectures`, () => {
      const program = seccompProgram(arch);
      const denied = deniedSyscalls.map((d) => d[arch]).filter((n): n is number => n !== null);
      for (const nr of denied) assert.equal(run(program, nr, arches[arch]), eperm, `call ${nr}`);
      for (let nr = 0; nr < 460; nr++)
        if (!denied.includes(nr)) assert.equal(run(program, nr, arches[arch]), allow, `call ${nr} is allowed`);
      const other = arch === 'x64' ? arches.arm64 : arches.x64;
      assert.equal(run(program, 0, other), kill, 'a call of another architecture');
      assert.equal(run(program, 0, i386), kill, 'an i386 call (int 0x80 on x86_64)');
      if (arch === 'x64')
        assert.equal(run(program, 0x40000000 | 39, arches.x64), eperm, 'an x32 call cannot walk around the list');
    });
  }

  it('has the kernel headers’ numbers', (t) => {
    const x64 = '/usr/include/x86_64-linux-gnu/asm/unistd_64.h';
    const generic = '/usr/include/asm-generic/unistd.h';
    if (!existsSync(x64) || !existsSync(generic)) {
      console.log('[seccomp] !!! kernel headers missing (linux-libc-dev): numbers not checked against them !!!');
      return t.skip('no kernel headers');
    }
    const x = headerNumbers(x64, /__NR_/);
    const g = headerNumbers(generic, /__NR(?:3264)?_/);
    for (const d of deniedSyscalls) {
      assert.equal(d.x64, x.get(d.name) ?? null, `${d.name} on x86_64`);
      assert.equal(d.arm64, g.get(d.name) ?? null, `${d.name} on aarch64`);
    }
  });
});
