'use strict';
// edgebench reference service, Node.js twin of apps/go-http. Responses are
// byte-for-byte identical to the Go version so that the two runtimes can be
// compared on the same workload. Standard library only.
//
//   GET /io             200 text/plain "ok\n"
//   GET /compute?iter=N 200 application/json {"iter":N,"sha256":"<hex>"}\n
//                       N defaults to 100, must be an integer in 1..10000000
//   anything else       404

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const os = require('os');
const { performance } = require('perf_hooks');

const DEFAULT_ITER = 100; // value used in the paper
const MAX_ITER = 10000000;
const TEXT_PLAIN = 'text/plain; charset=utf-8';
const APP_JSON = 'application/json';

function fail(msg) {
  process.stderr.write(`node-http: ${msg}\n`);
  process.exit(64);
}

// Same precedence as the Go app: $PORT, then --port / -port overrides it.
function parsePort() {
  let raw = process.env.PORT || '8080';
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--?port(?:=(.*))?$/.exec(a);
    if (!m) fail(`unknown argument ${a}`);
    if (m[1] !== undefined) raw = m[1];
    else if (i + 1 < argv.length) raw = argv[++i];
    else fail('--port needs a value');
  }
  if (!/^[0-9]+$/.test(raw) || Number(raw) > 65535) fail(`invalid port ${JSON.stringify(raw)}`);
  return Number(raw);
}

// Fixed 64-byte payload (bytes 0..63), shared with the Go app.
const PAYLOAD = Buffer.from(Array.from({ length: 64 }, (_, i) => i));

// Exactly n SHA-256 computations: one over PAYLOAD, then n-1 over the
// previous 32-byte digest.
function compute(n) {
  let h = crypto.createHash('sha256').update(PAYLOAD).digest();
  for (let i = 1; i < n; i++) h = crypto.createHash('sha256').update(h).digest();
  return h.toString('hex');
}

// Plain decimal digits only (no sign, spaces, exponent) so that Node and Go
// reject exactly the same inputs. Returns null when invalid.
function parseIter(params) {
  if (!params.has('iter')) return DEFAULT_ITER;
  const s = params.get('iter');
  if (!/^[0-9]+$/.test(s)) return null;
  const n = Number(s);
  return n >= 1 && n <= MAX_ITER ? n : null;
}

function reply(res, status, ctype, body) {
  res.writeHead(status, { 'Content-Type': ctype, 'Content-Length': Buffer.byteLength(body) });
  res.end(body); // Node drops the body itself for HEAD
}

function handle(req, res) {
  if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 404, TEXT_PLAIN, 'not found\n');
  // Split by hand rather than `new URL(req.url, base)`, which would treat a
  // request target like "//x/io" as a host.
  const q = req.url.indexOf('?');
  const path = q < 0 ? req.url : req.url.slice(0, q);
  switch (path) {
    case '/io':
      return reply(res, 200, TEXT_PLAIN, 'ok\n');
    case '/compute': {
      const n = parseIter(new URLSearchParams(q < 0 ? '' : req.url.slice(q + 1)));
      if (n === null) return reply(res, 400, TEXT_PLAIN, 'iter must be an integer in 1..10000000\n');
      return reply(res, 200, APP_JSON, `{"iter":${n},"sha256":"${compute(n)}"}\n`);
    }
    default:
      return reply(res, 404, TEXT_PLAIN, 'not found\n');
  }
}

// Exit immediately rather than draining; without handlers PID 1 in a
// container would ignore SIGTERM entirely.
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));

const server = http.createServer(handle);
server.on('error', (err) => {
  process.stderr.write(`node-http: ${err.message}\n`);
  process.exit(1);
});
server.listen(parsePort(), '0.0.0.0', () => {
  // Wall clock first, before any formatting. timeOrigin + now() is the
  // realtime clock in ms with sub-ms precision; keep microseconds and print
  // nanoseconds as an integer to match the Go app's unix_ns.
  const unixNs = BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
  const line =
    `{"event":"listening","app":"node-http","unix_ns":${unixNs},` +
    `"port":${server.address().port},"pid":${process.pid},` +
    `"gomaxprocs":null,"num_cpu":${os.availableParallelism()}}\n`;
  // Synchronous write so the line is out (file or pipe) before any request
  // is handled; process.stdout can be async for pipes.
  fs.writeSync(1, line);
});
