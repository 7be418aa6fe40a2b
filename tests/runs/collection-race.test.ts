import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { finishedRun, serverWithFakeModel, type RunnerServer } from '../api/harness.js';

/**
 * The attack of a member on a default install (docs/security.md, "Reading back from sandboxes"): a job's stdio MCP
 * server, and a process the agent leaves in the background, keep exchanging regular files in /svc/outputs with links
 * to the data directory's root-only files while the run ends. The run's artifacts, as the API serves them, must hold
 * none of those files. On both backends: on bwrap the MCP server is what still runs at the end (a command's
 * background processes die with it), on docker the agent's background process (the `mcp` user cannot write the
 * outputs there).
 */

/**
 * `perl -e RACER DIR TARGET PREFIX PAIRS [serve]`: makes PAIRS regular files and as many links to TARGET in DIR, and
 * forks a child that exchanges each file with its link (renameat2 RENAME_EXCHANGE) forever. With `serve` it then
 * answers MCP's initialize and tools/list on stdio, so the run connects to it and it lives as long as the run. Perl,
 * because it is in every Debian root (perl-base), and an MCP server's arguments are text.
 */
const racer = String.raw`
my($d,$t,$p,$n,$serve)=@ARGV;my $nr=(qx(uname -m)=~/aarch64/)?276:316;
if(chdir $d){for(1..$n){if(open(my $f,'>',"$p$_")){print $f "plain\n";close $f}symlink($t,"$p-link$_")}
if(!fork){close STDIN;open(STDOUT,'>','/dev/null');while(1){for(1..$n){syscall($nr,-100,"$p$_",-100,"$p-link$_",2)}}}}
exit 0 unless $serve;$|=1;
while(my $l=<STDIN>){next unless $l=~/"id"\s*:\s*("[^"]*"|\d+)/;my $id=$1;
if($l=~/"method"\s*:\s*"initialize"/){my($v)=$l=~/"protocolVersion"\s*:\s*"([^"]+)"/;print qq({"jsonrpc":"2.0","id":$id,"result":{"protocolVersion":"$v","capabilities":{"tools":{}},"serverInfo":{"name":"racer","version":"1.0.0"}}}\n)}
elsif($l=~/"method"\s*:\s*"tools\/list"/){print qq({"jsonrpc":"2.0","id":$id,"result":{"tools":[]}}\n)}
else{print qq({"jsonrpc":"2.0","id":$id,"error":{"code":-32601,"message":"no such method"}}\n)}}
`;

function collectionRace(backend: string, server: RunnerServer): void {
  describe(`collection against a racing sandbox, through the API (${backend})`, () => {
    it("a stdio MCP server and a background process swapping outputs for links to the data directory's files never get them into the artifacts", async () => {
      const { t, api, providerId } = server;
      const marker = `svc-marker-${randomBytes(16).toString('hex')}`;
      const markerFile = join(t.dataDir, 'root-only.txt');
      writeFileSync(markerFile, `${marker}\n`, { mode: 0o600 });
      const masterKey = readFileSync(join(t.dataDir, 'master.key'), 'utf8').trim();
      assert.ok(masterKey.length >= 32, 'the data directory has its master key');

      const mcp = await api.post('/api/mcp-servers', {
        name: `racer-${randomBytes(3).toString('hex')}`,
        transport: 'stdio',
        command: 'perl',
        args: ['-e', racer, '/svc/outputs', markerFile, 'm', '40', 'serve'],
      });
      assert.equal(mcp.status, 201, mcp.text);
      const job = await api.post('/api/jobs', {
        name: `racing ${Math.random()}`,
        instruction: 'x',
        selfImprove: false,
      });
      assert.equal(job.status, 201, job.text);
      const granted = await api.request('PUT', `/api/jobs/${job.body.id}/mcp-servers`, [
        { serverId: mcp.body.id, allowedTools: null },
      ]);
      assert.equal(granted.status, 200, granted.text);
      const script = [
        { toolCalls: [{ name: 'write_file', args: { path: '/workspace/racer.pl', content: racer } }] },
        // On docker a process left in the background outlives its command; on bwrap the MCP server is the one still running.
        {
          toolCalls: [
            {
              name: 'bash',
              args: {
                command: `setsid perl /workspace/racer.pl /svc/outputs '${join(t.dataDir, 'master.key')}' a 40 </dev/null >/dev/null 2>&1 & sleep 1; ls /svc/outputs | wc -l`,
              },
            },
          ],
        },
        { toolCalls: [{ name: 'finish', args: { status: 'success', summary: 'done' } }] },
      ];
      assert.equal(
        (await api.post(`/api/providers/${providerId}/script`, { responses: script, reset: true })).status,
        200,
      );
      const runId = (await api.post(`/api/jobs/${job.body.id}/runs`, {})).body.runId as string;
      const { run, events } = await finishedRun(api, runId);
      assert.equal(run.status, 'succeeded', run.error);
      const connected = events.find(
        (e) => e.type === 'mcp.call' && e.payload.ok === true && String(e.payload.message).includes('racer'),
      );
      assert.ok(
        connected,
        `the racing MCP server ran during the run: ${JSON.stringify(events.filter((e) => e.type === 'mcp.call').map((e) => e.payload))}`,
      );

      const listed = await api.get<Array<{ name: string; size: number }>>(`/api/runs/${runId}/artifacts`);
      assert.equal(listed.status, 200, listed.text);
      let plain = 0;
      for (const a of listed.body) {
        const got = await api.get(`/api/runs/${runId}/artifact?path=${encodeURIComponent(a.name)}`);
        assert.equal(got.status, 200, got.text);
        assert.ok(!got.text.includes(marker), `artifact ${a.name} holds the root-only file of the data directory`);
        assert.ok(!got.text.includes(masterKey), `artifact ${a.name} holds the master key`);
        if (got.text === 'plain\n') plain++;
      }
      console.log(
        `[collection race ${backend}] ${listed.body.length} artifacts collected, ${plain} of them the racers' plain files, no host file among them`,
      );
      assert.ok(
        plain > 0,
        `the racers ran in the sandbox and their own files were collected: ${JSON.stringify(listed.body.map((a) => a.name))}`,
      );
      const everything = JSON.stringify({ run, events });
      assert.ok(
        !everything.includes(marker) && !everything.includes(masterKey),
        'no host file reached the run or its timeline',
      );
    });
  });
}

collectionRace('bwrap', serverWithFakeModel({ SVC_SANDBOX: 'bwrap' }));
const host = process.env.SVC_DOCKER_HOST;
if (host) collectionRace('docker', serverWithFakeModel({ SVC_SANDBOX: 'docker', SVC_DOCKER_HOST: host }));
else {
  console.log(
    '[collection race] docker backend SKIPPED: SVC_DOCKER_HOST is not set (npm test starts dockerd when docker.io is installed)',
  );
  it(
    'collection against a racing sandbox (docker)',
    { skip: 'SVC_DOCKER_HOST is not set: install docker.io (scripts/prepare-host.sh) so npm test can start dockerd' },
    () => {},
  );
}
