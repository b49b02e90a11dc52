module edgebench/tools/steps

go 1.22
