module edgebench/tools/forward

go 1.22
