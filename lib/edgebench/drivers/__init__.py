"""What a user's command runs, on top of the experiments: `make figures` and `make replot`
(figures, with plan's estimates and history), `make figures FLEET=...` (fleet), `make lab` (lab),
`make report` (report) and `make compare` (compare). Each is a `python -m edgebench.drivers.<name>`."""
