module edgebench/tools/probe

go 1.22
