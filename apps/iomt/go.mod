module edgebench/apps/iomt

go 1.22
