/**
 * The seccomp filter of bwrap sandboxes, as the classic BPF program bwrap's `--seccomp FD` loads (docs/design.md,
 * "Sandbox isolation"). A deny list, not an allow list: sandboxes run arbitrary Debian tools, and what is denied here
 * is kernel surface no job needs that a namespace root (uid 0 inside a user namespace) could otherwise reach.
 * Denied calls fail with EPERM, which programs handle like any refused call; a call from another architecture (an
 * i386 binary through int 0x80, whose numbers mean other calls) kills the process instead.
 */

interface Denied {
  name: string;
  x64: number | null;
  arm64: number | null;
}

const deny = (name: string, x64: number | null, arm64: number | null): Denied => ({ name, x64, arm64 });

/** Numbers from the kernel's asm/unistd_64.h (x86_64) and asm-generic/unistd.h (aarch64). */
export const deniedSyscalls: readonly Denied[] = [
  // Kernel keyrings are not namespaced: keys of the host or of other sandboxes of the same uid would be reachable.
  deny('add_key', 248, 217),
  deny('request_key', 249, 218),
  deny('keyctl', 250, 219),
  // eBPF, perf and userfaultfd: large, often-exploited kernel surfaces (userfaultfd stalls the kernel in races).
  deny('bpf', 321, 280),
  deny('perf_event_open', 298, 241),
  deny('userfaultfd', 323, 282),
  // io_uring bypasses the per-call filter above and has had a long run of privilege escalations.
  deny('io_uring_setup', 425, 425),
  deny('io_uring_enter', 426, 426),
  deny('io_uring_register', 427, 427),
  // Mounts: a namespace root may mount, which would let it cover /etc or /usr/local/bin/svc inside, or reach
  // filesystems whose drivers are not hardened against unprivileged users.
  deny('mount', 165, 40),
  deny('umount2', 166, 39),
  deny('pivot_root', 155, 41),
  deny('open_tree', 428, 428),
  deny('move_mount', 429, 429),
  deny('fsopen', 430, 430),
  deny('fsconfig', 431, 431),
  deny('fsmount', 432, 432),
  deny('fspick', 433, 433),
  deny('mount_setattr', 442, 442),
  // Joining other namespaces, and file handles (open_by_handle_at opens any inode of a filesystem by number).
  deny('setns', 308, 268),
  deny('name_to_handle_at', 303, 264),
  deny('open_by_handle_at', 304, 265),
  // Reading or steering other processes: the pid namespace hides the host's, and jobs need no debugger.
  deny('ptrace', 101, 117),
  deny('process_vm_readv', 310, 270),
  deny('process_vm_writev', 311, 271),
  deny('pidfd_getfd', 438, 438),
  // Whole-machine operations that need privileges a sandbox never has; denied so a kernel bug cannot grant them.
  deny('kexec_load', 246, 104),
  deny('kexec_file_load', 320, 294),
  deny('init_module', 175, 105),
  deny('finit_module', 313, 273),
  deny('delete_module', 176, 106),
  deny('reboot', 169, 142),
  deny('swapon', 167, 224),
  deny('swapoff', 168, 225),
  deny('acct', 163, 89),
  deny('syslog', 103, 116),
  deny('quotactl', 179, 60),
  deny('quotactl_fd', 443, 443),
  deny('vhangup', 153, 58),
  deny('lookup_dcookie', 212, 18),
  deny('nfsservctl', 180, 42),
  // Obsolete x86_64-only calls.
  deny('iopl', 172, null),
  deny('ioperm', 173, null),
  deny('uselib', 134, null),
  deny('ustat', 136, null),
  deny('sysfs', 139, null),
  deny('_sysctl', 156, null),
  deny('create_module', 174, null),
  deny('get_kernel_syms', 177, null),
  deny('query_module', 178, null),
];

export type SeccompArch = 'x64' | 'arm64';

const auditArch: Record<SeccompArch, number> = { x64: 0xc000003e, arm64: 0xc00000b7 };
/** x86_64's x32 ABI: the same calls with this bit set; a filter that ignores it can be walked around. */
const x32Bit = 0x40000000;

const BPF_LD_W_ABS = 0x20;
const BPF_JEQ_K = 0x15;
const BPF_JGE_K = 0x35;
const BPF_RET_K = 0x06;
const RET_KILL_PROCESS = 0x80000000;
const RET_ERRNO = 0x00050000;
const RET_ALLOW = 0x7fff0000;
const EPERM = 1;
/** Offsets in struct seccomp_data. */
const nrOffset = 0;
const archOffset = 4;

interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** The filter for one architecture: 8 bytes per instruction (u16 code, u8 jt, u8 jf, u32 k), little-endian like both. */
export function seccompProgram(arch: SeccompArch): Buffer {
  const numbers = deniedSyscalls.map((d) => d[arch]).filter((n): n is number => n !== null);
  const insns: Insn[] = [
    { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: archOffset },
    { code: BPF_JEQ_K, jt: 1, jf: 0, k: auditArch[arch] },
    { code: BPF_RET_K, jt: 0, jf: 0, k: RET_KILL_PROCESS },
    { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: nrOffset },
  ];
  // Every test jumps forward to the EPERM return placed after the ALLOW return at the end.
  const tests: Array<{ code: number; k: number }> = [];
  if (arch === 'x64') tests.push({ code: BPF_JGE_K, k: x32Bit });
  for (const n of numbers) tests.push({ code: BPF_JEQ_K, k: n });
  const first = insns.length;
  const errnoAt = first + tests.length + 1;
  tests.forEach((t, i) => {
    const jt = errnoAt - (first + i) - 1;
    if (jt > 255) throw new Error('the seccomp deny list is too long for one jump');
    insns.push({ code: t.code, jt, jf: 0, k: t.k });
  });
  insns.push({ code: BPF_RET_K, jt: 0, jf: 0, k: RET_ALLOW }, { code: BPF_RET_K, jt: 0, jf: 0, k: RET_ERRNO | EPERM });
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    out.writeUInt16LE(insn.code, i * 8);
    out.writeUInt8(insn.jt, i * 8 + 2);
    out.writeUInt8(insn.jf, i * 8 + 3);
    out.writeUInt32LE(insn.k >>> 0, i * 8 + 4);
  });
  return out;
}

/** The filter for the machine this process runs on; null on an architecture the table does not cover. */
export function hostSeccompProgram(nodeArch: string): Buffer | null {
  if (nodeArch === 'x64' || nodeArch === 'arm64') return seccompProgram(nodeArch);
  return null;
}
