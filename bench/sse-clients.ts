import http from 'node:http';
// A separate process of SSE clients for the fan-out benchmark, so client parsing does not share the server's CPU.
// argv: url cookie subscribers expected. Prints "ready" once all are connected, then one JSON line of receive times.
const [url, cookie, subscribersArg, expectedArg] = process.argv.slice(2) as [string, string, string, string];
const subscribers = Number(subscribersArg);
const expected = Number(expectedArg);
const now = () => performance.timeOrigin + performance.now();
const received: Array<[number, number]> = [];
let connected = 0;
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
const readers = Array.from(
  { length: subscribers },
  () =>
    new Promise<void>((resolve) => {
      http.get(url, { headers: { cookie }, agent }, (res) => {
        if (++connected === subscribers) process.stdout.write('ready\n');
        res.setEncoding('utf8');
        let buf = '';
        let seen = 0;
        res.on('data', (chunk: string) => {
          const at = now();
          buf += chunk;
          let cut: number;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const id = /^id: (\d+)$/m.exec(buf.slice(0, cut))?.[1];
            buf = buf.slice(cut + 2);
            if (id) {
              received.push([Number(id), at]);
              if (++seen === expected) {
                res.destroy();
                resolve();
              }
            }
          }
        });
        res.on('close', () => resolve());
      });
    }),
);
await Promise.race([Promise.all(readers), new Promise((r) => setTimeout(r, 60_000))]);
// Exit only once the line is flushed: writes to a pipe are asynchronous.
process.stdout.write(JSON.stringify(received) + '\n', () => process.exit(0));
