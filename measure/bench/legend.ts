/** What every column and row of `npm run bench` means, printed under the tables. */
export const LEGEND = `How to read it
  Every row runs once per round, rows interleaved, so a noisy neighbour hits all rows alike;
  each figure is the median over the rounds, [min–max] its range.
  CPU-µs/req           utime+stime of the measured process (/proc/<pid>/stat, all threads) over the
                       row ÷ responses: the gateway in gateway rows, the http-proxy process in peer
                       rows; "—" in the direct row (see the service column).
  service CPU-µs/req   the same for the resource service (PostgreSQL and Redis not included).
  busy                 CPU time ÷ wall time of the measured process: near 100% means it was the
                       bottleneck on its CPU. Well below, something else limited the row (CPU 1: load
                       generator + service + unpinned PostgreSQL and Redis); CPU-µs per request is
                       the figure to compare.
  peak RSS MiB         VmHWM of the measured process at the end of the run: the peak since it started.
  answered/unexpected  responses with the status the row expects, over all rounds / any other status,
                       connection error or timeout (req/s and latencies count every response).

  direct service       GET /v1/orders/{id} over plain HTTP with the signed identity assertion the
                       gateway would add: the service verifies it, reads PostgreSQL, answers 200.
  gateway, cache miss  the full pipeline as shipped (gateway/main.ts): HTTPS, JWT (verified once, then
                       from the verified-token cache), Redis fixed-window limit (limit 10^9, never
                       refuses), cache lookup, proxy to the service over keep-alive with a signed
                       assertion, audit record to a file, request log line, stage timing. The request
                       carries Cache-Control: no-store: every request is a real miss that goes upstream.
  baseline build       only with BENCH_BASELINE=<another checkout, built>: the cache-miss and cache-hit rows
                       through that checkout's gateway, interleaved with this one's (a change's before and
                       after).
  gateway, 2 replicas  the cache-miss row through a gateway whose /v1 has two targets (routes[].upstreams):
                       two service processes on one database, weighted least-outstanding balancing;
                       its service column counts the first process only (about half the requests).
  gateway, cache hit   the same pipeline, answered from the cache (Portico-Cache-Control: max-age=30,
                       per customer) without an upstream call.
  gateway, HTTP/2 cache hit the cache-hit row over HTTP/2 (ALPN h2), driven by measure/bench/load-h2.ts
                       (node:http2; autocannon speaks HTTP/1.1 only): the same 32 requests in flight as
                       4 connections of 8 streams each.
  gateway, 304 at edge the same, with If-None-Match of the current ETag: 304 from the fresh entry.
  http-proxy (peer)    http-proxy 1.18.1 behind node:https with the same certificate and a keep-alive
                       agent upstream: no auth, no limits, no cache, no audit, no request log.
  ladder               one gateway process per rung (measure/bench/ladder.ts), built by the product's
                       buildGateway with the later stages left out, all on one static upstream that
                       answers a fixed order-sized JSON body; "step" is the rung's median minus the
                       rung before, the price of what it adds. Rung 9 is rung 8 with the hop to the
                       upstream over mutual TLS (the default to the service; certificates from the
                       bench dir's development CA): its step is the price of the internal TLS hop.
                       Rung 10 is rung 9 exporting a span per request over OTLP/HTTP JSON (batched,
                       to the plain static upstream as a local sink): its step is the price of export.
                       Rungs 11 and 12 are variants of rung 3, their step taken from rung 3's figure.
                       Rung 11: an opaque token (auth.introspection), introspected once at a stub
                       endpoint in the rung's process, then its cached answer by the token's digest.
                       Rung 12: a DPoP-bound token (cnf.jkt) with a new ES256 proof per request, made by
                       the load generator as it sends (measure/bench/dpop-proofs.ts; a proof used twice
                       is refused): the token from the cache, the proof's signature and claims, the
                       failed-auth count and refund (a proof is a new credential) and the proof's
                       SET NX on Redis (what makes a replay fail at every replica).
  TLS                  autocannon 9 forces rejectUnauthorized: false; each row first sends one request
                       with the certificate verified against the bench CA (the probe).`;
