module edgebench/apps/home-automation

go 1.22
