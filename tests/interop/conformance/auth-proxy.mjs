// A pass-through HTTP proxy that adds `Authorization: Bearer <key>` to every request, so the
// MCP conformance suite (which has no option for credentials) can test an authenticated
// server. Everything else, the Host and Origin headers included, is forwarded unchanged, so
// the server's DNS-rebinding checks still see what the suite sent.
//
// usage: node auth-proxy.mjs <listen-port> <target-base-url> <key>

import http from "node:http";

const [port, target, key] = process.argv.slice(2);
const upstream = new URL(target);

const handler = (req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${key}` };
  const up = http.request(
    { hostname: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers },
    (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    },
  );
  up.on("error", (e) => {
    if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
    res.end(`proxy error: ${e.message}`);
  });
  res.on("close", () => up.destroy());
  req.pipe(up);
};

// Loopback only (the proxy holds a key): IPv4, and IPv6 when the machine has it, since
// `localhost` may resolve to either.
http
  .createServer(handler)
  .listen(Number(port), "127.0.0.1", () => console.log(`auth proxy on ${port} -> ${target}`));
http
  .createServer(handler)
  .on("error", () => {})
  .listen(Number(port), "::1");
