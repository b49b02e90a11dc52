"""Setting a target up: what each part needs (parts, needs), installing it with the target's
package manager (apt) and starting its daemons (provision: `make provision`, and the first step
of `make figures` and `make test`)."""
