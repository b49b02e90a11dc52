module edgebench/tools/openloop

go 1.22
