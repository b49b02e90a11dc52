# shellcheck shell=sh
# Runs a batch launch ("$@") and, beside it, saves QEMU's state once QEMU appears: a batch VM
# may exit before anyone could ask. The watcher does not carry the tag, so it never finds itself.
# Sent by edgebench.runtimes.qemu (_WATCH_QEMU) as the text of one `sh -c`.
tag=$1; out=$2; shift 2
(
  while :; do
    for e in /proc/[0-9]*/environ; do
      p=${e#/proc/}; p=${p%/environ}
      case "$(cat "/proc/$p/comm" 2>/dev/null)" in qemu*) ;; *) continue ;; esac
      tr '\0' '\n' <"$e" 2>/dev/null | grep -qx "$tag" || continue
      sh -c "$QEMU_STATE" qemu-state "$p" >"$out.tmp" 2>/dev/null && mv "$out.tmp" "$out"; exit 0
    done
    kill -0 $$ 2>/dev/null || exit 0
    sleep 0.02
  done
) </dev/null >/dev/null 2>&1 &
exec "$@"
