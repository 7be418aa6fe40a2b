import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
} from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * The instance master key: from SVC_MASTER_KEY, else a key file generated once in the data directory (mode 0600).
 * Purpose-specific keys are derived with HKDF so a leak of one (say the cookie key) says nothing about another.
 */
export class Keys {
  private readonly derived = new Map<string, Buffer>();

  constructor(private readonly master: Buffer) {
    if (master.length < 32) throw new Error('the master key must be at least 32 bytes');
  }

  static load(dataDir: string, envKey: string | undefined): Keys {
    if (envKey && envKey.trim() !== '') {
      const raw = envKey.trim();
      const decoded = /^[0-9a-f]{64,}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
      // A short passphrase is stretched rather than refused: operators paste whatever their secret store holds.
      return new Keys(decoded.length >= 32 ? decoded : createHash('sha256').update(raw).digest());
    }
    const file = `${dataDir}/master.key`;
    if (!existsSync(file)) {
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    }
    chmodSync(file, 0o600);
    return new Keys(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'));
  }

  key(purpose: string): Buffer {
    let k = this.derived.get(purpose);
    if (!k) {
      k = Buffer.from(hkdfSync('sha256', this.master, Buffer.alloc(0), `svc:${purpose}`, 32));
      this.derived.set(purpose, k);
    }
    return k;
  }

  sign(purpose: string, data: string): string {
    return createHmac('sha256', this.key(purpose)).update(data).digest('base64url');
  }

  verify(purpose: string, data: string, signature: string): boolean {
    const expected = Buffer.from(this.sign(purpose, data));
    const given = Buffer.from(signature);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** AES-256-GCM; the output carries a key id so the key can be rotated later. */
  encrypt(purpose: string, plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key(`enc:${purpose}`), iv);
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(
      '.',
    );
  }

  decrypt(purpose: string, sealed: string): string {
    const [kid, iv, tag, body] = sealed.split('.');
    if (kid !== 'v1' || !iv || !tag || body === undefined) throw new Error('unknown ciphertext format');
    const decipher = createDecipheriv('aes-256-gcm', this.key(`enc:${purpose}`), Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Tokens are stored as SHA-256 hashes: they carry 256 bits of entropy, so a slow hash would add nothing. */
const recentHashes = new Map<string, string>();

/**
 * SHA-256 of a token, as stored. Scripts send the same token on every call, so the last few hundred hashes are kept
 * in memory (the process holds those tokens in its request buffers anyway).
 */
export function hashToken(token: string): string {
  const known = recentHashes.get(token);
  if (known !== undefined) return known;
  const hash = createHash('sha256').update(token.trim()).digest('hex');
  if (recentHashes.size >= 500) recentHashes.delete(recentHashes.keys().next().value!);
  recentHashes.set(token, hash);
  return hash;
}
