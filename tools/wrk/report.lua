-- edgebench's wrk reporter: after the run, print one line holding everything wrk counted as
-- JSON (wrk's text summary keeps only mean/stdev and rounds them). Only done() is defined, so
-- wrk keeps its fast path for requests and responses. Latencies are in microseconds.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write("EDGEBENCH_WRK_JSON ")
  io.write(string.format(
    '{"requests":%d,"duration_us":%d,"bytes":%d,"requests_per_second":%.6f,' ..
    '"latency_us":{"mean":%.3f,"stdev":%.3f,"min":%d,"max":%d,' ..
    '"p50":%d,"p90":%d,"p99":%d,"p99_9":%d},' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    summary.requests / (summary.duration / 1e6),
    latency.mean, latency.stdev, latency.min, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency:percentile(99.9),
    e.connect, e.read, e.write, e.status, e.timeout))
end
