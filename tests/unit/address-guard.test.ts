import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  classifyAddress,
  hostTargetAllowed,
  outboundUrlRefusal,
  type AddressClass,
} from '../../adapters/egress/address-guard.js';

/**
 * The outbound address guard over every way an IPv6 address can carry an IPv4 one, and every spelling of an IPv4
 * address a URL accepts (docs/design.md "Outbound addresses"). The same functions decide at save and at dial.
 */
const hex = (p: number[]) => `${((p[0]! << 8) | p[1]!).toString(16)}:${((p[2]! << 8) | p[3]!).toString(16)}`;
const inv = (p: number[]) => p.map((x) => x ^ 0xff);

/** Every IPv6 form that delivers to the IPv4 address `p`. */
function embeddings(p: number[]): string[] {
  const dotted = p.join('.');
  return [
    `::ffff:${dotted}`,
    `::ffff:${hex(p)}`,
    `0:0:0:0:0:ffff:${hex(p)}`, // mapped
    `::ffff:0:${dotted}`,
    `::ffff:0:${hex(p)}`, // SIIT translated
    `::${hex(p)}`, // compatible
    `64:ff9b::${dotted}`,
    `64:ff9b::${hex(p)}`, // NAT64 well-known
    `2002:${hex(p)}::1`,
    `2002:${hex(p)}:1234:5678:9abc:def0:1234`, // 6to4
    `2001:0:${hex(p)}:0:0:${hex(inv([8, 8, 8, 8]))}`, // Teredo server
    `2001:0:808:808:8000:0:${hex(inv(p))}`, // Teredo client (inverted)
  ];
}

describe('address guard: classification', () => {
  it('judges every IPv6 form that embeds an IPv4 address by that address', () => {
    const cases: Array<[number[], AddressClass]> = [
      [[127, 0, 0, 1], 'never'],
      [[169, 254, 169, 254], 'never'],
      [[0, 0, 0, 0], 'never'],
      [[100, 100, 100, 200], 'never'],
      [[224, 0, 0, 1], 'never'],
      [[10, 1, 2, 3], 'private'],
      [[192, 168, 1, 1], 'private'],
      [[172, 16, 0, 1], 'private'],
      [[100, 64, 0, 1], 'private'],
    ];
    for (const [p, expected] of cases) {
      for (const form of embeddings(p)) assert.equal(classifyAddress(form), expected, `${form} carries ${p.join('.')}`);
    }
    for (const form of embeddings([8, 8, 8, 8]).filter((f) => !f.startsWith('2001:0:')))
      assert.equal(classifyAddress(form), 'public', form);
  });

  it('never lets the local-use NAT64 prefix, cloud metadata on IPv6 or special ranges through', () => {
    for (const a of [
      '64:ff9b:1::a9fe:a9fe',
      '64:ff9b:1:a9fe:a900::',
      '64:ff9b:1:ffff::1',
      'fd00:ec2::254',
      'fd20:ce::254',
      '::',
      'fe80::1',
      'ff02::1',
      '0.1.2.3',
      '255.255.255.255',
    ]) {
      assert.equal(classifyAddress(a), 'never', a);
      assert.equal(hostTargetAllowed(a, true), false, `${a} even with private targets allowed`);
    }
    assert.equal(classifyAddress('fd00:ec2::253'), 'private', 'only the metadata address itself, not its neighbours');
    assert.equal(classifyAddress('2001:db8::1'), 'public');
  });

  it('classifies any embedded address like the address itself (property)', () => {
    fc.assert(
      fc.property(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)), (p) => {
        const plain = classifyAddress(p.join('.'));
        // Teredo also carries a server address (8.8.8.8 here, public), so its class is the client's.
        return embeddings(p).every((f) => classifyAddress(f) === plain);
      }),
      { seed: 808, numRuns: 500 },
    );
  });
});

describe('address guard: the host rule', () => {
  it('allows loopback and private ranges only with the operator switch, link-local and metadata never', () => {
    for (const a of [
      '127.0.0.1',
      '127.9.9.9',
      '::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '10.0.0.1',
      'fd12::1',
      '::ffff:192.168.0.1',
      '2002:c0a8:101::1',
    ]) {
      assert.equal(hostTargetAllowed(a, false), false, a);
      assert.equal(hostTargetAllowed(a, true), true, a);
    }
    for (const a of [
      '169.254.169.254',
      '::ffff:169.254.169.254',
      '::ffff:0:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      '2002:a9fe:a9fe::',
      '0.0.0.0',
      '64:ff9b::7f00:1',
    ]) {
      assert.equal(hostTargetAllowed(a, true), false, a);
    }
    for (const a of ['8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])
      assert.equal(hostTargetAllowed(a, false), true, a);
  });

  it('refuses URLs naming loopback, private or metadata addresses in any spelling, before DNS', () => {
    const metadata = [
      'http://169.254.169.254/latest/meta-data/',
      'http://169.254.169.254.:80/',
      'http://2852039166/',
      'http://0xa9fea9fe/',
      'http://0xA9.0xFE.0xA9.0xFE/',
      'http://0251.0376.0251.0376/',
      'http://025177524776/',
      'http://169.16689662/',
      'http://169.254.43518/',
      'http://[::ffff:169.254.169.254]/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://[::ffff:0:a9fe:a9fe]/',
      'http://[64:ff9b::169.254.169.254]/',
      'http://[64:ff9b:1::a9fe:a9fe]/',
      'http://[2002:a9fe:a9fe::1]/',
      'http://[fd00:ec2::254]/',
      'http://[fe80::1]/',
      'https://0/',
      'http://0.0.0.0:8080/',
    ];
    for (const url of metadata) {
      for (const allow of [false, true])
        assert.notEqual(outboundUrlRefusal(url, allow), null, `${url} (allow private ${allow})`);
    }
    const loopback = [
      'http://127.0.0.1:3000/mcp',
      'http://127.1/',
      'http://2130706433/',
      'http://0x7f000001/',
      'http://0177.0.0.1/',
      'http://017700000001/',
      'http://[::1]/',
      'http://[::ffff:7f00:1]/',
      'http://localhost:8080/',
      'http://LOCALHOST./',
      'http://a.b.localhost/',
      'http://10.1.2.3/',
      'http://[fd12::1]/',
    ];
    for (const url of loopback) {
      assert.match(outboundUrlRefusal(url, false) ?? '', /SVC_ALLOW_PRIVATE_NETWORK_TARGETS=true/, url);
      assert.equal(outboundUrlRefusal(url, true), null, `${url} with private targets allowed`);
    }
    for (const url of ['https://mcp.example.com/sse', 'http://8.8.8.8/', 'http://[2606:4700:4700::1111]/', 'not a url'])
      assert.equal(outboundUrlRefusal(url, false), null, url);
  });
});
