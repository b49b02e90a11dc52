module edgebench/apps/go-http

go 1.22
