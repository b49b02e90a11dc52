"""The measuring tools edgebench drives on a target and the parsers of what they print: load
generators (load: wrk, ab, redis-benchmark, open-loop tools), fio, IOZone, NPB, STREAM, sysbench,
perf's software counters, power meters (energy) and the device's own sensors and health (sensors,
health), and the sanity rules that flag results physics rules out."""
